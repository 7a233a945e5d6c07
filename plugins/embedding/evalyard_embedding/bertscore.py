"""The ``bertscore`` scorer: BERTScore of a candidate against its reference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from evalyard import Case, Score

from .base import EmbeddingScorer, ModelOptions, is_blank
from .models import BUNDLED_DEFAULT_LAYER, is_bundled

Weighting = Literal["f1", "precision", "recall", "arthur_compat"]


class BertScore(EmbeddingScorer):
    name = "bertscore"
    description = (
        "BERTScore (bert-score library) of the candidate against the reference: greedy matching of "
        "contextual token embeddings; precision, recall and F1 in details, value F1 by default"
    )
    requires = ("reference", "candidate")
    version = "1"
    higher_is_better = True

    @dataclass
    class Config(ModelOptions):
        layer: int | None = field(
            default=None,
            metadata={
                "help": "layer whose token embeddings are matched; default: 6 for the bundled model, "
                "bert-score's tuned layer for models in its table; required for other models"
            },
        )
        idf: bool = field(
            default=False,
            metadata={"help": "weight tokens by idf (from idf_file, else from the references of each batch)"},
        )
        idf_file: str | None = field(
            default=None,
            metadata={"help": "text file, one document per line, to compute idf from (stable across batches)"},
        )
        rescale_with_baseline: bool = field(
            default=False, metadata={"help": "rescale P, R and F1 with a baseline: (x - b) / (1 - b)"}
        )
        baseline_path: str | None = field(
            default=None,
            metadata={
                "help": "baseline CSV (LAYER,P,R,F); default: the shipped one for the bundled model, "
                "bert-score's own for models it covers"
            },
        )
        lang: str = field(default="en", metadata={"help": "language, only to find bert-score's baseline files"})
        weighting: Weighting = field(
            default="f1",
            metadata={
                "help": "the value: f1, precision, recall, or arthur_compat "
                "(precision_weight*P + (1 - precision_weight)*R, Arthur Bench's formula)"
            },
        )
        precision_weight: float = field(
            default=0.1, metadata={"help": "weight of precision for weighting=arthur_compat (Arthur Bench: 0.1)"}
        )

        def __post_init__(self) -> None:
            super().__post_init__()
            if self.layer is not None and self.layer < 0:
                raise ValueError(f"layer must be 0 or more, got {self.layer}")
            if not 0.0 <= self.precision_weight <= 1.0:
                raise ValueError(f"precision_weight must be between 0 and 1, got {self.precision_weight}")

    config: Config

    def __init__(self, config=None, **options) -> None:
        super().__init__(config, **options)
        self._idf_from_file = None  # (table, unseen weight), computed on first use

    # -- settings that need the model or bert-score ------------------------------
    def resolve_layer(self, num_layers: int | None) -> int:
        if self.config.layer is not None:
            return self.config.layer
        if is_bundled(self.config.model):
            return BUNDLED_DEFAULT_LAYER
        from bert_score.utils import model2layers

        if self.config.model in model2layers:
            return model2layers[self.config.model]
        raise ValueError(
            f"bertscore: model {self.config.model!r} is not in bert-score's layer table; set layer "
            f"(0..{num_layers if num_layers is not None else 'number of layers'}), e.g. layer={num_layers}"
        )

    def baseline(self, layer: int) -> tuple[float, float, float] | None:
        if not self.config.rescale_with_baseline:
            return None
        from .baselines import find_baseline, read_baseline

        path = find_baseline(self.config.model, self.config.lang, self.config.baseline_path)
        return read_baseline(path, layer)

    def idf_table(self, loaded, reference_ids: list[tuple[int, ...]]):
        """Token weights for this batch: None (no idf), from ``idf_file``, or from the references."""
        from .encoding import bertscore_token_ids
        from .matching import idf_weights

        if not self.config.idf:
            return None
        if self.config.idf_file:
            if self._idf_from_file is None:
                lines = Path(self.config.idf_file).expanduser().read_text(encoding="utf-8").splitlines()
                documents = [line for line in lines if line.strip()]
                self._idf_from_file = idf_weights(bertscore_token_ids(loaded, d)[0] for d in documents)
            return self._idf_from_file
        # bert-score's score(idf=True) takes idf from the references it is given
        return idf_weights(reference_ids)

    # -- scoring -------------------------------------------------------------
    def score_batch(self, cases: list[Case]) -> list[Score]:
        results: list[Score | None] = [None] * len(cases)
        todo: list[int] = []
        for index, case in enumerate(cases):
            if case.reference is None or case.candidate is None:
                results[index] = Score.failure("bertscore needs both a reference and a candidate")
            elif is_blank(case.reference):
                results[index] = Score.failure("reference is empty: nothing to compare the candidate with")
            else:
                todo.append(index)
        if todo:
            try:
                scores = self._score_pairs([cases[i] for i in todo])
            except Exception as exc:  # model missing, bad layer, bad baseline: every case fails alike
                scores = [Score.failure(exc) for _ in todo]
            for index, score in zip(todo, scores):
                results[index] = score
        return results  # type: ignore[return-value]  # every slot is filled above

    def _score_pairs(self, cases: list[Case]) -> list[Score]:
        """Scores for cases that all have a non-blank reference and a candidate."""
        import torch

        from .encoding import token_embeddings
        from .matching import precision_recall_f1, rescale

        loaded = self.loaded_model()
        layer = self.resolve_layer(loaded.num_layers)
        baseline = self.baseline(layer)
        references = [c.reference for c in cases]
        candidates = [c.candidate for c in cases]
        embedded = token_embeddings(loaded, references + candidates, layer, self.config.encode_batch_size)
        idf = self.idf_table(loaded, [embedded[r].ids for r in references])
        special = loaded.special_token_ids

        def has_content(text: str) -> bool:  # more than [CLS] [SEP]
            return any(token not in special for token in embedded[text].ids)

        matched = [i for i, c in enumerate(cases) if has_content(c.reference) and has_content(c.candidate)]
        # bert-score's definition: a candidate without tokens scores 0 (before rescaling)
        prf = torch.zeros((len(cases), 3))
        if matched:
            pairs = [(embedded[cases[i].reference], embedded[cases[i].candidate]) for i in matched]
            prf[matched] = precision_recall_f1(pairs, special, idf, self.config.encode_batch_size)
        if baseline is not None:
            prf = rescale(prf, baseline)

        scores = []
        for case, (precision, recall, f1) in zip(cases, prf.tolist()):
            if not has_content(case.reference):
                scores.append(Score.failure("reference has no tokens the model can read"))
                continue
            details = {"precision": precision, "recall": recall, "f1": f1}
            if baseline is not None:
                details["rescaled"] = True
            if not has_content(case.candidate):
                details["empty_candidate"] = True
            truncated = [name for name, text in (("reference", case.reference), ("candidate", case.candidate))
                         if embedded[text].truncated]
            if truncated:
                details["truncated"] = truncated
            scores.append(Score(value=self._value(precision, recall, f1), details=details))
        return scores

    def _value(self, precision: float, recall: float, f1: float) -> float:
        weighting = self.config.weighting
        if weighting == "precision":
            return precision
        if weighting == "recall":
            return recall
        if weighting == "arthur_compat":
            return self.config.precision_weight * precision + (1 - self.config.precision_weight) * recall
        return f1
