"""Compute a BERTScore rescale baseline: ``python -m evalyard_embedding.compute_baseline``.

bert-score rescales a score x to ``(x - b) / (1 - b)``, where b is the average
score of *unrelated* sentence pairs, so that unrelated text lands near 0 and
the useful range spreads over [0, 1]. bert-score's authors took b from a
million random Common Crawl pairs; they publish no baseline for
all-MiniLM-L6-v2. This script computes one from
``data/baseline_sentences.txt``: 96 sentences written for this plugin in 12
topic groups. Every ordered pair of sentences from two *different* groups is
used (96 x 88 = 8,448 pairs, both directions, since P and R swap with them):
no sampling, so the result is deterministic. b is the mean P, R and F1 over
those pairs, for each layer 0..N (no idf), written in bert-score's CSV format.

The shipped ``data/all-MiniLM-L6-v2.csv`` is the output of running this with
the defaults. With ``--model`` it makes a baseline for any other model, to
pass as ``baseline_path``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .baselines import BUNDLED_BASELINE, DATA_DIR
from .models import BUNDLED_MODEL

SENTENCES_FILE = DATA_DIR / "baseline_sentences.txt"


def read_groups(path: Path) -> list[list[str]]:
    """Sentence groups from a file: '## name' starts a group, '#' lines are comments."""
    groups: list[list[str]] = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if line.startswith("##"):
            groups.append([])
        elif line and not line.startswith("#"):
            if not groups:
                raise ValueError(f"{path}: sentence before the first '## group' line: {line!r}")
            groups[-1].append(line)
    return [g for g in groups if g]


def unrelated_pairs(groups: list[list[str]]) -> list[tuple[str, str]]:
    """Every ordered (reference, candidate) pair whose sentences come from different groups."""
    return [
        (reference, candidate)
        for i, group in enumerate(groups)
        for reference in group
        for j, other in enumerate(groups)
        if i != j
        for candidate in other
    ]


def compute_baseline(
    model: str, pairs: list[tuple[str, str]], device: str | None = None, layers: list[int] | None = None
) -> list[tuple[int, float, float, float]]:
    """(layer, mean P, mean R, mean F1) for ``layers`` of ``model`` (default: all, 0..N)."""
    from .encoding import token_embeddings
    from .matching import precision_recall_f1
    from .models import get_model

    loaded = get_model(model, device)
    if loaded.num_layers is None:
        raise ValueError(f"cannot tell how many layers {model!r} has")
    texts = list(dict.fromkeys(t for pair in pairs for t in pair))
    rows = []
    for layer in layers if layers is not None else range(loaded.num_layers + 1):
        embedded = token_embeddings(loaded, texts, layer)
        scores = precision_recall_f1(
            [(embedded[r], embedded[c]) for r, c in pairs], loaded.special_token_ids, batch_size=256
        )
        p, r, f = scores.double().mean(dim=0).tolist()
        rows.append((layer, p, r, f))
    return rows


def write_csv(rows: list[tuple[int, float, float, float]], output: Path) -> None:
    lines = ["LAYER,P,R,F"] + [f"{layer},{p:.8f},{r:.8f},{f:.8f}" for layer, p, r, f in rows]
    output.write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=BUNDLED_MODEL, help="model name or directory (default: the bundled one)")
    parser.add_argument("--sentences", type=Path, default=SENTENCES_FILE, help="grouped sentence file")
    parser.add_argument("--output", type=Path, default=None, help=f"CSV to write (default: {BUNDLED_BASELINE.name} "
                        "in the package for the bundled model, else stdout)")
    parser.add_argument("--device", default=None)
    args = parser.parse_args(argv)

    pairs = unrelated_pairs(read_groups(args.sentences))
    rows = compute_baseline(args.model, pairs, args.device)
    output = args.output
    if output is None and args.model == BUNDLED_MODEL:
        output = BUNDLED_BASELINE
    if output is None:
        print("LAYER,P,R,F")
        for layer, p, r, f in rows:
            print(f"{layer},{p:.8f},{r:.8f},{f:.8f}")
    else:
        write_csv(rows, output)
        print(f"{len(pairs)} unrelated pairs -> {output}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
