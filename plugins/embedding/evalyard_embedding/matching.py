"""BERTScore precision, recall and F1 from cached token embeddings.

The greedy matching itself is bert-score's own ``greedy_cos_idf``; this module
only feeds it (batches of pairs, token weights: idf or bert-score's defaults)
and applies bert-score's baseline rescaling. Imported only when a scorer runs.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from typing import Iterable, Mapping, Sequence

import torch

from .encoding import TokenEmbedding


def idf_weights(id_sets: Iterable[Iterable[int]]) -> tuple[dict[int, float], float]:
    """bert-score's idf: ``log((M + 1) / (df + 1))`` per token over M documents.

    Returns the table and the weight of a token seen in none of them
    (``log(M + 1)``), as ``bert_score.utils.get_idf_dict`` does (without its
    process pool, which costs more than it saves here).
    """
    counts: Counter[int] = Counter()
    documents = 0
    for ids in id_sets:
        counts.update(set(ids))
        documents += 1
    table = {token: math.log((documents + 1) / (count + 1)) for token, count in counts.items()}
    return table, math.log(documents + 1)


def token_weights(
    embedding: TokenEmbedding,
    idf: tuple[Mapping[int, float], float] | None,
    special_ids: frozenset[int],
) -> torch.Tensor:
    if idf is None:
        # bert-score without idf: every token counts 1, [CLS] and [SEP] count 0
        values = [0.0 if token in special_ids else 1.0 for token in embedding.ids]
    else:
        table, unseen = idf
        values = [table.get(token, unseen) for token in embedding.ids]
    return torch.tensor(values, dtype=torch.float)


def precision_recall_f1(
    pairs: Sequence[tuple[TokenEmbedding, TokenEmbedding]],
    special_ids: frozenset[int],
    idf: tuple[Mapping[int, float], float] | None = None,
    batch_size: int = 64,
) -> torch.Tensor:
    """P, R, F1 for each (reference, candidate) pair: a tensor of shape (pairs, 3).

    Why pairs are grouped by shape instead of padded: bert-score pads a batch
    and zeroes the similarity of padded positions, so a token whose best real
    match has a negative cosine "matches" the padding at 0 instead. A pair's
    score then depends on which other pairs share its batch (with MiniLM's last
    layer, where unrelated tokens often have negative cosines, by up to ~0.003).
    Pairs of identical shape need no padding, so every value here equals what
    bert-score gives for that pair scored on its own, whatever the batching.

    Neither text may be empty: bert-score defines an empty side as 0 with a
    warning on stderr; callers decide what an empty text means.
    """
    from bert_score.utils import greedy_cos_idf

    result = torch.zeros((len(pairs), 3))
    by_shape: dict[tuple[int, int], list[int]] = defaultdict(list)
    for index, (reference, candidate) in enumerate(pairs):
        by_shape[(len(reference.ids), len(candidate.ids))].append(index)
    with torch.inference_mode():
        for indexes in by_shape.values():
            for start in range(0, len(indexes), max(1, batch_size)):
                batch = indexes[start : start + batch_size]
                refs = [pairs[i][0] for i in batch]
                cands = [pairs[i][1] for i in batch]
                # greedy_cos_idf normalises its inputs in place: stack makes fresh tensors
                ref_vectors = torch.stack([e.vectors for e in refs]).float()
                cand_vectors = torch.stack([e.vectors for e in cands]).float()
                ref_mask = torch.ones(ref_vectors.shape[:2], dtype=torch.long)
                cand_mask = torch.ones(cand_vectors.shape[:2], dtype=torch.long)
                ref_weights = torch.stack([token_weights(e, idf, special_ids) for e in refs])
                cand_weights = torch.stack([token_weights(e, idf, special_ids) for e in cands])
                precision, recall, f1 = greedy_cos_idf(
                    ref_vectors, ref_mask, ref_weights, cand_vectors, cand_mask, cand_weights
                )
                result[batch] = torch.stack((precision, recall, f1), dim=-1).float().cpu()
    return result


def rescale(scores: torch.Tensor, baseline: Sequence[float]) -> torch.Tensor:
    """bert-score's rescaling: ``(score - b) / (1 - b)`` for P, R and F1 separately."""
    b = torch.tensor(list(baseline), dtype=scores.dtype)
    return (scores - b) / (1 - b)
