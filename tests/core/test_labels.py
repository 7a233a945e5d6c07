"""People's labels (``evalyard.analysis.labels``, ``evalyard.figures.labels``): the migration, storing and
replacing, the sampler, the labelling server's write checks over real HTTP, and ``calibrate --run`` on stored labels."""

from __future__ import annotations

import http.client
import json
import threading

import pytest

from evalyard import Case, Suite


def _values_run(app, db, values, *, name="labelled", verdicts=None):
    """A run of the scripted scorer whose case i scores ``values[i]`` (threshold 0.5)."""
    cases = [Case(id=f"c{i:03d}", input=f"question {i}", candidate=f"answer {i}", reference=f"gold {i}",
                  context=[f"passage {i}"], metadata={"script": v, **({"verdict": verdicts[i]} if verdicts else {})})
             for i, v in enumerate(values)]
    result = app.evaluate(Suite(name=name, cases=cases), ["scripted"], db=db, name=name)
    return result.run_id


@pytest.fixture
def db(db_url):
    """SQLite, and a real PostgreSQL server (the sampler's arithmetic is SQL)."""
    return db_url


def test_an_existing_database_upgrades_to_the_labels_table(db_url):
    """A database at 0005 (the revision before labels) keeps its runs and gains the table."""
    from evalyard.figures.labels import save_label, stored_labels
    from evalyard.store import Store
    from testutil import database_at

    assert "labels" not in database_at(db_url, "0005_case_positions")

    store = Store(db_url)  # opening migrates
    try:
        suite_id = store.suite_id("s", "v1")
        run_id = store.create_run(suite_id, [Case(id="a", input="q", candidate="x")], name="r", scorers=[],
                                  versions={}, source="")
        save_label(store, run_id, "a", "yes", labeller="ann")
        assert stored_labels(store, run_id)["a"]["label"] == "yes"
    finally:
        store.close()


def test_relabelling_replaces_and_a_scorer_label_wins(scripted_plugin, db):
    from evalyard.errors import InputError
    from evalyard.figures.labels import labelled_cases, save_label, stored_labels

    run_id = _values_run(scripted_plugin, db, [0.9, 0.1, 0.6])
    store = scripted_plugin.open_store(db)
    save_label(store, run_id, "c002", "yes", labeller="ann")
    save_label(store, run_id, "c002", "no", scorer="scripted", labeller="bob")   # wins for scripted
    save_label(store, run_id, "c001", "no", labeller="ann")                      # any scorer
    save_label(store, run_id, "c000", "no", scorer="scripted", labeller="ann")
    save_label(store, run_id, "c000", "yes", scorer="scripted", labeller="bob")  # replaces ann's
    labels = stored_labels(store, run_id, "scripted")
    assert {k: (v["label"], v["labeller"]) for k, v in labels.items()} == {
        "c000": ("yes", "bob"), "c001": ("no", "ann"), "c002": ("no", "bob")}
    assert stored_labels(store, run_id, "other")["c002"]["label"] == "yes"  # the scorer-less label
    with pytest.raises(InputError, match="expected one of yes, no"):
        save_label(store, run_id, "c000", "maybe")

    cases, digest = labelled_cases(store, run_id, "scripted")
    assert [  # in suite order, whatever order they were labelled in
(c.id, c.metadata["human_label"], c.candidate, c.context) for c in cases] == [
        ("c000", "yes", "answer 0", ["passage 0"]), ("c001", "no", "answer 1", ["passage 1"]),
        ("c002", "no", "answer 2", ["passage 2"])]
    save_label(store, run_id, "c001", "yes")
    assert labelled_cases(store, run_id, "scripted")[1] != digest  # the hash follows the labels
    store.delete_run(run_id)  # its labels go with it (a label refers to its run)
    assert stored_labels(store, run_id) == {}


def test_first_pass_draws_evenly_from_the_bins_of_the_judges_value(scripted_plugin, db):
    """90 of 100 cases score near 1: a plain random sample would be nearly all of them; five
    bins give every range of the value its share."""
    from evalyard.analysis.labels import scorer_entry
    from evalyard.figures.labels import sample

    values = [0.95 + 0.0005 * i for i in range(90)] + [0.05, 0.1, 0.25, 0.3, 0.45, 0.5, 0.65, 0.7, 0.85, 0.0]
    run_id = _values_run(scripted_plugin, db, values)
    store = scripted_plugin.open_store(db)
    run = store.get_run(run_id)
    picks = sample(store, run, scorer_entry(run, None), 10, bins=5)
    by_id = {f"c{i:03d}": v for i, v in enumerate(values)}
    drawn = [by_id[p.case_id] for p in picks]
    assert len(picks) == 10 and len(set(p.case_id for p in picks)) == 10
    # the first five picks cover the five bins of [0, 0.9945], one each
    assert sorted(int(v // (0.9945 / 5)) if v < 0.9945 else 4 for v in drawn[:5]) == [0, 1, 2, 3, 4]
    assert sum(v >= 0.95 for v in drawn) <= 4
    assert [p.why for p in picks[:5]] == [f"bin {b}/5" for b in range(1, 6)]
    # another seed draws other cases from the crowded bin; the same seed the same ones
    assert [p.case_id for p in sample(store, run, scorer_entry(run, None), 10, bins=5)] == [p.case_id for p in picks]
    other = sample(store, run, scorer_entry(run, None), 10, bins=5, seed=7)
    assert {p.case_id for p in other if by_id[p.case_id] >= 0.95} != {p.case_id for p in picks if by_id[p.case_id] >= 0.95}


def test_second_pass_offers_disagreements_first_and_no_labelled_case_again(scripted_plugin, db):
    from evalyard.analysis.labels import scorer_entry
    from evalyard.figures.labels import save_label, sample

    values = [i / 19 for i in range(20)]
    run_id = _values_run(scripted_plugin, db, values)
    store = scripted_plugin.open_store(db)
    run = store.get_run(run_id)
    entry = scorer_entry(run, "scripted")
    save_label(store, run_id, "c019", "no")      # judge 1.0 (pass): disagrees
    save_label(store, run_id, "c000", "yes")     # judge 0.0 (fail): disagrees
    save_label(store, run_id, "c018", "yes")     # agrees
    save_label(store, run_id, "c001", "no")      # agrees
    picks = sample(store, run, entry, 30, bins=4)
    assert [(p.case_id, p.why) for p in picks[:2]] == [("c019", "disagreement"), ("c000", "disagreement")]
    rest = [p.case_id for p in picks[2:]]
    assert len(rest) == 16 and not {"c000", "c001", "c018", "c019"} & set(rest)


def test_verdicts_without_values_are_drawn_by_label_and_no_verdict_never(scripted_plugin, db):
    from evalyard.analysis.labels import judge_says_yes
    from evalyard.figures.labels import stratified

    store = scripted_plugin.open_store(db)
    suite_id = store.suite_id("verdicts", "v1")
    cases = [Case(id=f"v{i}", input="q", candidate="a") for i in range(9)]
    store.store_cases(suite_id, None, ((c, None) for c in cases), suite_cases=True)
    entry = {"name": "judge", "threshold": None}
    run_id = store.create_run(suite_id, cases, name="verdicts", scorers=[entry], versions={}, source="")
    verdict = ["yes"] * 5 + ["no"] + [None] * 2 + ["x"]
    store.write_results(run_id, [{"case_id": f"v{i}", "scorer": "judge", "value": 0.5 if v == "x" else None,
                                  "label": None if v == "x" else v} for i, v in enumerate(verdict)])
    run = store.get_run(run_id)
    picks = stratified(store, run, entry, 3)
    assert [(p.case_id, p.why) for p in picks][:2] == [("v8", "bin 1/1"), ("v5", "label no")]
    assert picks[2].why == "label yes"
    assert {p.case_id for p in stratified(store, run, entry, 20)} == {f"v{i}" for i in (0, 1, 2, 3, 4, 5, 8)}
    assert judge_says_yes(None, "fail", None, threshold=0.5) is False
    assert judge_says_yes(0.2, None, True, threshold=0.5) is True       # its own verdict first
    assert judge_says_yes(0.2, None, None, threshold=0.1, higher_is_better=False) is False
    assert judge_says_yes(None, "medium", None, threshold=None) is None


# -- the labelling server over real HTTP -------------------------------------------------------------

@pytest.fixture
def label_server(scripted_plugin, db):
    from evalyard.analysis.labels import scorer_entry
    from evalyard.figures.labels import sample
    from evalyard.report.labelling import create_label_app, make_label_server

    run_id = _values_run(scripted_plugin, db, [0.1, 0.9, 0.4])
    store = scripted_plugin.open_store(db)
    run = store.get_run(run_id)
    entry = scorer_entry(run, None)
    app = create_label_app(store, run, entry, sample(store, run, entry, 3), labeller="tester")
    server = make_label_server(app, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield store, run_id, server.server_port, app.config["TOKEN"]
    server.shutdown()
    thread.join(timeout=10)
    server.server_close()


def _request(port, method, path, body=None, headers=None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8"), dict(response.getheaders())
    finally:
        connection.close()


def test_the_page_listens_on_one_address_only(scripted_plugin, db):
    from click.testing import CliRunner

    from evalyard.cli import cli

    run_id = _values_run(scripted_plugin, db, [0.1, 0.9])
    done = CliRunner().invoke(cli, ["label", run_id, "--db", db, "--host", "0.0.0.0", "--port", "0"],
                              obj=scripted_plugin)
    assert done.exit_code == 2 and "listens on one address" in done.output


def test_the_page_carries_its_token_and_forbids_framing(label_server):
    _, run_id, port, token = label_server
    status, html, headers = _request(port, "GET", "/")
    assert status == 200 and token in html and run_id in html
    assert headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "connect-src 'self'" in headers["Content-Security-Policy"]


def test_only_its_own_page_can_write_a_label(label_server):
    from evalyard.figures.labels import stored_labels

    store, run_id, port, token = label_server
    own = f"http://127.0.0.1:{port}"
    body = {"case_id": "c000", "label": "yes"}
    json_type = {"Content-Type": "application/json"}
    # another site's page posting cross-origin, without the token it cannot read: refused
    status, text, _ = _request(port, "POST", "/label", body, {**json_type, "Origin": "http://evil.example"})
    assert status == 403 and "cross-origin" in text
    # another site that somehow had the token: still refused by its origin
    status, _, _ = _request(port, "POST", "/label", body, {**json_type, "Origin": "http://evil.example",
                                                            "X-Evalyard-Token": token})
    assert status == 403
    # a plain form post (no Origin header, no token), and the right origin with a wrong token
    assert _request(port, "POST", "/label", body, json_type)[0] == 403
    assert _request(port, "POST", "/label", body, {**json_type, "Origin": own, "X-Evalyard-Token": "guess"})[0] == 403
    # a DNS-rebinding page reaches the port under its own name: the Host is refused
    status, _, _ = _request(port, "POST", "/label", body, {**json_type, "Host": "evil.example:80",
                                                            "Origin": "http://evil.example:80", "X-Evalyard-Token": token})
    assert status == 403
    assert _request(port, "GET", "/", headers={"Host": "evil.example"})[0] == 403
    assert stored_labels(store, run_id) == {}

    good = {**json_type, "Origin": own, "X-Evalyard-Token": token}
    status, text, _ = _request(port, "POST", "/label", body, good)
    assert status == 200 and json.loads(text) == {"case_id": "c000", "label": "yes", "labeller": "tester"}
    assert stored_labels(store, run_id)["c000"]["labeller"] == "tester"
    # nothing else is writable: other labels, cases the page did not offer, other methods and routes
    assert _request(port, "POST", "/label", {"case_id": "c000", "label": "maybe"}, good)[0] == 400
    assert _request(port, "POST", "/label", {"case_id": "c999", "label": "no"}, good)[0] == 400
    assert _request(port, "PUT", "/label", body, good)[0] == 405
    assert _request(port, "DELETE", "/label", None, good)[0] == 405
    assert _request(port, "POST", "/", body, good)[0] == 405
    assert _request(port, "POST", "/runs", body, good)[0] == 404
    assert list(stored_labels(store, run_id)) == ["c000"]


# -- calibrate --run on stored labels --------------------------------------------------------------

def test_calibrate_run_without_data_uses_the_stored_labels(scripted_plugin, db):
    from click.testing import CliRunner

    from evalyard.cli import cli
    from evalyard.figures.labels import save_label

    run_id = _values_run(scripted_plugin, db, [0.9, 0.8, 0.2, 0.1, 0.7, 0.3])
    runner = CliRunner()
    done = runner.invoke(cli, ["calibrate", "--run", run_id, "--db", db], obj=scripted_plugin)
    assert done.exit_code == 2 and f"run {run_id} has no labels" in done.output
    store = scripted_plugin.open_store(db)
    for case_id, label in [("c000", "yes"), ("c001", "yes"), ("c002", "no"), ("c003", "no"), ("c004", "no")]:
        save_label(store, run_id, case_id, label, labeller="ann")
    done = runner.invoke(cli, ["calibrate", "--run", run_id, "--db", db, "--json", "--no-baselines"],
                         obj=scripted_plugin)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["data"] == f"labels of run {run_id}" and report["cases"] == 5 and report["compared"] == 5
    assert report["labels"]["accuracy"] == pytest.approx(0.8)  # c004 (0.7, labelled no) disagrees
    assert [d["id"] for d in report["disagreements"]] == ["c004"]
    done = runner.invoke(cli, ["calibrate", "--db", db], obj=scripted_plugin)
    assert done.exit_code == 2 and "--run RUN_ID" in done.output


def test_the_sample_of_a_large_run_takes_memory_that_does_not_grow_with_it(tmp_path):
    """20,000 cases: reading the scorer's results into Python would take megabytes; the sample
    takes the LIMIT queries' rows only."""
    import tracemalloc

    from evalyard.analysis.labels import scorer_entry
    from evalyard.figures.labels import sample, save_label
    from evalyard.report.synthetic import write_bulk_run
    from evalyard.store import Store

    store = Store(f"sqlite:///{tmp_path / 'large.db'}")
    try:
        run = store.get_run(write_bulk_run(store, 20_000))
        entry = scorer_entry(run, "overlap")
        for i in range(0, 20_000, 400):  # 50 labels, all "no": the judge passes some, so a second pass
            save_label(store, run.id, f"case-{i:07d}", "no")
        tracemalloc.start()
        picks = sample(store, run, entry, 20)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    finally:
        store.close()
    assert len([p for p in picks if p.why != "disagreement"]) == 20
    assert any(p.why == "disagreement" for p in picks)
    assert peak < 1 << 20, f"sampling 20,000 results took {peak / 2**20:.1f} MiB"
