"""evalyard-local: GGUF models run in process through llama.cpp (xllamacpp), as the
litellm provider ``local/...``, so judges and generators work offline.

Named models (``local/smollm2-135m``, ``local/qwen2.5-coder-1.5b``) are installed with
``evalyard models install NAME`` and checked against a pinned sha256; any GGUF file works
as ``local/PATH.gguf``.

Other plugins (evalyard-ray's model actors) use the names below only. Importing them is as
light as loading the plugin: litellm and llama.cpp load at a model's first call.
"""

from .engine import Engine, LoadSettings
from .files import ModelFileError
from .provider import LocalProvider, bad_request, locate

__version__ = "0.1.0"
__all__ = ["Engine", "LoadSettings", "LocalProvider", "ModelFileError", "bad_request", "locate"]
