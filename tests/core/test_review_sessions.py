"""Blind side-by-side reviews (``evalyard review``, issue 52 part 1): the migration, sessions and
verdicts in the store (SQLite and PostgreSQL), the informative sample and the sides, the review
server's checks over real HTTP with a fuzz of its write route, the CLI's bad input, the summary,
and the people's verdict in ``compare`` and ``calibrate --reviews``."""

from __future__ import annotations

import http.client
import json
import random
import threading

import pytest
from click.testing import CliRunner

from evalyard import Case, Suite
from evalyard.cli import cli
from evalyard.errors import InputError
from testutil import database_at

#: Strings that would tell a reviewer which run is which: they must never reach the page.
BASE_NAME, NEW_NAME = "quokka-base-7b", "wombat-new-70b"
#: What each run answers to case i (the texts say nothing of the run).
ANSWERS = ("Short answer to {}.", "A longer answer to question {}.")
#: Per case: BASE's and NEW's scripted values. NEW scores higher on c01, c03; BASE on c02; equal elsewhere.
VALUES = [(0.5, 0.5), (0.2, 0.9), (0.8, 0.1), (0.3, 0.6), (0.5, 0.5), (0.5, 0.5), (0.5, 0.5), (0.5, 0.5)]


def _runs(app, db, n=len(VALUES)):
    """BASE and NEW over the same inputs, with different answers and scripted scores."""
    ids = []
    for side, name in ((0, BASE_NAME), (1, NEW_NAME)):
        cases = [Case(id=f"c{i:02d}", input=f"question {i}?", candidate=ANSWERS[side].format(i), context=[f"passage {i}"],
                      metadata={"script": VALUES[i % len(VALUES)][side]}) for i in range(n)]
        ids.append(app.evaluate(Suite(name=f"suite-{name}", cases=cases), ["scripted"], db=db, name=name).run_id)
    return ids


@pytest.fixture
def db(db_url):
    return db_url


@pytest.fixture
def pair(scripted_plugin, db):
    base, new = _runs(scripted_plugin, db)
    return scripted_plugin, scripted_plugin.open_store(db), base, new


def _count_sessions(store) -> int:
    from sqlalchemy import func, select

    from evalyard.store.models import ReviewRow, ReviewSessionRow

    with store.engine.connect() as connection:
        return (connection.execute(select(func.count()).select_from(ReviewSessionRow)).scalar()
                + connection.execute(select(func.count()).select_from(ReviewRow)).scalar())


def test_an_existing_database_upgrades_to_the_review_tables(db_url):
    """A database at 0010 (the revision before reviews) keeps its runs and gains the tables."""
    from evalyard.store import Store
    from evalyard.store.reviews import create_session, save_review, session_reviews

    assert "reviews" not in database_at(db_url, "0010_generated_dialogue")
    store = Store(db_url)
    try:
        suite_id = store.suite_id("s", "v1")
        runs = [store.create_run(suite_id, [Case(id="a", input="q", candidate=x)], name=x, scorers=[], versions={},
                                 source="") for x in ("x", "y")]
        session = create_session(store, runs[0], runs[1], ["a"], {})
        save_review(store, session, "a", "ann", "new", "A", "clear")
        assert [(r["verdict"], r["left"], r["note"]) for r in session_reviews(store, session)] == [("A", "new", "clear")]
    finally:
        store.close()


def test_the_sample_puts_disagreements_first_and_the_sides_are_per_reviewer_and_stable(pair):
    from evalyard.analysis.review_sample import left_side
    from evalyard.reviewing import open_session, reviewer_cases, session_cases

    _, store, base, new = pair
    session, resumed = open_session(store, base, new, size=5)
    assert not resumed
    # the three cases where the scores disagree come first, NEW higher and BASE higher in turn
    assert set(session.case_ids[:3]) == {"c01", "c02", "c03"} and session.case_ids[1] == "c02"
    assert session.plan["strata"] == {"new scored higher": 2, "base scored higher": 1, "scores agree": 2}
    assert session.plan["reviews_needed"] == 97  # +/-0.10 at 95%, worst case
    again, resumed = open_session(store, base, new, size=5)
    assert resumed and again.id == session.id  # the same command resumes
    assert open_session(store, base, new, size=5, fresh=True)[0].id != session.id
    uniform, _ = open_session(store, base, new, size=8, uniform=True, fresh=True)
    assert sorted(uniform.case_ids) == [f"c{i:02d}" for i in range(8)]

    cases = session_cases(store, session)
    ann, bob = (reviewer_cases(cases, session.secret, who) for who in ("ann", "bob"))
    assert ann == reviewer_cases(cases, session.secret, "ann")  # resumed: the same sides
    for shown in (ann, bob):
        for case in shown:
            left = left_side(session.secret, "ann" if shown is ann else "bob", case["id"])
            assert case["a"]["text"] == ANSWERS[left == "new"].format(int(case["id"][1:]))
    # over many cases and reviewers, the sides are drawn about evenly
    lefts = [left_side(session.secret, f"r{r}", f"c{c}") for r in range(20) for c in range(50)]
    assert 400 < lefts.count("new") < 600


def test_deleting_a_run_deletes_its_review_sessions(pair):
    from evalyard.reviewing import open_session, record
    from evalyard.store.reviews import pair_reviews

    _, store, base, new = pair
    session, _ = open_session(store, base, new, size=3)
    record(store, session, session.case_ids[0], "ann", "A")
    assert len(pair_reviews(store, base, new)) == 1
    store.delete_run(new)
    assert _count_sessions(store) == 0


# -- the review server over real HTTP --------------------------------------------------------------

@pytest.fixture
def review_server(pair):
    from evalyard.reviewing import open_session
    from evalyard.report.review_page import create_review_app, make_review_server

    app, store, base, new = pair
    session, _ = open_session(store, base, new, size=4)
    other, _ = open_session(store, base, new, size=8, uniform=True, fresh=True)
    flask_app = create_review_app(store, session, reviewer="ann")
    server = make_review_server(flask_app, port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield store, session, other, server.server_port, flask_app.config["TOKEN"], (base, new)
    server.shutdown()
    thread.join(timeout=10)
    server.server_close()


def _request(port, method, path, body=None, headers=None, raw: bytes | None = None):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        payload = raw if raw is not None else (json.dumps(body) if body is not None else None)
        connection.request(method, path, body=payload, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", "replace"), dict(response.getheaders())
    finally:
        connection.close()


def test_the_page_tells_nothing_of_the_runs(review_server):
    store, session, _, port, token, (base, new) = review_server
    status, html, headers = _request(port, "GET", "/")
    assert status == 200 and token in html and session.secret not in html
    for secret in (base, new, BASE_NAME, NEW_NAME, "quokka", "wombat", "scripted", "suite-", "informative",
                   "scored higher", "stratum"):
        assert secret.lower() not in html.lower(), secret
    data = html[html.index('id="evalyard-data"'):]
    data = data[:data.index("</script>")]
    assert not any(value in data for value in ("0.9", "0.2", "0.8", "0.3", "0.6", "0.5")), data  # no score
    assert '"base"' not in data and '"new"' not in data  # the sides are A and B only
    assert headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in headers["Content-Security-Policy"]
    assert "connect-src 'self'" in headers["Content-Security-Policy"] and headers["Referrer-Policy"] == "no-referrer"


def test_only_its_own_page_writes_and_only_in_its_own_session(review_server):
    from evalyard.store.reviews import session_reviews

    store, session, other, port, token, _ = review_server
    own = f"http://127.0.0.1:{port}"
    json_type = {"Content-Type": "application/json"}
    body = {"case_id": session.case_ids[0], "verdict": "A", "note": "terse"}
    assert _request(port, "POST", "/review", body, {**json_type, "Origin": "http://evil.example"})[0] == 403
    assert _request(port, "POST", "/review", body, {**json_type, "Origin": "http://evil.example",
                                                     "X-Evalyard-Token": token})[0] == 403
    assert _request(port, "POST", "/review", body, {**json_type, "Origin": own})[0] == 403  # no token
    assert _request(port, "POST", "/review", body, {**json_type, "Origin": own, "X-Evalyard-Token": "guess"})[0] == 403
    assert _request(port, "POST", "/review", body, {**json_type, "Host": "evil.example:80",
                                                     "Origin": "http://evil.example:80", "X-Evalyard-Token": token})[0] == 403
    assert _request(port, "GET", "/", headers={"Host": "evil.example"})[0] == 403
    assert session_reviews(store, session.id) == []

    good = {**json_type, "Origin": own, "X-Evalyard-Token": token}
    status, text, _ = _request(port, "POST", "/review", body, good)
    assert status == 200 and json.loads(text) == {"case_id": session.case_ids[0], "verdict": "A", "reviewer": "ann"}
    # a case of another session (not offered here), a bad verdict, a note too long, other routes and methods
    outside = next(c for c in other.case_ids if c not in session.case_ids)
    assert _request(port, "POST", "/review", {**body, "case_id": outside}, good)[0] == 400
    assert _request(port, "POST", "/review", {**body, "verdict": "C"}, good)[0] == 400
    assert _request(port, "POST", "/review", {**body, "note": "x" * 5000}, good)[0] == 400
    assert _request(port, "PUT", "/review", body, good)[0] == 405
    assert _request(port, "POST", "/", body, good)[0] == 405
    assert _request(port, "POST", "/label", body, good)[0] == 404
    assert [(r["case_id"], r["reviewer"], r["verdict"]) for r in session_reviews(store, session.id)] == [
        (session.case_ids[0], "ann", "A")]
    assert session_reviews(store, other.id) == []


def _nasty(rng: random.Random, depth: int = 0):
    choices = [None, True, 0, -1, 1.5, 1e308, "", "A", "B", "tie", "both_bad", "\ud800", "\x00", "a" * 5000, [], {},
               ["A"], {"case_id": "c01"}]
    if depth < 2 and rng.random() < 0.3:
        return {rng.choice(["case_id", "verdict", "note", "x"]): _nasty(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return rng.choice(choices)


def test_fuzz_the_write_route_never_answers_a_traceback_nor_half_writes(review_server):
    """Seeded random bodies (JSON of every shape, broken JSON, bytes that are not UTF-8) with the
    right token and origin: every answer is 200 or 400 with a JSON error, and every stored row is a
    whole, valid verdict of this session's cases."""
    from evalyard.analysis.reviews import VERDICTS
    from evalyard.store.reviews import session_reviews

    store, session, other, port, token, _ = review_server
    good = {"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port}", "X-Evalyard-Token": token}
    rng = random.Random(52)
    for n in range(300):
        roll = rng.random()
        if roll < 0.6:
            body = {"case_id": rng.choice(session.case_ids + other.case_ids + ["", "c99", None, ["c01"], {"a": 1}]),
                    "verdict": _nasty(rng) if rng.random() < 0.5 else rng.choice(VERDICTS), "note": _nasty(rng)}
            raw = json.dumps(body).encode("utf-8", "surrogatepass")
        elif roll < 0.8:
            raw = json.dumps(_nasty(rng)).encode("utf-8", "surrogatepass")
        else:
            raw = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
        status, text, _ = _request(port, "POST", "/review", headers=good, raw=raw)
        assert status in (200, 400), (status, raw, text)
        assert "Traceback" not in text and isinstance(json.loads(text), dict), raw
    rows = session_reviews(store, session.id)
    assert rows and all(r["case_id"] in session.case_ids and r["verdict"] in VERDICTS and r["reviewer"] == "ann"
                        and r["left"] in ("base", "new") and isinstance(r["note"], str) for r in rows)
    assert len({r["case_id"] for r in rows}) == len(rows)  # one verdict per case and reviewer
    assert session_reviews(store, other.id) == []


# -- the CLI ----------------------------------------------------------------------------------------

def test_cli_bad_input_is_one_line_exit_2_and_writes_nothing(pair, db):
    app, store, base, new = pair
    runner = CliRunner()
    cases = [
        (["review", "no-such-run", new], "no run"),
        (["review", base, base], "same run"),
        (["review", base], "give BASE and NEW"),
        (["review"], "give BASE and NEW"),
        (["review", base, new, "--host", "0.0.0.0"], "listens on one address"),
        (["review", base, new, "--reviewer", "  "], "reviewer"),
        (["review", base, new, "--reviewer", "a\nb"], "reviewer"),
        (["review", base, new, "--session", "rvnone"], "names the runs"),
        (["review", "--session", "rvnone"], "no review session"),
        (["review", "--summary", "rvnone"], "no review session"),
        (["review", base, new, "--summary", "rvnone"], "give no BASE"),
        (["review", base, new, "--target", "2"], "2"),
        (["review", base, new, "--size", "0"], "0"),
        (["review", "nosuchexperiment:1", new], "no experiment"),
        (["review", base, new, "--port", "70000"], "70000"),
    ]
    for args, expected in cases:
        done = runner.invoke(cli, [*args, "--db", db], obj=app)
        lines = done.output.strip().splitlines()
        assert done.exit_code == 2, (args, done.output)
        assert expected in done.output and "Traceback" not in done.output, (args, done.output)
        assert len([x for x in lines if x.startswith("Error")]) == 1, (args, done.output)
    assert _count_sessions(store) == 0


def test_a_port_in_use_writes_no_session(pair, db):
    import socket

    app, store, base, new = pair
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        done = CliRunner().invoke(cli, ["review", base, new, "--db", db, "--port", str(taken.getsockname()[1])], obj=app)
    finally:
        taken.close()
    assert done.exit_code == 2 and "cannot listen" in done.output
    assert _count_sessions(store) == 0


def _reviewed(store, base, new):
    """Three reviewers: ann and bob prefer NEW on the cases it scored higher, cy calls ties."""
    from evalyard.analysis.review_sample import left_side
    from evalyard.reviewing import open_session, record

    session, _ = open_session(store, base, new, size=8)
    for reviewer in ("ann", "bob", "cy"):
        for case_id in session.case_ids:
            better = {"c01": "new", "c03": "new", "c02": "base"}.get(case_id)
            if reviewer == "cy" or better is None:
                record(store, session, case_id, reviewer, "tie" if case_id != "c00" else "both_bad")
            else:
                left = left_side(session.secret, reviewer, case_id)
                record(store, session, case_id, reviewer, "A" if left == better else "B",
                       "clearly" if case_id == "c01" and reviewer == "ann" else "")
    return session


def test_the_summary_reveals_the_runs_and_says_what_the_reviews_say(pair, db):
    app, store, base, new = pair
    session = _reviewed(store, base, new)
    runner = CliRunner()
    report = json.loads(runner.invoke(cli, ["review", "--summary", session.id, "--json", "--db", db], obj=app).output)
    rate = report["win_rate"]
    assert report["base"]["id"] == base and report["new"]["name"] == NEW_NAME and report["reviewers"] == ["ann", "bob", "cy"]
    assert rate["reviews"] == 24 and rate["wins"] == 4 and rate["losses"] == 2 and rate["cases"] == 8
    assert rate["win_rate"] == pytest.approx((4 + 0.5 * 18) / 24) and rate["ci_method"] == "clustered by case"
    assert set(report["position_bias"]) == {"ann", "bob", "cy"} and report["agreement"]["fleiss"]["cases"] == 8
    assert report["notes"] == [{"case_id": "c01", "reviewer": "ann", "verdict": report["notes"][0]["verdict"],
                                "shown_left": report["notes"][0]["shown_left"], "note": "clearly"}]
    text = runner.invoke(cli, ["review", "--summary", session.id[:6], "--db", db], obj=app).output
    print(text)
    assert f"BASE {BASE_NAME} ({base})" in text and "NEW wins 54.2%" in text and "by 3 reviewers" in text
    assert "Fleiss' kappa" in text and "position bias of ann" in text and "note by ann on c01" in text


def test_compare_shows_the_people_beside_the_judge(pair, db):
    app, store, base, new = pair
    runner = CliRunner()
    assert "people (blind review)" not in runner.invoke(cli, ["compare", base, new, "--db", db], obj=app).output
    _reviewed(store, base, new)
    text = runner.invoke(cli, ["compare", base, new, "--db", db], obj=app).output
    assert "people (blind review): NEW wins 54.2%" in text and "24 reviews of 8 cases by 3 reviewers" in text
    found = json.loads(runner.invoke(cli, ["compare", base, new, "--db", db, "--json"], obj=app).output)["human"]
    assert found["reviews"] == 24 and found["reviewers"] == 3
    # the other way round, NEW's wins are BASE's
    swapped = json.loads(runner.invoke(cli, ["compare", new, base, "--db", db, "--json"], obj=app).output)["human"]
    assert swapped["wins"] == found["losses"] and swapped["win_rate"] == pytest.approx(1 - found["win_rate"])
    markdown = runner.invoke(cli, ["compare", base, new, "--db", db, "--format", "markdown"], obj=app).output
    assert "**People (blind review)**: NEW wins 54.2%" in markdown
    # and the report of NEW against BASE
    from evalyard.report import build_report

    html = build_report(store, new, compare_ref=base)
    assert 'id="human-table"' in html and "by 3 reviewers in 1 session" in html and "0.542" in html


def test_two_cells_of_an_experiment_are_reviewed_by_their_reference(scripted_plugin, rules, tmp_path, db):
    """``EXPERIMENT:CELL``, by the cell's index or label, names the cell's run."""
    from evalyard.errors import UnknownNameError
    from evalyard.reviewing import open_session, resolve_run

    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "input": f"question {i}", "reference": "yes"}) + "\n"
                            for i in range(4)), encoding="utf-8")
    terse, wordy = rules([{"content": "yes"}]), rules([{"content": "yes, certainly"}])
    done = CliRunner().invoke(cli, ["run", str(data), "-m", terse, "-m", wordy, "-s", "contains", "--name", "grid",
                                    "--db", db, "--json"], obj=scripted_plugin)
    assert done.exit_code == 0, done.output
    outcome = json.loads(done.output)
    store = scripted_plugin.open_store(db)
    first, second = resolve_run(store, "grid:0"), resolve_run(store, f"{outcome['experiment_id']}:{wordy}")
    assert first.id != second.id and {first.id, second.id} == {c["run_id"] for c in outcome["cells"]}
    session, _ = open_session(store, "grid:0", "grid:1", size=4)
    assert (session.base_run, session.new_run) == (first.id, second.id) and len(session.case_ids) == 4
    with pytest.raises(UnknownNameError, match="no run for cell '7'"):
        resolve_run(store, "grid:7")


@pytest.fixture
def three_cells(scripted_plugin, rules, tmp_path, db):
    """An experiment of three cells over 12 questions: answers 'no', 'yes', 'yes, certainly'."""
    data = tmp_path / "q.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i:02d}", "input": f"question {i}", "reference": "yes"}) + "\n"
                            for i in range(12)), encoding="utf-8")
    models = [rules([{"content": text}]) for text in ("no", "yes", "yes, certainly")]
    done = CliRunner().invoke(cli, ["run", str(data), *[a for m in models for a in ("-m", m)], "-s", "contains",
                                    "--name", "trio", "--db", db, "--json"], obj=scripted_plugin)
    assert done.exit_code == 0, done.output
    outcome = json.loads(done.output)
    return scripted_plugin, scripted_plugin.open_store(db), outcome["experiment_id"]


def _review_pair(store, session, reviewer, strength):
    """A reviewer who prefers the stronger cell's answer, except on every fourth case (a tie) and
    every fifth (the weaker one): so every cell wins and loses something, and ratings are finite."""
    from evalyard.analysis.review_sample import left_side
    from evalyard.reviewing import record

    for k, case_id in enumerate(session.case_ids):
        better = "new" if strength[session.new_run] > strength[session.base_run] else "base"
        if k % 5 == 4:
            better = "base" if better == "new" else "new"
        left = left_side(session.secret, reviewer, case_id)
        record(store, session, case_id, reviewer, "tie" if k % 4 == 3 else ("A" if left == better else "B"))


def test_an_experiments_cells_are_reviewed_in_pairs_and_ranked(three_cells, db):
    """`review EXPERIMENT` serves the pair the reviewer began, else the one with fewest verdicts; the
    Bradley-Terry ranking of every pair's verdicts orders the cells as the reviewers preferred them."""
    from evalyard.reviewing import experiment_pairs, experiment_ranking, next_pair, record
    from evalyard.store.experiments import cell_runs

    app, store, experiment = three_cells
    runs = cell_runs(store, experiment)
    strength = {runs[0]: 0, runs[1]: 1, runs[2]: 2}
    _, pairs = experiment_pairs(store, experiment)
    cells = [pairs[0][0], pairs[0][2], pairs[1][2]]  # the cells' labels, in the experiment's order
    assert [(a, b) for a, _, b, _ in pairs] == [(cells[0], cells[1]), (cells[0], cells[2]), (cells[1], cells[2])]
    assert [(ra, rb) for _, ra, _, rb in pairs] == [(runs[0], runs[1]), (runs[0], runs[2]), (runs[1], runs[2])]
    # ann begins pair 1 and leaves after one verdict: she is brought back to it
    session, resumed, place, total = next_pair(store, "trio", "ann", size=12)
    assert (place, total, resumed) == (1, 3, False) and len(session.case_ids) == 12
    record(store, session, session.case_ids[0], "ann", "tie")
    again, resumed, place, _ = next_pair(store, "trio", "ann", size=12)
    assert (again.id, place, resumed) == (session.id, 1, True)
    # bob has begun nothing: he gets a pair nobody has verdicts on
    _, _, place, _ = next_pair(store, "trio", "bob", size=12)
    assert place == 2
    # both review every pair; each pair is served in turn until none is left
    for reviewer in ("ann", "bob"):
        served = []
        for _ in range(3):
            session, _, place, _ = next_pair(store, "trio", reviewer, size=12)
            served.append(place)
            _review_pair(store, session, reviewer, strength)
        assert sorted(served) == [1, 2, 3]
        with pytest.raises(InputError, match="has reviewed every pair"):
            next_pair(store, "trio", reviewer, size=12)
    ranking = experiment_ranking(store, "trio", rounds=200)
    assert ranking["battles"] == 2 * 3 * 12 and [p["reviews"] for p in ranking["pairs"]] == [24, 24, 24]
    names = [row["system"] for row in ranking["systems"]]
    assert names == [cells[2], cells[1], cells[0]]  # the cells ordered by strength
    best, _, worst = ranking["systems"]
    assert best["rating"] > 1000 > worst["rating"] and best["ci95"][0] > worst["ci95"][1] and best["rank"] == 1
    # the CLI prints it, as text and JSON
    text = CliRunner().invoke(cli, ["review", "--ranking", "trio", "--db", db], obj=app)
    assert text.exit_code == 0, text.output
    assert "Bradley-Terry ranking of experiment trio" in text.output and "72 blind verdicts on 3 of 3 pairs" in text.output
    assert text.output.index(names[0]) < text.output.index(names[1]) < text.output.rindex(names[2])
    shown = json.loads(CliRunner().invoke(cli, ["review", "--ranking", "trio", "--json", "--db", db], obj=app).output)
    assert [row["system"] for row in shown["systems"]] == names and shown["battles"] == 72


def test_reviewing_an_experiment_refuses_bad_input_in_one_line(three_cells, db):
    app, store, _ = three_cells
    for args, expected in [(["review", "trio", "--new-session"], "each keep one session"),
                           (["review", "--ranking", "nosuch"], "no experiment"),
                           (["review", "--ranking", "trio", "--summary", "rv1"], "give no BASE"),
                           (["review", "nosuch"], "give BASE and NEW")]:
        done = CliRunner().invoke(cli, [*args, "--db", db], obj=app)
        assert done.exit_code == 2 and expected in done.output, (args, done.output)
        assert len([x for x in done.output.splitlines() if x.startswith("Error")]) == 1
    assert _count_sessions(store) == 0
    # a ranking before any review says so rather than inventing one
    done = CliRunner().invoke(cli, ["review", "--ranking", "trio", "--db", db], obj=app)
    assert done.exit_code == 0 and "no ranking: no verdicts yet" in done.output, done.output
