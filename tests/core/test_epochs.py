"""Repeated trials (``--epochs N``): each case generated and scored N times through the real
model layer (a scripted model behind litellm whose answer changes from one call to the next),
reduced per case, with each scorer's stability across epochs; resumable without duplicates."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from evalyard import Reduced, hookimpl
from evalyard.cli import cli
from testutil import count_rows, start_then_kill_9

QUESTIONS = {f"q{i}": (f"What is {i} times 3?", str(3 * i)) for i in range(5)}


def invoke(app, *args):
    return CliRunner().invoke(cli, [str(a) for a in args], obj=app, catch_exceptions=False)


@pytest.fixture
def suite(tmp_path):
    path = tmp_path / "times.jsonl"
    path.write_text("".join(json.dumps({"id": case_id, "input": question, "reference": answer}) + "\n"
                            for case_id, (question, answer) in QUESTIONS.items()))
    return str(path)


@pytest.fixture
def call_log(tmp_path, monkeypatch):
    """Every answer the scripted model gives, a line each (set before the application reads it)."""
    log = tmp_path / "calls.log"
    monkeypatch.setenv("EVALYARD_SCRIPTED_LOG", str(log))
    return log


@pytest.fixture
def noisy(call_log, rules):
    """Right on a question's first two calls, wrong after: with distinct calls per epoch, every
    case gets two right answers and one wrong one in three epochs."""
    log = call_log
    model = rules([rule for q, a in QUESTIONS.values()
                   for rule in ({"contains": q, "content": f"It is {a}.", "times": 2},
                                {"contains": q, "content": "I am not sure."})], name="noisy")
    return model, log


def calls(log) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_each_epoch_is_its_own_sample_and_the_case_is_reduced(call_log, app, suite, noisy):
    model, log = noisy
    result = invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    contains = data["scorers"]["contains"]
    assert contains["mean"] == pytest.approx(2 / 3) and contains["count"] == len(QUESTIONS)
    assert contains["epochs"] == {"n": 3, "reducer": "mean", "cases": 5, "unstable": 5, "unstable_share": 1.0,
                                  "within_case_sd": pytest.approx((1 / 3) ** 0.5)}
    assert calls(log) == 3 * len(QUESTIONS)  # three real calls per case, none answered from another epoch
    from evalyard.store.trials import case_trials

    store = app.open_store()
    trials = case_trials(store, data["run_id"], "q1")
    assert sorted(o["text"] for o in trials["outputs"]) == ["I am not sure.", "It is 3.", "It is 3."]
    assert [s["epoch"] for s in trials["scores"]] == [0, 1, 2]
    assert store.candidates(data["run_id"])["q1"].text == trials["outputs"][0]["text"]  # epoch 0 is the candidate

    again = invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3", "--json")
    assert json.loads(again.stdout)["scorers"]["contains"]["mean"] == pytest.approx(2 / 3)
    assert calls(log) == 3 * len(QUESTIONS)  # every epoch answered from the response cache


def test_a_reducer_per_scorer_from_the_command_line(call_log, app, suite, noisy):
    model, _ = noisy
    result = invoke(app, "run", suite, "-s", "contains", "-s", "regex_match:pattern=^It is", "-m", model, "--epochs", "3",
                    "--reducer", "contains=at_least_k:k=2", "--reducer", "max", "--json")
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    assert scorers["contains"]["mean"] == 1.0 and scorers["contains"]["epochs"]["reducer"] == "at_least_k:k=2"
    assert scorers["regex_match"]["epochs"]["reducer"] == "max"
    run = app.open_store().get_run(json.loads(result.stdout)["run_id"])
    assert [s["reducer"] for s in run.scorers] == ["at_least_k:k=2", "max"]


def test_the_summary_says_how_stable_each_scorer_was(call_log, app, suite, noisy):
    model, _ = noisy
    text = invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3").output
    assert "3 epochs, mean of each case's epochs" in text
    assert "verdict changed across epochs on 5 of 5 cases (100%), within-case sd 0.577" in text


@pytest.mark.parametrize("args, message", [
    (("--epochs", "3", "--reducer", "pass_at_k:k=5"), "reducer pass_at_k:k=5 needs at least 5 epochs, the run has 3"),
    (("--epochs", "2", "--reducer", "median:k=1"), "reducer median has no parameter 'k=1'"),
    (("--epochs", "2", "--reducer", "bleu=max"), "scorer 'bleu' is not part of this run"),
    (("--epochs", "0"), "0 is not in the range x>=1"),
])
def test_bad_epoch_options_are_refused_before_anything_is_stored(call_log, app, suite, noisy, args, message):
    model, log = noisy
    result = invoke(app, "run", suite, "-s", "contains", "-m", model, *args)
    assert result.exit_code == 2 and message in result.output
    assert calls(log) == 0 and json.loads(invoke(app, "runs", "list", "--json").output) == []


def test_a_suite_file_sets_epochs_and_reducers(call_log, app, suite, noisy, tmp_path):
    model, _ = noisy
    path = tmp_path / "suite.yaml"
    path.write_text(f"name: times\ndata: {suite}\nepochs: 3\nreducer: mode\n"
                    "scorers:\n  - contains\n  - name: regex_match\n    config: {pattern: '^It is'}\n    reducer: min\n")
    result = invoke(app, "run", path, "-m", model, "--json")
    assert result.exit_code == 0, result.output
    scorers = json.loads(result.stdout)["scorers"]
    assert scorers["contains"]["epochs"]["reducer"] == "mode" and scorers["contains"]["mean"] == 1.0
    assert scorers["regex_match"]["epochs"]["reducer"] == "min" and scorers["regex_match"]["mean"] == 0.0
    path.write_text(f"name: times\ndata: {suite}\nepochs: 3\nscorers:\n  - name: contains\n    reducer: pass_at_k\n")
    bad = invoke(app, "run", path, "-m", model)
    assert bad.exit_code == 2 and f"{path}:6" in bad.output and "scorers.contains.reducer" in bad.output  # its own line
    assert "needs k" in bad.output


def test_kill_9_mid_run_then_resume_keeps_every_trial_once(tmp_path, suite, rules, cli_env, evalyard_exe,
                                                            isolated_home):
    """A run with epochs killed with SIGKILL while generating resumes: every (case, epoch) output
    and every (case, epoch, scorer) trial exactly once, each case reduced once."""
    import sqlite3
    import subprocess

    log = tmp_path / "calls.log"
    model = rules([{"contains": q, "content": f"It is {a}.", "delay_ms": 40} for q, a in QUESTIONS.values()],
                  name="slow")
    env = {**cli_env, "EVALYARD_SCRIPTED_LOG": str(log)}
    db = isolated_home / "evalyard.db"

    def count(table):
        return count_rows(db, table)

    command = [evalyard_exe, "run", suite, "-s", "contains", "-m", model, "--epochs", "4", "-j", "1", "--json"]
    start_then_kill_9(command, env, lambda: count("trial_outputs") >= 6)
    with sqlite3.connect(db) as con:
        run_id = con.execute("select id from runs").fetchone()[0]
    done = subprocess.run([evalyard_exe, "run", "--resume", run_id, "--json"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["scorers"]["contains"]["mean"] == 1.0
    assert (count("trial_outputs"), count("trials"), count("results")) == (4 * len(QUESTIONS),) * 2 + (len(QUESTIONS),)
    answered = len(log.read_text().splitlines())
    assert 4 * len(QUESTIONS) <= answered <= 4 * len(QUESTIONS) + 1  # at most the call in flight at the kill again


def test_the_plan_counts_every_epoch_and_knows_which_are_cached(call_log, app, suite, noisy):
    model, log = noisy
    def generation(plan):
        line = next(line for line in plan["lines"] if line["kind"] == "generator")
        return sum(m["calls"] for m in line["models"]), sum(m["cache_hits"] for m in line["models"])

    before = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3", "--plan",
                               "--json").stdout)["plan"]
    assert generation(before) == (3 * len(QUESTIONS), 0)
    invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "2")
    after = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3", "--plan",
                              "--json").stdout)["plan"]
    assert generation(after) == (3 * len(QUESTIONS), 2 * len(QUESTIONS))  # epochs 0 and 1 were answered already
    assert calls(log) == 2 * len(QUESTIONS)


def test_a_grid_with_epochs_reduces_every_cell(call_log, app, suite, noisy, rules):
    model, _ = noisy
    right = rules([{"contains": q, "content": f"It is {a}."} for q, a in QUESTIONS.values()], name="right")
    result = invoke(app, "run", suite, "-s", "contains", "-m", right, "-m", model, "--epochs", "3", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["comparison"]["cells"]
    assert [r["scorers"]["contains"]["mean"] for r in rows] == [1.0, pytest.approx(2 / 3)]
    versus = rows[1]["scorers"]["contains"]["versus_baseline"]
    assert versus["paired_cases"] == len(QUESTIONS)  # paired by case: the case is the unit, not the trial
    stored = app.open_store()
    assert [stored.get_run(r["run_id"]).settings["epochs"] for r in rows] == [3, 3]


def test_a_provider_that_takes_a_seed_gets_the_epoch_as_its_seed(app, tmp_path):
    """openai/ models (the fake OpenAI server behind litellm) take ``seed``: epoch e sends the suite's
    seed + e, recorded in the cached request; a single-epoch run's request is unchanged."""
    import sqlalchemy

    from evalyard.testing.fake_openai import FakeOpenAIServer, FakeServerConfig

    server = FakeOpenAIServer(FakeServerConfig(reply="yes")).start()
    try:
        path = tmp_path / "suite.yaml"
        path.write_text("name: seeds\ncases: [{id: a, input: 'Say yes.', reference: 'yes'}]\nscorers: [contains]\n"
                        f"models:\n  openai/fake: {{api_base: '{server.base_url}', seed: 40}}\n")
        assert invoke(app, "run", path, "-m", "openai/fake", "--epochs", "3").exit_code == 0
        assert invoke(app, "run", path, "-m", "openai/fake").exit_code == 0  # epoch 0's request: a cache hit
    finally:
        server.stop()
    with app.open_store().engine.connect() as con:
        sent = [json.loads(r) for r, in con.execute(sqlalchemy.text("select request from model_calls"))]
    assert sorted((r["params"]["seed"], r.get("epoch", 0)) for r in sent) == [(40, 0), (41, 1), (42, 2)]


def test_the_report_shows_each_scorers_stability_and_a_cases_epochs(call_log, app, suite, noisy, tmp_path):
    from evalyard.report import epochs

    model, _ = noisy
    run_id = json.loads(invoke(app, "run", suite, "-s", "contains", "-m", model, "--epochs", "3", "--json").stdout)["run_id"]
    page = tmp_path / "run.html"
    assert invoke(app, "report", run_id, "-o", page).exit_code == 0
    html = page.read_text()
    assert '<span data-stat="unstable">5 of 5</span> cases (100%)' in html and "reduced by mean" in html
    data = json.loads(html.split('<script type="application/json" id="evalyard-data">', 1)[1].split("</script>", 1)[0])
    shown = data["epochs"]["cases"]
    assert data["epochs"]["n"] == 3 and sorted(shown) == sorted(QUESTIONS)
    assert [r["epoch"] for r in shown["q1"]] == [0, 1, 2]
    assert sorted(r["output"] for r in shown["q1"]) == ["I am not sure.", "It is 3.", "It is 3."]
    assert sorted(r["verdicts"]["contains"]["value"] for r in shown["q1"]) == [0.0, 1.0, 1.0]

    # past the page's bound: at most `limit` cases (all of these changed, so the first ones)
    store = app.open_store()
    run = store.get_run(run_id)
    assert list(epochs.case_epochs(store, run, ["q0", "q1", "q2"], limit=2)) == ["q0", "q1"]


def test_kill_9_mid_grid_then_resume_experiment_keeps_every_cell_and_trial_once(tmp_path, suite, rules, cli_env,
                                                                                 evalyard_exe, isolated_home):
    """A grid of two models with epochs killed with SIGKILL while its cells run; `run --resume
    EXPERIMENT` finishes it: one run per cell, every (cell, case, epoch) output and trial once."""
    import sqlite3
    import subprocess

    slow = [rules([{"contains": q, "content": f"It is {a}.", "delay_ms": 30} for q, a in QUESTIONS.values()],
                  name=f"slow{n}") for n in range(2)]
    db = isolated_home / "evalyard.db"

    def count(table):
        return count_rows(db, table)

    command = [evalyard_exe, "run", suite, "-s", "contains", "-m", slow[0], "-m", slow[1], "--epochs", "3", "-j", "1",
               "--json"]
    # killed once the second cell has its first outputs
    start_then_kill_9(command, cli_env, lambda: count("trial_outputs") >= 3 * len(QUESTIONS) + 2, "the grid")
    with sqlite3.connect(db) as con:
        experiment = con.execute("select id from experiments").fetchone()[0]
    done = subprocess.run([evalyard_exe, "run", "--resume", experiment, "--json"], env=cli_env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    cells = json.loads(done.stdout)["cells"]
    assert [c["status"] for c in cells] == ["completed", "completed"]
    assert (count("runs"), count("experiment_runs")) == (2, 2)
    assert (count("trial_outputs"), count("trials"), count("results")) == (6 * len(QUESTIONS),) * 2 + (2 * len(QUESTIONS),)


class NumberScorer:
    """A test plugin: a scorer whose value is the candidate read as a number (``inf`` too)."""

    from evalyard import hookimpl as _hookimpl

    @staticmethod
    @_hookimpl
    def register_scorers(register):
        from evalyard import Case, Score, Scorer

        class Number(Scorer):
            name = "number"
            requires = ("candidate",)

            def score(self, case: Case) -> Score:
                return Score(value=float(case.candidate))

        register(Number)


@pytest.fixture
def numbers(app, rules, tmp_path):
    """The number scorer, a two-case suite and a model answering case a's epochs with
    ``answers_a`` in turn (case b always 1)."""
    app.register_plugin(NumberScorer, name="number_scorer")
    path = tmp_path / "numbers.jsonl"
    path.write_text('{"id": "a", "input": "first?"}\n{"id": "b", "input": "second?"}\n')

    def model(*answers_a):
        return rules([{"contains": "first?", "content": text, "times": 1} for text in answers_a]
                     + [{"contains": "second?", "content": "1"}])
    return path, model


def test_the_reducer_runs_with_the_value_as_written(app, numbers):
    path, model = numbers
    spec = "at_least_k:k=2,value=0.99999999"
    result = invoke(app, "run", path, "-s", "number", "-m", model("0.999999995", "0.999999995"), "--epochs", "2",
                    "--reducer", spec, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)["scorers"]["number"]
    assert data["epochs"]["reducer"] == spec and data["mean"] == 1.0  # %g made it value=1: case a failed
    run = app.open_store().get_run(json.loads(result.stdout)["run_id"])
    assert [s["reducer"] for s in run.scorers] == [spec]


def test_a_nan_reduction_is_a_recorded_error_of_its_case(app, numbers):
    path, model = numbers
    result = invoke(app, "run", path, "-s", "number", "-m", model("inf", "-inf"), "--epochs", "2", "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["scorers"]["number"]["count"], data["scorers"]["number"]["errors"]) == (2, 1)
    assert data["scorers"]["number"]["mean"] == 1.0
    rows = {r.case_id: r for r in app.open_store().results(data["run_id"])}
    assert rows["a"].value is None and "mean of the epochs is not a number (NaN)" in rows["a"].error


@pytest.mark.parametrize("option", ["", "number="])
def test_an_empty_reducer_is_refused(app, numbers, option):
    path, model = numbers
    result = invoke(app, "run", path, "-s", "number", "-m", model("1", "1"), "--epochs", "2", "--reducer", option)
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1
    assert "expected a reducer name" in result.output


def test_a_suite_files_bad_reducer_is_reported_on_its_own_line(app, numbers, tmp_path):
    path, model = numbers
    suite = tmp_path / "suite.yaml"
    suite.write_text(f"name: numbers\ndata: {path}\nepochs: 2\nscorers: [number]\nreducer: pass_at_k:k=x\n")
    result = invoke(app, "run", suite, "-m", model("1", "1"))
    assert result.exit_code == 2 and f"{suite}:5: field 'reducer'" in result.output, result.output
    suite.write_text(f"name: numbers\ndata: {path}\nepochs: 2\nscorers:\n  - name: number\n"
                     "    config: {}\n    reducer: mean:k=1\n")
    result = invoke(app, "run", suite, "-m", model("1", "1"))
    assert result.exit_code == 2 and f"{suite}:7: field 'scorers.number.reducer'" in result.output, result.output


class SpreadReducers:
    """A plugin's own reducers: the spread of a case's epochs, and the mean of its k best."""

    @hookimpl
    def register_reducers(self, register):
        register("spread", lambda scored, reducer, epochs: max(t.number for t in scored) - min(t.number for t in scored))
        register("best_k_mean", lambda scored, reducer, epochs: Reduced(
            value=sum(sorted((t.number for t in scored), reverse=True)[:reducer.k]) / reducer.k),
            params=("k",), needs_k=True)


class OtherSpread:
    @hookimpl
    def register_reducers(self, register):
        register("spread", lambda scored, reducer, epochs: 0.0)


def test_a_plugins_reducer_is_found_by_name_listed_and_stored_as_written(app, numbers, tmp_path):
    path, model = numbers
    app.register_plugin(SpreadReducers(), name="spreads")
    result = invoke(app, "run", path, "-s", "number", "-m", model("0.25", "1"), "--epochs", "2", "--reducer", "spread",
                    "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["scorers"]["number"]["epochs"]["reducer"] == "spread"
    assert data["scorers"]["number"]["mean"] == pytest.approx((0.75 + 0.0) / 2)  # a: 1 - 0.25, b: 1 - 1
    result = invoke(app, "run", path, "-s", "number", "-m", model("0.25", "1"), "--epochs", "2",
                    "--reducer", "number=best_k_mean:k=1", "--json")
    assert json.loads(result.stdout)["scorers"]["number"]["mean"] == 1.0
    suite = tmp_path / "suite.yaml"  # a suite file names it as the command line does
    suite.write_text(f"name: numbers\ndata: {path}\nepochs: 2\nscorers: [number]\nreducer: spread\n")
    result = invoke(app, "run", suite, "-m", model("0.5", "1"), "--json")
    assert json.loads(result.stdout)["scorers"]["number"]["mean"] == pytest.approx(0.25)
    listed = {p["name"]: p for p in json.loads(invoke(app, "plugins", "--json").stdout)}
    assert listed["spreads"]["reducers"] == ["best_k_mean", "spread"] and "register_reducers" in listed["spreads"]["hooks"]


def test_a_reducer_name_two_plugins_share_takes_its_plugins_name(app, numbers):
    path, model = numbers
    app.register_plugin(SpreadReducers(), name="spreads")
    app.register_plugin(OtherSpread(), name="flat")
    result = invoke(app, "run", path, "-s", "number", "-m", model("0.25", "1"), "--epochs", "2", "--reducer", "spread")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert "reducer name 'spread' is ambiguous: use one of flat/spread, spreads/spread" in result.output
    result = invoke(app, "run", path, "-s", "number", "-m", model("0.25", "1"), "--epochs", "2",
                    "--reducer", "spreads/spread", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["scorers"]["number"]["mean"] == pytest.approx(0.375)


def test_an_unknown_reducer_is_one_line_listing_the_known_ones(app, numbers):
    path, model = numbers
    app.register_plugin(SpreadReducers(), name="spreads")
    result = invoke(app, "run", path, "-s", "number", "-m", model("1", "1"), "--epochs", "2", "--reducer", "avg")
    assert result.exit_code == 2 and len(result.output.strip().splitlines()) == 1, result.output
    assert ("unknown reducer 'avg' (known: at_least_k, best_k_mean, max, mean, median, min, mode, pass_at_k, spread)"
            in result.output)
    assert app.open_store().list_runs() == []


def test_a_reducer_registered_wrongly_is_a_plugin_error(app):
    from evalyard.errors import PluginError

    class Broken:
        @hookimpl
        def register_reducers(self, register):
            register("top", lambda scored, reducer, epochs: 1.0, params=("n",))

    app.register_plugin(Broken(), name="broken")
    with pytest.raises(PluginError, match="parameters among k and value"):
        app.registry
