"""The local/ provider through litellm and the model layer: errors are recorded errors with the
reason, calls queue on one loaded instance, load settings are not request parameters."""

from __future__ import annotations

import asyncio

import pytest

from evalyard import Application, Settings
from evalyard.models import ModelCallError
from local_helpers import SMOL, layer_for

MESSAGES = [{"role": "user", "content": "Say hello."}]


@pytest.fixture
def layer():
    layer = layer_for(SMOL)
    yield layer
    layer.close()


def call(layer, model, **params):
    return layer.run_sync(layer.complete(model, MESSAGES, params={"temperature": 0, "max_tokens": 3, **params},
                                         no_cache=True))


def test_a_path_to_a_gguf_file_is_a_model(layer, smol_path):
    completion = call(layer, f"local/{smol_path}")
    assert completion.text and completion.usage.completion_tokens >= 1


@pytest.mark.parametrize("name, message", [
    ("no-such-model", "not a named local model"),
    ("/nowhere/model.gguf", "cannot read /nowhere/model.gguf"),
])
def test_unusable_model_names_fail_once_with_the_reason(layer, name, message):
    with pytest.raises(ModelCallError, match=message) as caught:
        call(layer, f"local/{name}")
    assert caught.value.attempts == 1 and not caught.value.retryable


def test_a_file_that_is_not_gguf_is_refused(layer, tmp_path):
    fake = tmp_path / "notes.gguf"
    fake.write_text("not a model")
    with pytest.raises(ModelCallError, match="is not a GGUF file"):
        call(layer, f"local/{fake}")


def test_a_named_model_that_is_not_installed_says_how_to_install_it(layer, temp_models):
    with pytest.raises(ModelCallError, match=r"evalyard models install qwen2.5-coder-1.5b"):
        call(layer, "local/qwen2.5-coder-1.5b")


def test_an_unknown_parameter_is_an_error_not_silently_dropped(layer, smol_path):
    with pytest.raises(ModelCallError, match="do not take the parameter 'frobnicate'"):
        call(layer, SMOL, frobnicate=1)


def test_a_prompt_longer_than_the_context_is_a_clear_error(smol_path):
    from evalyard.models import ModelSettings

    # n_ctx is a load setting (here from the model's settings, as a suite's models: section gives it).
    model = f"local/{smol_path}"
    layer = Application().model_layer(settings={model: ModelSettings(params={"n_ctx": 256})})
    with pytest.raises(ModelCallError, match="exceeds the available context size.*n_ctx"):
        layer.run_sync(layer.complete(model, [{"role": "user", "content": "word " * 600}],
                                      params={"max_tokens": 2}))


def test_concurrent_calls_queue_on_one_loaded_instance(layer, smol_path):
    from evalyard_local.plugin import ENGINE

    async def many():
        return await asyncio.gather(*(layer.complete(SMOL, [{"role": "user", "content": f"Count to {n}."}],
                                                     params={"temperature": 0, "max_tokens": 4}, no_cache=True)
                                      for n in range(4)))

    completions = layer.run_sync(many())
    assert all(c.text for c in completions)
    loaded = ENGINE.loaded()[SMOL.removeprefix("local/")]
    assert loaded.settings.n_parallel == 1 and loaded.path == smol_path


def test_capabilities_say_what_the_layer_should_assume(smol_path, monkeypatch):
    assert Application().model_providers["local"].capabilities(SMOL) == {
        "supports_schema": True, "supports_logprobs": True, "supports_seed": True, "reasoning": False,
        "concurrency": 1}
    monkeypatch.setenv("EVALYARD_LOCAL_PARALLEL", "2")  # read by an application made after
    assert Application().model_providers["local"].capabilities(SMOL)["concurrency"] == 2
    two = Application(Settings.from_env(plugin_settings={"local.parallel": 3}))
    assert two.model_providers["local"].capabilities(SMOL)["concurrency"] == 3


def test_judges_on_a_local_model_answer_without_reasoning_unless_asked():
    from local_helpers import layer_for

    from evalyard.prompting import register_prompt_scorer

    layer = layer_for(SMOL)
    quiet = register_prompt_scorer("quiet", template="correctness")(model=SMOL)
    quiet.models = layer
    asked = register_prompt_scorer("asked", template="correctness")(model=SMOL, reasoning=True)
    asked.models = layer
    elsewhere = register_prompt_scorer("elsewhere", template="correctness")(model="openai/gpt-4o-mini")
    elsewhere.models = layer
    assert (quiet.reasoning(), asked.reasoning(), elsewhere.reasoning()) == (False, True, True)


def test_one_warning_for_a_reasoning_or_choice_judge_on_a_small_local_model(caplog):
    from local_helpers import layer_for

    from evalyard.prompting import register_prompt_scorer

    layer = layer_for(SMOL)
    made = [register_prompt_scorer(name, template=template)(model=SMOL, **options)
            for name, template, options in (("plain", "correctness", {}), ("reasons", "correctness", {"reasoning": True}),
                                            ("picks", "helpfulness", {}))]
    with caplog.at_level("WARNING", logger="evalyard"):
        for scorer in made + made:  # set up twice: still one warning each
            scorer.models = layer
            scorer.check_ready()
    warned = [r.getMessage() for r in caplog.records if "small model" in r.getMessage()]
    assert len(warned) == 2
    assert "reasons" in warned[0] and "reasoning" in warned[0] and "picks" in warned[1] and "choice" in warned[1]


def test_the_provider_registers_through_the_hook_so_the_allow_list_applies(monkeypatch):
    """Importing the plugin registers nothing process-wide; an application that does not load
    the plugin has no local/ provider, one that does has the plugin's, on its models directory
    and the process's one engine."""
    import evalyard
    from evalyard_local import LocalProvider
    from evalyard_local.plugin import ENGINE

    provider = evalyard.Application().model_providers["local"]
    assert isinstance(provider, LocalProvider) and provider.engine is ENGINE
    assert provider.models_dir == evalyard.Settings.from_env().local_models_dir()
    monkeypatch.setenv("EVALYARD_LOAD_PLUGINS", "")
    assert "local" not in evalyard.Application().model_providers


def test_a_run_judged_by_a_model_that_is_not_installed_is_refused_before_it_is_stored(temp_models, isolated_home):
    import evalyard
    from evalyard.prompting import register_prompt_scorer

    judge = register_prompt_scorer("local_test_refused", template="correctness")
    cases = [{"id": "a", "question": "2+2?", "reference": "4", "response": "4"}]
    with pytest.raises(evalyard.InputError, match=r"^local model qwen2.5-coder-1.5b: not installed \(run "
                                                  r"`evalyard models install qwen2.5-coder-1.5b`\)$"):
        evalyard.evaluate(cases, [judge], judge_model="local/qwen2.5-coder-1.5b")
    assert not (isolated_home / "evalyard.db").exists()
