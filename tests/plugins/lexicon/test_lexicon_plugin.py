"""The plugin registers its four scorers, and its default modes never import NLTK."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from evalyard import Scorer
from evalyard.scoring import describe_config

import evalyard_lexicon.plugin as plugin


def test_hookimpl_registers_the_six_scorers():
    registered: list = []
    plugin.register_scorers(register=registered.append)
    assert [cls.name for cls in registered] == ["exact_match", "word_count_match", "readability", "specificity",
                                                "wer", "cer"]
    for cls in registered:
        assert issubclass(cls, Scorer) and cls.executor == "thread" and cls.description
        assert all(row["help"] for row in describe_config(cls.Config))
        # Arthur Bench's four have its compat mode; the error rates follow jiwer, which has no bugs to keep
        assert ("arthur_compat" in {row["name"] for row in describe_config(cls.Config)}) == (
            cls.name not in ("wer", "cer"))


def test_requirements():
    from evalyard_lexicon import ExactMatch, Readability, Specificity, WordCountMatch

    assert ExactMatch.requires == WordCountMatch.requires == ("reference", "candidate")
    assert Readability.requires == Specificity.requires == ("candidate",)


def test_entry_point_is_declared():
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="evalyard") if ep.name == "lexicon"]
    if not found:  # running from a source tree without `pip install -e plugins/lexicon`
        import pytest

        pytest.skip("evalyard-lexicon is not installed")
    assert found[0].value == "evalyard_lexicon.plugin"


PROBE = """
import json, sys
import evalyard_lexicon.plugin as plugin
from evalyard import Case
registered = []
plugin.register_scorers(registered.append)
case = Case(id="1", reference="Paris is big.", candidate="Paris, in France, is about 105 km2.")
values = {cls.name: cls().score_batch([case])[0].value for cls in registered}
configured = [cls(arthur_compat=True) for cls in registered if cls.name not in ("wer", "cer")]  # configuring compat loads nothing either
print(json.dumps({"values": values, "nltk": "nltk" in sys.modules}))
"""


def test_default_modes_do_not_import_nltk():
    # A fresh interpreter: inside the test session other tests may have imported nltk.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    output = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True, timeout=120
    ).stdout
    result = json.loads(output.strip().splitlines()[-1])
    assert result["nltk"] is False
    assert all(isinstance(v, float) for v in result["values"].values())


def test_nltk_data_is_the_applications_setting_handed_to_the_compat_scorers(tmp_path):
    """NLTK_DATA as the application read it (or given in Python) reaches a run's compat scorers."""
    from evalyard import Application, Settings

    cases = [{"id": "a", "candidate": "One sentence here."}]
    for settings, expected in ((Settings(entry_points=False, env={"NLTK_DATA": f"{tmp_path}/x{os.pathsep}/y"}),
                                [f"{tmp_path}/x", "/y"]),
                               (Settings(entry_points=False, plugin_settings={"lexicon.nltk_data": ["/z"]}), ["/z"]),
                               (Settings(entry_points=False), [])):
        app = Application(settings, plugins=[("lexicon", plugin)])
        plan = app.plan(cases, ["readability:arthur_compat=true", "specificity:arthur_compat=true"])
        assert [p.scorer.nltk_data for p in plan.scorers] == [expected, expected]
