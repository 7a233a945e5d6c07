"""qwen2.5-coder-1.5b as a judge: grounded yes/no questions answered correctly, with calibrated
first-token probabilities, through a full evalyard run (the CLI, the store, the model layer)."""

from __future__ import annotations

import json

import pytest
import yaml
from click.testing import CliRunner

from evalyard.cli import cli
from local_helpers import LOCAL_SETTINGS, QWEN

TEMPLATE = """---
description: Does the source state the claim?
fields: [context, candidate]
answer: binary
system: You compare a claim with a source text and say whether the source supports it.
scorer:
  name: grounded
---
Source:
{% for passage in context %}{{ passage }}
{% endfor %}
Claim:
{{ candidate }}

Does the source support the claim?
"""

CASES = [
    ("eiffel-yes", "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
     "The Eiffel Tower was completed in 1889.", "yes"),
    ("eiffel-no", "The Eiffel Tower was completed in 1889 for the World's Fair in Paris.",
     "The Eiffel Tower was completed in 1925.", "no"),
    ("water-yes", "Water boils at 100 degrees Celsius at sea level.",
     "At sea level, water boils at 100 degrees Celsius.", "yes"),
    ("curie-no", "Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Berlin.", "no"),
    ("amazon-no", "The Amazon river flows into the Atlantic Ocean.", "The Amazon flows into the Pacific Ocean.", "no"),
    ("python-yes", "Python was created by Guido van Rossum and first released in 1991.",
     "Guido van Rossum created Python.", "yes"),
]


@pytest.mark.slow
def test_qwen_answers_grounded_yes_no_questions_correctly(qwen_models, app, tmp_path):
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "grounded.jinja").write_text(TEMPLATE)
    suite = {"name": "grounded", "models": {QWEN: LOCAL_SETTINGS},
             "scorers": [{"name": "grounded", "config": {"logprobs": True}}],
             "cases": [{"id": i, "context": [source], "candidate": claim, "metadata": {"gold": gold}}
                       for i, source, claim, gold in CASES]}
    path = tmp_path / "grounded.yaml"
    path.write_text(yaml.safe_dump(suite, sort_keys=False))
    result = CliRunner().invoke(cli, ["run", str(path), "--prompts-dir", str(tmp_path / "prompts"),
                                      "--judge-model", QWEN, "--json"], obj=app)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["status"] == "completed" and data["scorers"]["grounded"]["errors"] == 0
    assert data["usage"]["calls"] == len(CASES) and data["usage"]["cost"] == 0.0
    results = {r.case_id: r for r in app.open_store().results(data["run_id"])}
    for case_id, _, _, gold in CASES:
        result = results[case_id]
        # The value is P(yes) from the first answer token, and it is confident on these.
        assert result.label == gold, (case_id, result.value, result.details)
        assert (result.value > 0.7) if gold == "yes" else (result.value < 0.3), (case_id, result.value)
