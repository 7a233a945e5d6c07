"""No litellm and no network at import, or when no model is called."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def _run(code):
    # Without LITELLM_LOCAL_MODEL_COST_MAP in the environment: the layer must set it itself.
    env = {k: v for k, v in os.environ.items() if k != "LITELLM_LOCAL_MODEL_COST_MAP"}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                            timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_importing_the_layer_imports_neither_litellm_nor_jinja():
    out = _run("""
        import sys
        import evalyard.models, evalyard.prompting, evalyard.testing
        print(sorted(m for m in ("litellm", "jinja2", "openai", "httpx", "aiohttp") if m in sys.modules))
    """)
    assert out.strip() == "[]"


def test_no_socket_connect_at_import_or_without_model_calls():
    out = _run("""
        import sys
        connects = []
        def hook(event, args):
            if event == "socket.connect":
                connects.append(args[1])
        sys.addaudithook(hook)
        import evalyard.models, evalyard.prompting
        from evalyard.models import ModelLayer
        from evalyard.prompting import PromptLibrary, register_prompt_scorer
        layer = ModelLayer()
        library = PromptLibrary()
        for template in library.list():
            template.render({"id": "1", "input": "q", "candidate": "a", "reference": "r", "context": ["c"]},
                            structured=template.answer.kind == "json")
        register_prompt_scorer("polite", template="Is this polite? {{ candidate }}", answer="binary")
        layer.close()
        print(len(connects))
    """)
    assert out.strip() == "0"


def test_loading_litellm_stays_offline(tmp_path):
    """Loading litellm routes no provider of ours by itself; the first call to a scripted model
    routes the one the plugins registered, and nothing touches the network."""
    rules = tmp_path / "rules.jsonl"
    rules.write_text('{"content": "hello"}\n')
    out = _run(f"""
        import sys
        connects = []
        sys.addaudithook(lambda event, args: connects.append(args[1]) if event == "socket.connect" else None)
        from evalyard import Application
        from evalyard.models.providers import load_litellm
        litellm = load_litellm()
        before = "scripted" in litellm.provider_list
        layer = Application().model_layer()
        text = layer.complete_sync("scripted/{rules}", [{{"role": "user", "content": "hi"}}]).text
        layer.close()
        print(len(connects), litellm.suppress_debug_info, before, "scripted" in litellm.provider_list, text)
    """)
    assert out.split() == ["0", "True", "False", "True", "hello"]
