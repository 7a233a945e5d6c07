"""Turn texts into embeddings: token-level (for BERTScore) and pooled sentence vectors.

Both paths share the same recipe for speed:

- each distinct text is embedded once and kept in the model's cache;
- texts still to embed are sorted by token count and cut into batches, so a
  batch pads to nearly its own length instead of to the longest text overall;
- forward passes of one model are serialised (see ``LoadedModel.forward_lock``).

Imported only when a scorer runs: it imports torch at module level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import torch

from .models import LoadedModel


@dataclass(frozen=True, slots=True)
class TokenEmbedding:
    """One text's token ids and their contextual vectors at one layer (shape tokens x dim)."""

    ids: tuple[int, ...]
    vectors: torch.Tensor
    truncated: bool


# -- tokenisation ---------------------------------------------------------


def bertscore_token_ids(loaded: LoadedModel, text: str) -> tuple[list[int], bool]:
    """Token ids exactly as bert-score makes them (``bert_score.utils.sent_encode``).

    Returns the ids and whether truncation at the model's limit cut the text.
    bert-score 0.3.13 cannot encode an empty text with transformers 5 (it calls a
    removed tokenizer method), so an empty text becomes just the special tokens,
    which is what bert-score meant.
    """
    from bert_score.utils import sent_encode

    tokenizer = loaded.tokenizer
    if not text.strip():
        return list(tokenizer("", add_special_tokens=True)["input_ids"]), False
    ids = sent_encode(tokenizer, text)
    truncated = False
    if len(ids) >= tokenizer.model_max_length:
        # Rare (very long texts): tokenise once more, untruncated, only to report it.
        truncated = len(tokenizer(text.strip(), add_special_tokens=True)["input_ids"]) > len(ids)
    return ids, truncated


def sentence_token_ids(loaded: LoadedModel, texts: list[str]) -> list[list[int]]:
    """Token ids as sentence-transformers makes them: stripped text, truncated at max_seq_length."""
    encoded = loaded.tokenizer(
        [text.strip() for text in texts],
        add_special_tokens=True,
        truncation=True,
        max_length=loaded.sentence_max_length,
    )
    return [list(ids) for ids in encoded["input_ids"]]


# -- forward passes ----------------------------------------------------------


def _length_sorted_batches(id_lists: list[list[int]], batch_size: int) -> Iterable[list[int]]:
    """Indexes of ``id_lists`` in batches of similar length, longest first."""
    order = sorted(range(len(id_lists)), key=lambda i: len(id_lists[i]), reverse=True)
    for start in range(0, len(order), max(1, batch_size)):
        yield order[start : start + batch_size]


def _pad(loaded: LoadedModel, id_lists: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
    pad_id = loaded.tokenizer.pad_token_id or 0
    longest = max(len(ids) for ids in id_lists)
    input_ids = torch.full((len(id_lists), longest), pad_id, dtype=torch.long)
    mask = torch.zeros((len(id_lists), longest), dtype=torch.long)
    for row, ids in enumerate(id_lists):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        mask[row, : len(ids)] = 1
    return input_ids.to(loaded.device), mask.to(loaded.device)


def _hidden_states(loaded: LoadedModel, input_ids: torch.Tensor, mask: torch.Tensor, layer: int | None) -> torch.Tensor:
    """Output of ``layer`` (None or the last layer: the model's final output).

    bert-score drops the layers above ``layer`` and takes the final output; for
    BERT-style encoders that equals ``hidden_states[layer]`` of the whole model,
    which lets every scorer share one copy of the model.
    """
    last = layer is None or layer == loaded.num_layers
    with loaded.forward_lock, torch.inference_mode():
        output = loaded.model(input_ids, attention_mask=mask, output_hidden_states=not last)
    return output[0] if last else output.hidden_states[layer]


def _split_cached(texts: Iterable[str], lookup: Callable[[str], Any]) -> tuple[dict[str, Any], list[str]]:
    """Distinct texts (in order) split into those the cache holds, with their values, and those to embed."""
    found: dict[str, Any] = {}
    missing: list[str] = []
    for text in dict.fromkeys(texts):
        cached = lookup(text)
        if cached is None:
            missing.append(text)
        else:
            found[text] = cached
    return found, missing


def token_embeddings(
    loaded: LoadedModel, texts: Iterable[str], layer: int, batch_size: int = 64
) -> dict[str, TokenEmbedding]:
    """Token embeddings at ``layer`` for each distinct text, from the cache where possible."""
    if loaded.num_layers is not None and not 0 <= layer <= loaded.num_layers:
        raise ValueError(f"layer must be between 0 and {loaded.num_layers} for {loaded.name}, got {layer}")
    result, missing = _split_cached(texts, lambda text: loaded.token_cache.get((layer, text)))
    if not missing:
        return result
    encoded = [bertscore_token_ids(loaded, text) for text in missing]
    id_lists = [ids for ids, _ in encoded]
    for batch in _length_sorted_batches(id_lists, batch_size):
        input_ids, mask = _pad(loaded, [id_lists[i] for i in batch])
        hidden = _hidden_states(loaded, input_ids, mask, layer)
        for row, index in enumerate(batch):
            ids, truncated = encoded[index]
            # clone: a slice would keep the whole padded batch alive in the cache
            vectors = hidden[row, : len(ids)].clone()
            embedding = TokenEmbedding(tuple(ids), vectors, truncated)
            loaded.token_cache.put((layer, missing[index]), embedding, vectors.nelement() * vectors.element_size())
            result[missing[index]] = embedding
    return result


def sentence_embeddings(loaded: LoadedModel, texts: Iterable[str], batch_size: int = 64) -> dict[str, torch.Tensor]:
    """L2-normalised mean-pooled embedding of each distinct text (sentence-transformers' recipe)."""
    result, missing = _split_cached(texts, loaded.sentence_cache.get)
    if not missing:
        return result
    id_lists = sentence_token_ids(loaded, missing)
    for batch in _length_sorted_batches(id_lists, batch_size):
        input_ids, mask = _pad(loaded, [id_lists[i] for i in batch])
        hidden = _hidden_states(loaded, input_ids, mask, None)
        weights = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
        pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
        for row, index in enumerate(batch):
            vector = pooled[row].clone()
            loaded.sentence_cache.put(missing[index], vector, vector.nelement() * vector.element_size())
            result[missing[index]] = vector
    return result
