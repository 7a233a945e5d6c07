"""Two applications with different settings run side by side in one process, their model calls
interleaved on the one background event loop, and each gets its own results: its prompt
directory's template, its judge model, its model provider for a prefix both use, its models
directory, and its block list. Nothing here sets the process environment: each application
has what its ``Settings`` say."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import evalyard
from evalyard import Application, Settings
from evalyard.models import ModelCallError

TEMPLATE = """---
answer: binary
fields: [candidate]
scorer:
  name: verdict
---
Version {version}: is this answer acceptable? {{{{ candidate }}}}
"""
CASES = [{"id": f"c{n}", "input": f"question {n}", "candidate": f"answer {n}"} for n in range(6)]


class Judge:
    """The ``judge/`` provider of one application: answers ``verdict`` after awaiting, and on its
    first call waits (with a deadline) until the other application's judge has been called too,
    so the two runs' calls are in flight at the same time."""

    def __init__(self, verdict: str, started: dict[str, threading.Event], me: str, other: str) -> None:
        self.verdict, self.started, self.me, self.other = verdict, started, me, other
        self.seen: list[tuple[str, str]] = []

    async def acompletion(self, model, messages, *args, **kwargs):
        import litellm

        self.seen.append((model, messages[-1]["content"]))
        self.started[self.me].set()
        deadline = time.monotonic() + 30
        while not self.started[self.other].is_set():  # the other run's call comes while this one awaits
            assert time.monotonic() < deadline, f"{self.other}'s judge was never called"
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.02)
        return litellm.ModelResponse(choices=[{"index": 0, "finish_reason": "stop",
                                               "message": {"role": "assistant", "content": f"ANSWER: {self.verdict}"}}],
                                     usage={"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7})


def application(tmp_path, name: str, version: str, judge: Judge, **settings) -> Application:
    prompts = tmp_path / f"prompts-{name}"
    prompts.mkdir()
    (prompts / "verdict.jinja").write_text(TEMPLATE.format(version=version))
    import evalyard_local.plugin

    app = Application(Settings(home=tmp_path / f"home-{name}", models_dir=tmp_path / f"models-{name}",
                               prompt_dirs=(str(prompts),), judge_model=f"judge/{name}-model", entry_points=False,
                               **settings),
                      plugins=[("local", evalyard_local.plugin)])
    app.add_model_provider("judge", judge)
    return app


def test_two_applications_with_different_settings_run_interleaved_in_one_process(tmp_path, rules):
    pytest.importorskip("evalyard_local")
    started = {"a": threading.Event(), "b": threading.Event()}
    judge_a, judge_b = Judge("yes", started, "a", "b"), Judge("no", started, "b", "a")
    a = application(tmp_path, "a", "A", judge_a)
    b = application(tmp_path, "b", "B", judge_b, block_plugins=frozenset({"evalyard.testing.scripted"}))

    results: dict[str, evalyard.RunResult] = {}
    errors: list[BaseException] = []

    def run(name, app):
        try:
            results[name] = app.evaluate(CASES, ["verdict"], concurrency=3)
        except BaseException as exc:  # reported below, with the other thread's outcome
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(name, app)) for name, app in (("a", a), ("b", b))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == [] and not any(t.is_alive() for t in threads)

    # each run: its own judge model, its own provider for judge/, its own template, its own store
    assert results["a"].scorers["verdict"]["mean"] == 1.0 and results["b"].scorers["verdict"]["mean"] == 0.0
    assert {model for model, _ in judge_a.seen} == {"a-model"} and {model for model, _ in judge_b.seen} == {"b-model"}
    assert len(judge_a.seen) == len(judge_b.seen) == len(CASES)
    assert all(prompt.startswith("Version A") for _, prompt in judge_a.seen)
    assert all(prompt.startswith("Version B") for _, prompt in judge_b.seen)
    assert (tmp_path / "home-a" / "evalyard.db").exists() and (tmp_path / "home-b" / "evalyard.db").exists()
    # its own models directory, reached by its own local provider
    assert a.model_providers["local"].models_dir == tmp_path / "models-a"
    assert b.model_providers["local"].models_dir == tmp_path / "models-b"
    # the scripted provider's plugin is blocked in b only: a reaches scripted/, b is refused
    model = rules([{"content": "ANSWER: yes"}])
    layer_a, layer_b = a.model_layer(), b.model_layer()
    assert layer_a.complete_sync(model, [{"role": "user", "content": "hi"}]).text == "ANSWER: yes"
    with pytest.raises(ModelCallError, match="no loaded plugin provides scripted/ models here"):
        layer_b.complete_sync(model, [{"role": "user", "content": "hi"}])


def test_litellm_only_ever_holds_a_dispatcher_for_our_prefixes(tmp_path):
    """litellm's custom_provider_map is process-wide: it holds one stateless dispatcher per prefix,
    never an application's handler, so no application can swap another's."""
    from evalyard.models.providers import Dispatch, load_litellm

    started = {"a": threading.Event(), "b": threading.Event()}
    started["a"].set(), started["b"].set()
    a = application(tmp_path, "a", "A", Judge("yes", started, "a", "b"))
    a.model_layer().complete_sync("judge/x", [{"role": "user", "content": "hi"}])
    ours = [e for e in load_litellm().custom_provider_map if e["provider"] in ("judge", "scripted", "local")]
    assert ours and all(isinstance(e["custom_handler"], Dispatch) for e in ours)


def test_a_plugin_setting_is_typed_read_once_and_a_bad_value_names_its_variable(tmp_path):
    class Knobs:
        @evalyard.hookimpl
        def register_settings(self, register):
            register("size_mb", float, 8.0, env="KNOBS_SIZE_MB", help="how big")
            register("on", bool, False, env="KNOBS_ON")

    def app(**settings):
        return Application(Settings(entry_points=False, **settings), plugins=[("knobs", Knobs())])

    assert app().setting("knobs.size_mb") == 8.0 and app().setting("knobs.on") is False
    tuned = app(env={"KNOBS_SIZE_MB": "2.5", "KNOBS_ON": "yes"})
    assert tuned.setting("knobs.size_mb") == 2.5 and tuned.setting("knobs.on") is True
    assert app(env={"KNOBS_SIZE_MB": "2"}, plugin_settings={"knobs.size_mb": 4.0}).setting("knobs.size_mb") == 4.0
    assert vars(tuned.plugin_settings.of("knobs")) == {"size_mb": 2.5, "on": True}
    with pytest.raises(evalyard.InputError, match=r"^KNOBS_SIZE_MB='big': expected a number \(setting knobs.size_mb, float\)$"):
        app(env={"KNOBS_SIZE_MB": "big"}).registry
    with pytest.raises(evalyard.InputError, match="plugin setting 'knobs.sise_mb' is declared by no loaded plugin"):
        app(plugin_settings={"knobs.sise_mb": 1}).registry


def test_plugins_settings_lists_them_and_a_bad_value_exits_2(tmp_path):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "EVALYARD_EMBEDDING_CACHE_MB": "64"}
    env.pop("EVALYARD_LOAD_PLUGINS", None)
    listed = subprocess.run([sys.executable, "-c", "from evalyard.console import main; main()", "plugins", "--settings", "--json"], env=env,
                            capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["evalyard.scripted_log"]["env"] == "EVALYARD_SCRIPTED_LOG"
    if "embedding.cache_mb" in rows:  # evalyard-embedding installed
        assert rows["embedding.cache_mb"] | {"help": ""} == {
            "name": "embedding.cache_mb", "type": "float", "default": 512.0, "env": "EVALYARD_EMBEDDING_CACHE_MB",
            "value": 64.0, "help": "", "plugin": "embedding"}
    bad = subprocess.run([sys.executable, "-c", "from evalyard.console import main; main()", "plugins", "--settings"],
                         env={**env, "EVALYARD_SCRIPTED_LOG": "x", "EVALYARD_LOCAL_PARALLEL": "two"},
                         capture_output=True, text=True)
    if "local.parallel" in rows:
        assert bad.returncode == 2 and bad.stderr.strip().splitlines()[-1] == (
            "Error: EVALYARD_LOCAL_PARALLEL='two': expected a whole number (setting local.parallel, int)")
