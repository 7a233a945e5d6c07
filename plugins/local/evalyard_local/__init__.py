"""evalyard-local: GGUF models run in process through llama.cpp (xllamacpp), as the
litellm provider ``local/...``, so judges and generators work offline.

Named models (``local/smollm2-135m``, ``local/qwen2.5-coder-1.5b``) are installed with
``evalyard models install NAME`` and checked against a pinned sha256; any GGUF file works
as ``local/PATH.gguf``.
"""

__version__ = "0.1.0"
