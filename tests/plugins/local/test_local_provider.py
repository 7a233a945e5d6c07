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
        "supports_schema": True, "supports_logprobs": True, "supports_seed": True, "supports_tools": True,
        "reasoning": False, "concurrency": 1}
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


def test_a_tool_round_goes_to_llama_cpp_and_its_calls_come_back_in_openai_shape():
    from evalyard_local.provider import build_request, to_response

    call = {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]
    request, _ = build_request("qwen2.5-coder-1.5b", [
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "14C rain"}], {"tools": tools, "tool_choice": "auto"})
    assert request["tools"] == tools and request["tool_choice"] == "auto"
    assert request["messages"] == [{"role": "user", "content": "Weather in Oslo?"},
                                   {"role": "assistant", "content": "", "tool_calls": [call]},
                                   {"role": "tool", "content": "14C rain", "tool_call_id": "c1"}]
    plain, _ = build_request("qwen2.5-coder-1.5b", MESSAGES, {})
    assert plain["messages"] == MESSAGES  # a call without tools is sent exactly as before

    answer = {"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"type": "function", "id": "xyz", "function": {"name": "get_weather",
                                                                      "arguments": '{"city":"Paris"}'}}]}}],
        "usage": {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}}
    message = to_response("qwen2.5-coder-1.5b", answer).choices[0].message
    assert message.content == "" and len(message.tool_calls) == 1
    assert message.tool_calls[0].id == "xyz" and message.tool_calls[0].function.name == "get_weather"
    assert message.tool_calls[0].function.arguments == '{"city":"Paris"}'


WEATHER = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize("written", [
    '```json\n{\n  "name": "get_weather",\n  "arguments": {\n    "city": "Paris"\n  }\n}\n```',  # qwen2.5-coder's way
    '{"name": "get_weather", "arguments": {"city": "Paris"}}',
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
])
def test_a_call_the_model_wrote_as_text_is_read_as_a_tool_call(written):
    from evalyard_local.provider import calls_written_as_text, read_calls

    assert calls_written_as_text(written, WEATHER) == [
        {"type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]
    result = {"choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": written}}]}
    read = read_calls(result, {"tools": WEATHER})["choices"][0]
    assert read["finish_reason"] == "tool_calls" and read["message"]["tool_calls"][0]["function"]["name"] == "get_weather"


@pytest.mark.parametrize("written", [
    "It is sunny in Paris.",
    'Here it is: {"name": "get_weather", "arguments": {"city": "Paris"}}',  # prose around it: the model's text
    '{"name": "get_time", "arguments": {"city": "Paris"}}',  # a tool that was not sent
    '{"name": "get_weather", "arguments": "Paris"}',  # arguments that are not an object
    '{"name": "get_weather", "arguments": {"city": "Paris"}, "note": 1}',
    '```json\n{"name": "get_weather", "arguments": {"city": \n```',  # cut off
])
def test_any_other_reply_stays_the_models_text(written):
    from evalyard_local.provider import calls_written_as_text, read_calls

    assert calls_written_as_text(written, WEATHER) is None
    result = {"choices": [{"index": 0, "message": {"role": "assistant", "content": written}}]}
    assert read_calls(result, {"tools": WEATHER})["choices"][0]["message"]["content"] == written
    # without tools in the request nothing is read as a call, whatever the text
    call = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
    plain = {"choices": [{"index": 0, "message": {"role": "assistant", "content": call}}]}
    assert read_calls(plain, {})["choices"][0]["message"]["content"] == call
