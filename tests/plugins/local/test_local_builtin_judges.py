"""Every built-in yes/no judge, run with its default options by the offline judge
(local/qwen2.5-coder-1.5b) on the first cases of its labelled example set, gives a readable
verdict: no errors, one of the judge's own labels and a value on every case. Small models copy
boilerplate or ramble when a prompt invites it; this is the test that the built-in prompts and
the small-judge defaults (one answer token, reasoning off) keep them to a verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalyard.cli import cli
from local_helpers import QWEN

LABELLED = Path(__file__).resolve().parents[3] / "examples" / "labelled"
#: How many cases of each example set a judge is run on: both labels appear in the first four.
CASES = 4

#: The example set each built-in binary judge runs on, chosen by the case fields it needs.
SET_FOR_FIELDS = {
    ("candidate",): "conciseness.jsonl",
    ("candidate", "context"): "faithfulness.jsonl",
    ("candidate", "input", "reference"): "correctness.jsonl",
}


def binary_judges(app) -> dict[str, tuple[str, ...]]:
    """The registered scorers whose prompt template answers yes/no, with the fields they need
    (a multi-step judge counts by the template of its verdicts, e.g. judge/hallucination's checks)."""
    library = app.prompt_library()
    judges = {}
    table = app.registry.scorers
    for entry in table:
        template = getattr(entry.obj, "template_name", None)
        if template and library.get(template).answer.kind == "binary":
            judges[table.display_name(entry)] = tuple(sorted(entry.obj.requires))
    return judges


def run_json(app, *args: str) -> dict:
    result = CliRunner().invoke(cli, ["run", *args, "--judge-model", QWEN, "--json"], obj=app)
    assert result.exit_code in (0, 1), result.output  # 1: a threshold failed, the model's business
    return json.loads(result.stdout)


def first_cases(tmp_path: Path, name: str) -> Path:
    lines = (LABELLED / name).read_text().splitlines()[:CASES]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def judges_app(qwen_models, monkeypatch):
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "judge,criteria,trust,local")
    from evalyard import Application

    return Application()


#: Each example set's judges are cut into this many parts, one test each, so pytest-xdist can spread
#: the calls over its workers; the set with most judges gets most parts.
PARTS = {"conciseness.jsonl": 3, "faithfulness.jsonl": 1, "correctness.jsonl": 1}


def test_every_builtin_binary_judge_has_a_labelled_example_set(judges_app):
    judges = binary_judges(judges_app)
    # The criteria family's yes/no aspects at least; a new binary judge must be given an example set.
    assert {"correctness", "conciseness", "relevance", "judge/hallucination"} <= set(judges)
    missing = {name: fields for name, fields in judges.items() if fields not in SET_FOR_FIELDS}
    assert not missing, f"binary judges with no labelled example set for their fields: {missing}"
    assert set(SET_FOR_FIELDS.values()) == set(PARTS)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # a dozen or two one-token calls: a minute or two on an idle core
@pytest.mark.parametrize("data_name, part", [(name, part) for name, parts in PARTS.items() for part in range(parts)])
def test_every_builtin_binary_judge_gives_a_readable_verdict_by_default(judges_app, tmp_path, data_name, part):
    judges = binary_judges(judges_app)
    names = sorted(name for name, fields in judges.items() if SET_FOR_FIELDS.get(fields) == data_name)
    names = names[part::PARTS[data_name]]
    assert names, f"{data_name} part {part}: no judges"
    data = run_json(judges_app, str(first_cases(tmp_path, data_name)), *[a for n in names for a in ("-s", n)])
    results = list(judges_app.open_store().results(data["run_id"]))
    assert len(results) == CASES * len(names)
    scorers = judges_app.registry.scorers
    unreadable = [(r.scorer, r.case_id, r.label, r.error or r.details.get("raw")) for r in results
                  if r.error or r.label not in scorers.get(r.scorer).labels or r.value is None]
    assert not unreadable, f"{data_name}: {unreadable}"
    # Not one word to everything: the cases get both verdicts from the part's judges as a whole
    # (one judge may rightly say no to all four, e.g. harmfulness on harmless answers)
    assert len({r.value for r in results}) > 1, (data_name, names)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_trust_entailment_judge_gives_a_readable_verdict_by_default(judges_app, tmp_path):
    # Claim matching (mode=cm) is the Trust-Score mode that asks the entailment judge; the rest is default
    data = run_json(judges_app, str(first_cases(tmp_path, "claims.jsonl")), "-s", "trust_correctness:mode=cm")
    assert data["scorers"]["trust_correctness"]["errors"] == 0
    results = list(judges_app.open_store().results(data["run_id"]))
    assert len(results) == CASES and all(r.error is None and r.value is not None for r in results)
