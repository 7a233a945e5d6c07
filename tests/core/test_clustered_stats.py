"""Clustered standard errors, paired tests, Holm and the detectable difference: the formulas
against hand computations and scipy, and `run`/`compare --cluster` through the CLI against a real
SQLite and PostgreSQL database."""

from __future__ import annotations

import json
import math
import statistics
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from testutil import write
from evalyard.cli import cli
from evalyard.junit import REGRESSION_CASE
from evalyard.analysis.stats import clustered_se, detectable_difference, holm, paired_test, t_quantile, t_two_sided_p

scipy_stats = pytest.importorskip("scipy.stats")

APP = None


@pytest.fixture(autouse=True)
def _this_tests_app(scripted_plugin):
    global APP
    APP = scripted_plugin


def invoke(*args):
    return CliRunner().invoke(cli, list(args), obj=APP, catch_exceptions=False)


def cases_file(path, values, clusters):
    """Cases whose scripted score is ``values[i]``, in cluster ``clusters[i]`` (None: no field)."""
    lines = []
    for i, (value, cluster) in enumerate(zip(values, clusters)):
        meta = {"script": value, **({"passage": cluster} if cluster is not None else {})}
        lines.append(json.dumps({"id": f"c{i}", "candidate": "x", "metadata": meta}))
    return write(path, "\n".join(lines) + "\n")


# Six passages of four questions; within a passage every answer scores the same (perfect correlation).
PASSAGE_VALUES = [0.9, 0.2, 0.6, 0.8, 0.1, 0.5]
CLUSTERS = [f"p{p}" for p in range(6) for _ in range(4)]
VALUES = [PASSAGE_VALUES[p] for p in range(6) for _ in range(4)]


def test_perfectly_correlated_clusters_give_the_standard_error_of_the_cluster_means():
    mean, se, clusters = clustered_se([(4, 4 * v) for v in PASSAGE_VALUES])
    assert clusters == 6 and mean == pytest.approx(statistics.mean(PASSAGE_VALUES))
    assert se == pytest.approx(statistics.stdev(PASSAGE_VALUES) / math.sqrt(6))
    # ... about twice the naive SE of 24 "independent" cases here
    assert se > 1.9 * statistics.stdev(VALUES) / math.sqrt(24)


def test_singleton_clusters_give_the_naive_standard_error_up_to_its_factor():
    values = [0.3, 0.9, 0.4, 0.7, 0.1]
    _, se, _ = clustered_se([(1, v) for v in values])
    assert se == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)))
    assert clustered_se([(3, 1.0)]) is None  # one cluster has no variance to speak of


@pytest.mark.parametrize("t,df", [(2.0, 9), (0.4, 1), (3.3, 120), (1.96, 50_000), (7.5, 3), (0.0, 4), (2.5, 2.5)])
def test_t_p_values_and_quantiles_match_scipy(t, df):
    assert t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(abs(t), df), rel=1e-9, abs=1e-15)
    assert t_quantile(0.95, df) == pytest.approx(scipy_stats.t.ppf(0.975, df), rel=1e-9)


def test_paired_t_matches_scipy_ttest_rel():
    base = [0.2, 0.5, 0.9, 0.4, 0.4, 0.8, 0.1, 0.7]
    new = [0.3, 0.6, 0.8, 0.7, 0.5, 0.9, 0.4, 0.6]
    deltas = [n - b for b, n in zip(base, new)]
    mine = paired_test(statistics.mean(deltas), statistics.stdev(deltas) / math.sqrt(8), 7)
    theirs = scipy_stats.ttest_rel(new, base)
    assert mine["t"] == pytest.approx(theirs.statistic) and mine["p"] == pytest.approx(theirs.pvalue)
    assert paired_test(0.0, 0.0, 3)["p"] == 1.0 and paired_test(0.1, 0.0, 3)["p"] == 0.0


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 -> 3*0.01, 2*0.03, max(0.06, 1*0.04)
    assert holm({"a": 0.01, "b": 0.04, "c": 0.03}) == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})
    assert holm({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}
    assert holm({}) == {}


def test_detectable_difference_is_2_8_standard_errors():
    # z_0.975 + z_0.8 = 1.959964 + 0.841621
    assert detectable_difference(0.1) == pytest.approx(0.2801585, rel=1e-6)
    assert detectable_difference(0.1, power=0.5) == pytest.approx(0.1959964, rel=1e-6)


def test_run_cluster_in_the_database(db_url, tmp_path):
    path = cases_file(tmp_path / "c.jsonl", VALUES, CLUSTERS)
    result = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage", "--json", "--db", db_url)
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    c = data["scorers"]["scripted"]["clustered"]
    assert c["clusters"] == 6 and c["cases_with_field"] == 24
    se = statistics.stdev(PASSAGE_VALUES) / math.sqrt(6)
    assert c["se"] == pytest.approx(se) and c["mean"] == pytest.approx(statistics.mean(PASSAGE_VALUES))
    half = scipy_stats.t.ppf(0.975, 5) * se
    assert c["ci95"] == pytest.approx([c["mean"] - half, c["mean"] + half])
    assert c["naive_ci95"] == data["scorers"]["scripted"]["ci95"]
    assert c["design_effect"] == pytest.approx((se / (statistics.stdev(VALUES) / math.sqrt(24))) ** 2)
    shown = json.loads(invoke("runs", "show", data["run_id"], "--json", "--db", db_url).output)
    assert shown["scorers"]["scripted"]["clustered"] == c  # kept with the run
    assert "scripted: clustered by metadata.passage (6 clusters)" in invoke("runs", "show", data["run_id"],
                                                                             "--db", db_url).output
    text = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage", "--db", db_url).output
    assert f"scripted: clustered by metadata.passage (6 clusters): mean {c['mean']:.3f}" in text
    assert "(naive [" in text


def test_cases_without_the_field_are_clusters_of_their_own(tmp_path):
    values = [0.2, 0.4, 0.9, 0.3, 0.8, 0.5, 0.6]
    clusters = ["a", "a", "b", "b", "b", None, None]
    path = cases_file(tmp_path / "c.jsonl", values, clusters)
    data = json.loads(invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage", "--json").output)
    c = data["scorers"]["scripted"]["clustered"]
    mean = sum(values) / 7
    groups = [[0.2, 0.4], [0.9, 0.3, 0.8], [0.5], [0.6]]  # computed by hand: G = 4
    variance = 4 / 3 * sum((sum(g) - len(g) * mean) ** 2 for g in groups) / 7 ** 2
    assert c["clusters"] == 4 and c["cases_with_field"] == 5 and c["se"] == pytest.approx(math.sqrt(variance))


def test_bad_cluster_options_exit_2(tmp_path):
    path = cases_file(tmp_path / "c.jsonl", [0.1, 0.2, 0.3], [None, None, None])
    bad = invoke("run", str(path), "-s", "scripted", "--cluster", "passage")
    assert bad.exit_code == 2 and "--cluster 'passage': expected metadata.FIELD" in bad.output
    missing = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage")
    assert missing.exit_code == 2 and "no case of run" in missing.output and "metadata.passage" in missing.output
    # a key with a line break (a suite's `cluster:` the fuzzer wrote) is refused before the run, in one line
    broken = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage\n")
    assert broken.exit_code == 2 and len(broken.output.strip().splitlines()) == 1, broken.output
    assert "expected metadata.FIELD" in broken.output


def _two_runs(tmp_path, db_url, base_values, new_values, clusters):
    ids = []
    for name, values in (("base", base_values), ("new", new_values)):
        path = cases_file(tmp_path / f"{name}.jsonl", values, clusters)
        result = invoke("run", str(path), "-s", "scripted", "--json", "--db", db_url)
        ids.append(json.loads(result.output)["run_id"])
    return ids


def test_compare_clustered_beside_naive(db_url, tmp_path):
    gain = [0.1, -0.05, 0.2, 0.0, 0.15, -0.1]  # per passage, the same for its four questions
    new_values = [VALUES[i] + gain[i // 4] for i in range(24)]
    base_id, new_id = _two_runs(tmp_path, db_url, VALUES, new_values, CLUSTERS)
    result = invoke("compare", base_id, new_id, "--cluster", "metadata.passage", "--json", "--db", db_url)
    s = json.loads(result.output)["scorers"]["scripted"]
    deltas = [n - b for b, n in zip(VALUES, new_values)]
    naive = scipy_stats.ttest_rel(new_values, VALUES)
    assert s["naive_test"]["p"] == pytest.approx(naive.pvalue)
    # equal clusters, constant within: the clustered t test is the one-sample t test on cluster means
    clustered = scipy_stats.ttest_1samp(gain, 0.0)
    assert s["test"]["kind"] == "clustered t" and s["test"]["df"] == 5
    assert s["test"]["p"] == pytest.approx(clustered.pvalue)
    se = statistics.stdev(gain) / math.sqrt(6)
    assert s["clustered"]["se"] == pytest.approx(se)
    assert s["detectable"]["difference"] == pytest.approx(2.8015852 * se, rel=1e-6)
    assert s["naive_detectable"]["difference"] == pytest.approx(2.8015852 * statistics.stdev(deltas) / math.sqrt(24),
                                                                rel=1e-6)
    assert s["clustered"]["naive_ci95"] == s["ci95"]
    text = invoke("compare", base_id, new_id, "--cluster", "metadata.passage", "--db", db_url).output
    assert "95% CI naive" in text and "95% CI clustered" in text
    low, high = s["clustered"]["ci95"]
    assert f"[{low:+.3f}, {high:+.3f}]" in text
    assert "with n=24 in 6 clusters and this variance, differences below" in text


def test_compare_notes_several_scorers_and_holm(tmp_path):
    new_values = [v + 0.05 * (i % 3) for i, v in enumerate(VALUES)]
    ids = []
    for name, values in (("base", VALUES), ("new", new_values)):
        path = cases_file(tmp_path / f"{name}.jsonl", values, CLUSTERS)
        ids.append(json.loads(invoke("run", str(path), "-s", "scripted", "-s", "scripted_async", "--json").output)["run_id"])
    data = json.loads(invoke("compare", *ids, "--json").output)
    raw = {name: s["test"]["p"] for name, s in data["scorers"].items()}
    assert data["tests"] == 2 and {n: s["p_holm"] for n, s in data["scorers"].items()} == holm(raw)
    text = invoke("compare", *ids).output
    assert "2 scorers were compared" in text and "p Holm" in text


def test_compare_streams_past_the_bootstrap_limit(tmp_path, monkeypatch):
    base_values = [0.1 * (i % 7) for i in range(30)]
    new_values = [0.1 * ((i * 3) % 8) for i in range(30)]
    base_id, new_id = _two_runs(tmp_path, f"sqlite:///{tmp_path / 'c.db'}", base_values, new_values, [None] * 30)
    args = ("compare", base_id, new_id, "--json", "--top", "4", "--db", f"sqlite:///{tmp_path / 'c.db'}")
    kept = json.loads(invoke(*args).output)["scorers"]["scripted"]
    import evalyard.analysis.comparison

    monkeypatch.setattr(evalyard.analysis.comparison, "BOOTSTRAP_LIMIT", 5)
    streamed = json.loads(invoke(*args).output)["scorers"]["scripted"]
    deltas = [n - b for b, n in zip(base_values, new_values)]
    half = 1.959964 * statistics.stdev(deltas) / math.sqrt(30)
    assert streamed["ci95"] == pytest.approx([statistics.mean(deltas) - half, statistics.mean(deltas) + half])
    for key in ("paired_cases", "wins", "losses", "ties", "worst_cases"):
        assert streamed[key] == kept[key]
    for key in ("mean_delta", "base_mean", "new_mean"):
        assert streamed[key] == pytest.approx(kept[key])
    worst = sorted(range(30), key=lambda i: deltas[i])[:4]  # stable: the earlier case first on ties
    assert [w["case_id"] for w in kept["worst_cases"]] == [f"c{i}" for i in worst]


def test_the_clustered_example_is_what_the_docs_show(tmp_path, installed_plugins):
    from testutil import ROOT

    def invoke(*args):  # the application users get (exact_match is a plugin's)
        return CliRunner().invoke(cli, list(args), catch_exceptions=False)

    db = f"sqlite:///{tmp_path / 'ex.db'}"
    ids = []
    for name in ("clustered_base", "clustered_new"):
        result = invoke("run", str(ROOT / "examples" / f"{name}.jsonl"), "-s", "exact_match", "--cluster",
                        "metadata.passage", "--json", "--db", db)
        ids.append(json.loads(result.output)["run_id"])
    s = json.loads(invoke("compare", *ids, "--cluster", "metadata.passage", "--json", "--db", db).output)
    s = s["scorers"]["exact_match"]
    assert s["ci95"][0] > 0 and s["clustered"]["ci95"][0] < 0 < s["clustered"]["ci95"][1]  # naive: better; clustered: maybe
    assert not s["regressed"] and s["clustered"]["clusters"] == 40
    # the other way round, the naive interval calls it a regression and the clustered one does not
    backwards = ("compare", ids[1], ids[0], "--fail-on-regression", "--db", db)
    assert invoke(*backwards).exit_code == 1
    assert invoke(*backwards, "--cluster", "metadata.passage").exit_code == 0
    junit = tmp_path / "junit.xml"
    invoke(*backwards, "--cluster", "metadata.passage", "--junit", str(junit))
    check = [c for c in ET.parse(junit).iter("testcase") if c.get("name") == REGRESSION_CASE]
    assert check and check[0].find("failure") is None and "clustered by metadata.passage" in check[0].findtext("system-out")
    text = invoke("compare", *ids, "--cluster", "metadata.passage", "--top", "0", "--db", db).output
    readme = (ROOT / "docs" / "statistics.md").read_text(encoding="utf-8")  # its example, a transcript
    for line in text.splitlines()[1:]:
        if line.startswith(("exact_match", "p: ")):
            assert line.rstrip() in readme


def test_report_shows_the_kept_clusters_and_compares_with_them(tmp_path):
    from evalyard.report import build_report
    from evalyard.store import Store

    db = f"sqlite:///{tmp_path / 'r.db'}"
    gain = [0.1, -0.05, 0.2, 0.0, 0.15, -0.1]
    new_values = [VALUES[i] + gain[i // 4] for i in range(24)]
    ids = []
    for name, values in (("base", VALUES), ("new", new_values)):
        path = cases_file(tmp_path / f"{name}.jsonl", values, CLUSTERS)
        result = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.passage", "--json", "--db", db)
        ids.append(json.loads(result.output)["run_id"])
    compared = json.loads(invoke("compare", *ids, "--cluster", "metadata.passage", "--json", "--db", db).output)
    s = compared["scorers"]["scripted"]
    store = Store(db)
    html = build_report(store, ids[1], compare_ref=ids[0])
    large = build_report(store, ids[1], compare_ref=ids[0], large_above=10)  # the SQL-sums comparison
    store.close()
    low, high = s["clustered"]["ci95"]
    for page in (html, large):
        assert f"clustered by metadata.passage (6): [{low:+.3f}, {high:+.3f}]" in page
        assert f'{s["test"]["p"]:.3f} clustered <span class="muted">(naive {s["naive_test"]["p"]:.3f})' in page
        assert f'differences below {s["detectable"]["difference"]:.3f} are not detectable' in page
    kept = json.loads(invoke("runs", "show", ids[1], "--json", "--db", db).output)["scorers"]["scripted"]["clustered"]
    assert f'({kept["clusters"]} clusters): 95% interval [{kept["ci95"][0]:.3f}, {kept["ci95"][1]:.3f}]' in html


def test_a_suites_cluster_key(tmp_path):
    data = cases_file(tmp_path / "c.jsonl", VALUES, CLUSTERS)
    suite = write(tmp_path / "s.yaml", f"name: s\ndata: {data.name}\nscorers: [scripted]\ncluster: metadata.passage\n")
    c = json.loads(invoke("run", str(suite), "--json").output)["scorers"]["scripted"]["clustered"]
    assert c["field"] == "metadata.passage" and c["clusters"] == 6
    bad = write(tmp_path / "bad.yaml", f"name: s\ndata: {data.name}\nscorers: [scripted]\ncluster: passage\n")
    result = invoke("run", str(bad))
    assert result.exit_code == 2 and "bad.yaml:1: field 'cluster': expected metadata.FIELD" in result.output


def test_python_api_compare_with_clusters(tmp_path):
    import evalyard

    gain = [0.1, -0.05, 0.2, 0.0, 0.15, -0.1]
    new_values = [VALUES[i] + gain[i // 4] for i in range(24)]
    db = f"sqlite:///{tmp_path / 'api.db'}"
    base_id, new_id = _two_runs(tmp_path, db, VALUES, new_values, CLUSTERS)
    result = evalyard.compare(base_id, new_id, db=db, cluster="metadata.passage", app=APP)
    assert result["cluster"] == "metadata.passage"
    assert result["scorers"]["scripted"]["test"]["p"] == pytest.approx(scipy_stats.ttest_1samp(gain, 0.0).pvalue)


def test_a_nested_metadata_field(db_url, tmp_path):
    values = [0.2, 0.4, 0.9, 0.3, 0.8, 0.5]
    docs = ["a", "a", "b", "b", "b", None]
    lines = [json.dumps({"id": f"c{i}", "candidate": "x",
                         "metadata": {"script": v, **({"src": {"doc": d}} if d else {})}})
             for i, (v, d) in enumerate(zip(values, docs))]
    path = write(tmp_path / "c.jsonl", "\n".join(lines) + "\n")
    result = invoke("run", str(path), "-s", "scripted", "--cluster", "metadata.src.doc", "--json", "--db", db_url)
    c = json.loads(result.output)["scorers"]["scripted"]["clustered"]
    mean = sum(values) / 6
    groups = [[0.2, 0.4], [0.9, 0.3, 0.8], [0.5]]
    assert c["clusters"] == 3 and c["cases_with_field"] == 5
    assert c["se"] == pytest.approx(math.sqrt(3 / 2 * sum((sum(g) - len(g) * mean) ** 2 for g in groups)) / 6)


def test_clustered_se_is_the_sandwich_of_an_intercept_only_regression():
    rng = __import__("numpy").random.default_rng(3)
    np = __import__("numpy")
    sizes = rng.integers(1, 9, size=25)
    groups = [rng.normal(rng.normal(), 1.0, size=k) for k in sizes]
    y = np.concatenate(groups)
    residuals = y - y.mean()
    bread = 1 / len(y)  # (X'X)^-1 for X = a column of ones
    meat = sum(residuals[start:start + k].sum() ** 2 for start, k in zip(np.cumsum([0, *sizes[:-1]]), sizes))
    expected = math.sqrt(len(groups) / (len(groups) - 1) * bread * meat * bread)
    mean, se, clusters = clustered_se([(len(g), float(g.sum())) for g in groups])
    assert clusters == 25 and mean == pytest.approx(y.mean()) and se == pytest.approx(expected)


def test_under_no_difference_the_clustered_test_rejects_about_5_percent():
    """Simulated: 30 passages of 5 questions, a per-passage shift of the delta and no true
    difference. The naive paired t test calls far more than 5% of these comparisons significant;
    the clustered one stays near 5% (fixed seed: the same figures every time)."""
    np = __import__("numpy")
    rng = np.random.default_rng(20241122)
    naive = clustered = 0
    trials = 400
    for _ in range(trials):
        deltas = (rng.normal(0, 1, size=(30, 1)) + rng.normal(0, 0.7, size=(30, 5)))
        flat = deltas.ravel()
        naive += paired_test(flat.mean(), flat.std(ddof=1) / math.sqrt(flat.size), flat.size - 1)["p"] < 0.05
        mean, se, g = clustered_se([(5, float(row.sum())) for row in deltas])
        clustered += paired_test(mean, se, g - 1)["p"] < 0.05
    assert naive / trials > 0.2  # about 0.3 here: the design effect is about 3.7
    assert 0.02 <= clustered / trials <= 0.09
