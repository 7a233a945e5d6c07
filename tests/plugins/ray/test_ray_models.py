"""Local model judges served from Ray model actors (``EVALYARD_RAY_LOCAL_MODELS``) on the
session's cluster (see conftest.py): the same values, usage and cache keys as in process, and a
node that cannot serve the model refused before the run is stored."""

from __future__ import annotations

from pathlib import Path

import pytest

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install evalyard-ray)")
pytest.importorskip("evalyard_local", reason="evalyard-local is not installed (pip install -e plugins/local)")

from ray_helpers import runs  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_local_model_judge_calls_run_on_model_actors_with_in_process_values(tmp_path, ray_cluster, ray_app, smol_path,
                                                                            monkeypatch, isolated_home):
    """EVALYARD_RAY_LOCAL_MODELS: the same judge run with smollm2-135m answered by model actors on
    both nodes gives the in-process run's values, usage and cost; its cache entries are the same
    ones (a later run is answered from the in-process run's cache without reaching an actor)."""
    import evalyard
    from evalyard import Application, Settings

    # a model actor has one CPU, so llama.cpp one thread: the in-process run loads it the same way
    monkeypatch.setenv("EVALYARD_LOCAL_THREADS", "1")
    monkeypatch.setenv("EVALYARD_RAY_MODEL_ACTORS", "2")
    claims = [("eiffel", "The Eiffel Tower was completed in 1889.", "The Eiffel Tower was completed in 1889."),
              ("curie", "Marie Curie was born in Warsaw.", "Marie Curie was born in Berlin.")]
    suite = tmp_path / "judged.yaml"  # judged by the example suite's `grounded` template
    suite.write_text(f"name: judged\nprompts: [{EXAMPLES / 'prompts'}]\nscorers: [grounded]\ncases:\n" + "".join(
        f"  - {{id: {i}, context: [{source}], candidate: {claim}}}\n" for i, source, claim in claims))
    judge = "local/smollm2-135m"

    def without_reuse(usage):
        # How much of a prompt a slot still held from its last call (prefix reuse) depends on which
        # calls that slot served before: one slot in process, two actors' slots here.
        return {key: without_reuse(value) if isinstance(value, dict) else value
                for key, value in usage.items() if key != "cached_prompt_tokens"}

    def outcome(run):
        return {(r["case_id"], r["scorer"]): (r["value"], r["label"], r["details"], r["error"],
                                              without_reuse(r["usage"])) for r in run.results}

    # two applications side by side: one runs local/ in process, the other (the plugin's setting on,
    # as EVALYARD_RAY_LOCAL_MODELS=1 does) on the actors: evalyard-ray takes over local/ in it only
    in_process_app = Application()
    on_actors = Application(Settings.from_env(plugin_settings={"ray.local_models": True}))
    in_process = evalyard.evaluate(str(suite), app=in_process_app, judge_model=judge)  # its answers go to the cache
    provider = on_actors.model_providers["local"]
    assert provider is not in_process_app.model_providers["local"]
    try:
        routed = evalyard.evaluate(str(suite), app=on_actors, judge_model=judge, use_cache=False)
        served = provider.engine.report()
        cached = evalyard.evaluate(str(suite), app=on_actors, judge_model=judge)
        served_after = provider.engine.report()
    finally:
        provider.engine.close()
    assert routed.status == "completed" and routed.scorers["grounded"]["errors"] == 0, [r["error"] for r in routed.results]
    assert outcome(routed) == outcome(in_process)
    calls = in_process.usage["calls"]
    assert without_reuse(routed.usage) == without_reuse(in_process.usage) and calls >= len(claims)
    assert routed.usage["cost"] == 0.0 and routed.usage["cache_hits"] == 0
    # the calls ran in the actors' llama.cpp, one actor on each node
    assert {a["node_id"] for a in served} == {node.node_id for node in ray_cluster.nodes}
    assert sum(a["calls"].get("smollm2-135m", 0) for a in served) == calls
    assert all(a["calls"].get("smollm2-135m", 0) >= 1 for a in served)
    # the same cache keys as in process: all hits, no actor reached
    assert cached.usage["cache_hits"] == cached.usage["calls"] == calls
    verdicts = lambda run: {key: value[:2] + value[3:4] for key, value in outcome(run).items()}  # noqa: E731
    assert verdicts(cached) == verdicts(in_process)
    assert [a["calls"] for a in served_after] == [a["calls"] for a in served]


def test_a_node_without_the_model_file_is_refused_before_the_run_is_stored(tmp_path, ray_cluster, ray_app,
                                                                          qwen_models, isolated_home):
    import evalyard
    from evalyard import Application, Settings

    empty = tmp_path / "no-models"
    empty.mkdir()
    bare = ray_cluster.add_node(models=empty)
    suite = tmp_path / "judged.yaml"
    suite.write_text(f"name: judged\nprompts: [{EXAMPLES / 'prompts'}]\nscorers: [grounded]\ncases:\n"
                     "  - {id: a, context: [Paris is in France.], candidate: Paris is in France.}\n")
    on_actors = Application(Settings.from_env(plugin_settings={"ray.local_models": True}))
    provider = on_actors.model_providers["local"]
    try:
        with pytest.raises(evalyard.InputError) as refused:
            evalyard.evaluate(str(suite), app=on_actors, judge_model="local/qwen2.5-coder-1.5b")
    finally:
        provider.engine.close()
        ray_cluster.remove(bare)
    assert str(refused.value) == (
        f"Ray node {bare.node_ip_address} ({bare.node_id[:8]}): local model qwen2.5-coder-1.5b: not installed (run "
        "`evalyard models install qwen2.5-coder-1.5b`) (on that node: a model actor loads the model from the "
        "node's own files)")
    assert runs(isolated_home / "evalyard.db") == []
    assert provider.engine.report() == []  # refused before any model actor started
