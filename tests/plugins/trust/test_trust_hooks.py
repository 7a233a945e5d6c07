"""Entailment backends and refusal detectors are hooks the trust plugin declares: other plugins
implement them, and the allow/block lists, tracing and test isolation apply; the old entry-point
groups and Python functions still work, with a DeprecationWarning."""

from __future__ import annotations

import evalyard
from trust_helpers import ASQA, details_by_case, invoke, run_json

from evalyard import Settings, hookimpl
from evalyard_trust import Entailment, RefusalVerdict


class Always:
    name = "always"

    def __init__(self, config, runtime):
        pass

    def fingerprint(self):
        return {"backend": self.name}

    async def entails(self, premise, hypothesis):
        return Entailment(1, {"by": "always"})


class NeverRefuses:
    name = "never"

    def __init__(self, config):
        pass

    def detect(self, output):
        return RefusalVerdict(False, {"by": "never"})


class Extensions:
    @hookimpl
    def register_entailment_backends(self, register):
        register("always", Always)

    @hookimpl
    def register_refusal_detectors(self, register):
        register("never", NeverRefuses)


CHOICE = "trust_citations:entailment=always,refusal=never"


def test_a_plugin_adds_a_backend_and_a_detector_through_the_hooks(app):
    app.register_plugin(Extensions(), name="extensions")
    data = run_json(app, ASQA, "--format", "trust-eval", "-s", CHOICE)
    rows = details_by_case(app, data["run_id"], "trust_citations")
    assert all(not r.details["refused"] for r in rows.values())
    assert rows["asqa-01"].details["citations"]["nli_calls"][0]["by"] == "always"
    assert rows["asqa-01"].details["by"] == "never"


def test_another_application_does_not_see_a_test_plugins_backend(app):
    app.register_plugin(Extensions(), name="extensions")
    other = evalyard.Application()
    result = invoke(other, "run", ASQA, "--format", "trust-eval", "-s", CHOICE)
    assert result.exit_code == 2 and "unknown entailment backend 'always'" in result.output
    assert "known: judge, lexical" in result.output


def test_the_block_list_applies_to_a_plugins_backend(tmp_path):
    plugin = tmp_path / "always_plugin.py"
    plugin.write_text("from evalyard import hookimpl\n"
                      "from evalyard_trust import Entailment\n"
                      "class Always:\n"
                      "    name = 'always'\n"
                      "    def __init__(self, config, runtime): pass\n"
                      "    def fingerprint(self): return {'backend': 'always'}\n"
                      "    async def entails(self, premise, hypothesis): return Entailment(1)\n"
                      "@hookimpl\n"
                      "def register_entailment_backends(register):\n"
                      "    register('always', Always)\n")
    loaded = evalyard.Application(Settings.from_env(extra_plugins=(str(plugin),)))
    assert run_json(loaded, ASQA, "--format", "trust-eval", "-s", "trust_citations:entailment=always")
    blocked = evalyard.Application(Settings.from_env(extra_plugins=(str(plugin),), block_plugins=frozenset({str(plugin)})))
    result = invoke(blocked, "run", ASQA, "--format", "trust-eval", "-s", "trust_citations:entailment=always")
    assert result.exit_code == 2 and "unknown entailment backend 'always'" in result.output


def test_tracing_shows_the_trust_hooks(capsys):
    app = evalyard.Application(Settings.from_env(trace_plugins=True))
    app.host  # loaded here, so the trace goes to this test's stderr rather than the CLI runner's
    run_json(app, ASQA, "--format", "trust-eval", "-s", "trust_citations:entailment=lexical")
    err = capsys.readouterr().err
    assert "register_hookspecs" in err and "register_entailment_backends" in err and "register_refusal_detectors" in err


def test_a_name_of_the_trust_plugin_cannot_be_taken(app):
    class Clash:
        @hookimpl
        def register_entailment_backends(self, register):
            register("lexical", Always)

    app.register_plugin(Clash(), name="clash")
    result = invoke(app, "run", ASQA, "--format", "trust-eval", "-s", "trust_citations:entailment=lexical")
    assert result.exit_code == 2
    assert "plugin 'clash' registered entailment backend 'lexical', which plugin 'trust' registered" in result.output
