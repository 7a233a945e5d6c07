"""What the three embedding scorers share: model options and access to the shared model.

Light on purpose: scorer classes are imported (and configured) when the plugin
registers, long before anything is scored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from evalyard import Scorer

from .models import BUNDLED_MODEL, LoadedModel, get_model

if TYPE_CHECKING:
    from evalyard import Runtime


@dataclass
class ModelOptions:
    model: str = field(
        default=BUNDLED_MODEL,
        metadata={
            "help": "local model directory or Hugging Face model name (taken from the local cache: nothing is "
            "downloaded unless HF_HUB_OFFLINE=0); default: the bundled all-MiniLM-L6-v2"
        },
    )
    device: str | None = field(
        default=None, metadata={"help": "torch device (cpu, cuda, cuda:1, mps); default: cuda if available, else cpu"}
    )
    encode_batch_size: int = field(default=64, metadata={"help": "texts per forward pass of the model"})

    def __post_init__(self) -> None:
        if self.encode_batch_size < 1:
            raise ValueError(f"encode_batch_size must be at least 1, got {self.encode_batch_size}")
        if not self.model.strip():
            raise ValueError("model must not be empty")


class EmbeddingScorer(Scorer):
    """Base of this plugin's scorers.

    ``batch_size`` (cases per ``score_batch`` call) is large so that the model
    sees full batches and repeated texts within a call are embedded once.
    """

    executor = "thread"
    batch_size = 256
    # `batch_size` is the platform's (cases per batch); the model's own is `encode_batch_size`
    renamed_options = {"batch_size": "encode_batch_size"}

    config: Any
    #: the application's ``embedding.cache_mb`` and ``embedding.offline`` (set by ``setup``)
    cache_mb: float | None = None
    offline: bool = True

    def setup(self, runtime: Runtime) -> None:
        if runtime is not None:  # set up by hand: the defaults
            self.cache_mb = runtime.setting("embedding.cache_mb")
            self.offline = runtime.setting("embedding.offline")

    def loaded_model(self) -> LoadedModel:
        """The process-wide model for this config (loaded on first use, then shared)."""
        return get_model(self.config.model, self.config.device, cache_mb=self.cache_mb, offline=self.offline)

    def resources(self) -> dict[str, float]:
        # A worker on a cluster (evalyard-ray): a GPU when the config asks for CUDA, else one CPU.
        return {"gpu": 1} if (self.config.device or "").startswith("cuda") else {}

    def close(self) -> None:
        # The model stays loaded on purpose: other scorers and later runs in this
        # process reuse it (and its embedding cache).
        pass


def is_blank(text: str) -> bool:
    return not text.strip()
