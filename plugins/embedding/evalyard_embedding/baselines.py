"""BERTScore rescale baselines: where they live and how to read them.

A baseline file is bert-score's format, so files work with both tools::

    LAYER,P,R,F
    0,0.51,0.51,0.49
    ...

one row per layer; the row of the layer in use gives b for P, R and F, and a
rescaled score is ``(score - b) / (1 - b)``.

This plugin ships ``data/all-MiniLM-L6-v2.csv`` for the bundled model,
computed by ``python -m evalyard_embedding.compute_baseline`` (see there).
bert-score's own baselines (``bert_score/rescale_baseline/<lang>/<model>.tsv``)
are used for the Hub models it covers.
"""

from __future__ import annotations

import csv
import importlib.util
from pathlib import Path

from .models import is_bundled

DATA_DIR = Path(__file__).resolve().parent / "data"
BUNDLED_BASELINE = DATA_DIR / "all-MiniLM-L6-v2.csv"


class BaselineNotFound(LookupError):
    pass


def find_baseline(model: str, lang: str = "en", explicit: str | None = None) -> Path:
    """The baseline file to use: ``explicit`` if given, ours for the bundled model,
    else bert-score's file for ``model`` in ``lang``."""
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise BaselineNotFound(f"baseline file {path} does not exist")
        return path
    if is_bundled(model):
        return BUNDLED_BASELINE
    spec = importlib.util.find_spec("bert_score")  # locate without importing it
    if spec is not None and spec.origin:
        candidate = Path(spec.origin).parent / "rescale_baseline" / lang / f"{model}.tsv"
        if candidate.is_file():
            return candidate
    raise BaselineNotFound(
        f"no rescale baseline for model {model!r} (lang {lang!r}); give baseline_path, or compute one with "
        "python -m evalyard_embedding.compute_baseline --model ... --output FILE"
    )


def read_baseline(path: Path, layer: int) -> tuple[float, float, float]:
    """(P, R, F) baseline of ``layer`` from a bert-score style CSV/TSV file.

    bert-score picks the row by position (row n = layer n); files are written
    in layer order, so reading the LAYER column gives the same row.
    """
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:
        try:
            if int(float(row["LAYER"])) == layer:
                return float(row["P"]), float(row["R"]), float(row["F"])
        except (KeyError, TypeError, ValueError):
            raise BaselineNotFound(f"{path}: expected columns LAYER,P,R,F") from None
    raise BaselineNotFound(f"{path} has no row for layer {layer}")
