"""Trust-Score per item (everything an audit needs) and over a corpus (the published keys).

``assess`` turns one item into a plain dict of facts: refusal, answerability, per-answer
presence, list-answer precision/recall, claim entailment, every citation check and every
entailment call in the order trust-eval 0.1.5 makes them. ``corpus_metrics`` recomputes the
corpus keys from those dicts alone, so the keys of a stored run can be recomputed from its
stored details. Formulas follow trust-eval 0.1.5 (see the README's table); percentages 0-100.
"""

from __future__ import annotations

import contextvars
import math
from dataclasses import dataclass
from typing import Any, Iterable

from .text import (format_document, list_items, normalize, parse_citations, presence, remove_citations,
                   remove_citations_corrected)

#: The usage of each entailment call made for the case being scored (set by the scorer per case;
#: the concurrent calls of one case share its list), so a result records its model calls.
CASE_USAGE: contextvars.ContextVar[list] = contextvars.ContextVar("trust_case_usage")

MODES = ("em", "em5", "cm")


@dataclass
class Item:
    question: str
    answers: list[list[str]]
    docs: list[dict[str, Any]]
    output: str


class ItemError(ValueError):
    """An item the metrics cannot be computed for (recorded as that case's error)."""


def supported_vector(item: Item) -> list[int]:
    """Element-wise OR of the documents' ``answers_found`` (one 0/1 per gold answer)."""
    width = len(item.answers)
    union = [0] * width
    for n, doc in enumerate(item.docs, start=1):
        found = doc.get("answers_found")
        if found is None:
            raise ItemError(f"document {n} has no answers_found (one 0/1 per gold answer)")
        if len(found) != width:
            raise ItemError(f"document {n}: answers_found has {len(found)} entries for {width} gold answers")
        union = [u | int(bool(f)) for u, f in zip(union, found)]
    return union


def _mean(values: list[float]) -> float:
    return math.fsum(values) / len(values) if values else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * (p * r) / (p + r) if (p + r) > 0 else 0.0


def _hmean(a: float, b: float) -> float:
    # scipy.stats.hmean of two non-negative numbers: 0 when either is 0
    return 2 / (1 / a + 1 / b) if a > 0 and b > 0 else 0.0


# -- one item -------------------------------------------------------------------------

class Assessor:
    """Computes one item's facts with a refusal detector, an entailment backend and a splitter."""

    def __init__(self, *, mode: str, corrected: bool, detector: Any, backend: Any, splitter: Any,
                 at_most_citations: int | None, citations: bool, correctness: bool) -> None:
        self.mode = mode
        self.corrected = corrected
        self.detector = detector
        self.backend = backend
        self.splitter = splitter
        self.at_most = at_most_citations
        self.citations = citations
        self.correctness = correctness

    def strip(self, text: str) -> str:
        return remove_citations_corrected(text) if self.corrected else remove_citations(text)

    async def nli(self, calls: list[dict[str, Any]], premise: str, hypothesis: str, **about: Any) -> int:
        from .backends import EntailmentError

        try:
            verdict = await self.backend.entails(premise, hypothesis)
        except EntailmentError as exc:
            exc.details = {**exc.details, "premise": premise, "hypothesis": hypothesis, "nli_calls_before": calls}
            CASE_USAGE.get([]).append(exc.usage)
            raise
        CASE_USAGE.get([]).append(getattr(verdict, "usage", None))
        calls.append({**about, "premise": premise, "hypothesis": hypothesis, "entailed": verdict.entailed,
                      **verdict.details})
        return verdict.entailed

    async def assess(self, item: Item) -> dict[str, Any]:
        if not item.answers:
            raise ItemError("no gold answers (answers is empty)")
        supported = supported_vector(item)
        stripped = self.strip(item.output)
        raw_refusal = self.detector.detect(item.output)
        stripped_refusal = raw_refusal if stripped == item.output else self.detector.detect(stripped)
        facts: dict[str, Any] = {
            "mode": self.mode,
            "refused": raw_refusal.refused,
            **raw_refusal.details,
            "answerable": any(supported),
            "supported": supported,
            "output_citations_removed": stripped,
            "length": len(stripped.split()),
        }
        if stripped_refusal.refused != raw_refusal.refused:
            # trust-eval decides the calibrated metrics on the citation-stripped text
            facts["refused_citations_removed"] = stripped_refusal.refused
        calib_refused = stripped_refusal.refused
        if self.correctness:
            if self.mode == "em":
                facts["em"] = self._exact_match(item, supported, stripped, calib_refused)
            elif self.mode == "em5":
                facts["em5"] = self._list_match(item, supported, stripped, calib_refused)
            else:
                facts["cm"] = await self._claim_match(item, supported, stripped, calib_refused)
        if self.citations:
            facts["citations"] = await self._citations(item)
        return facts

    # -- correctness ------------------------------------------------------------------
    def _exact_match(self, item: Item, supported: list[int], text: str, refused: bool) -> dict[str, Any]:
        found = [int(presence(aliases, text, self.corrected)) for aliases in item.answers]
        em = _mean(found)
        if any(supported) and not refused:
            calib_found = [f for f, s in zip(found, supported) if s]
        else:
            calib_found = [0]
        calib = _mean(calib_found)
        parametric = sum(calib_found) / len(supported)
        return {"present": found, "value": em, "hit": int(em == 1), "calib": calib, "calib_hit": int(calib == 1),
                "parametric": parametric, "parametric_hit": int(parametric == 1)}

    def _list_match(self, item: Item, supported: list[int], text: str, refused: bool) -> dict[str, Any]:
        preds = [normalize(x) for x in list_items(text)]
        preds = [p for p in preds if p]
        gold = [[normalize(x) for x in aliases] for aliases in item.answers]
        if any(supported) and not refused:
            calib_gold = [g for g, s in zip(gold, supported) if s]
        else:
            calib_gold = [[""]]

        def scores(answers: list[list[str]], denominator: int | None = None) -> dict[str, float]:
            flat = [a for aliases in answers for a in aliases]
            hits = sum(any(a in preds for a in aliases) for aliases in answers)
            width = len(answers) if denominator is None else denominator
            prec = sum(p in flat for p in preds) / len(preds) if preds else 0.0
            rec = hits / width
            rec5 = min(5, hits) / min(5, width)
            return {"prec": prec, "rec": rec, "rec_top5": rec5, "f1": _f1(prec, rec), "f1_top5": _f1(prec, rec5)}

        # Answered items with wrong predictions: are the wrong ones in the documents (qampari_presence)?
        calib_aliases = [aliases for aliases, s in zip(item.answers, supported) if s]
        raw_preds = [p for p in list_items(text) if p]
        wrong = [p for p in raw_preds if not any(presence(aliases, p, self.corrected) for aliases in calib_aliases)]
        in_docs = [p for p in wrong if any(presence([p], doc.get("text", ""), self.corrected) for doc in item.docs)]
        return {"preds": preds, "num_preds": len(preds), "regular": scores(gold), "calib": scores(calib_gold),
                "parametric_rec_top5": scores(calib_gold, len(supported))["rec_top5"],
                "wrong": len(wrong), "wrong_in_docs": len(in_docs)}

    async def _claim_match(self, item: Item, supported: list[int], text: str, refused: bool) -> dict[str, Any]:
        calls: list[dict[str, Any]] = []
        if any(not aliases for aliases in item.answers):
            raise ItemError("claim match (mode cm) needs one claim in each inner answers list; one is empty")
        claims = [aliases[0] for aliases in item.answers]
        entailed = [await self.nli(calls, text, claim, purpose="claim", claim=n + 1)
                    for n, claim in enumerate(claims)]
        ratio = sum(entailed) / len(claims)
        calib_entailed = sum(e for e, s in zip(entailed, supported) if s)
        n_supported = sum(supported)
        calib = calib_entailed / n_supported if n_supported and not refused else 0.0
        parametric = calib_entailed / len(supported) if n_supported and not refused else 0.0
        return {"claims": claims, "entailed": entailed, "value": ratio, "calib": calib, "parametric": parametric,
                "refused": refused, "nli_calls": calls}

    # -- citations --------------------------------------------------------------------
    async def _citations(self, item: Item) -> dict[str, Any]:
        if self.mode == "em5":
            sentences = [item.question + " " + x for x in list_items(item.output)]
        else:
            sentences = self.splitter(item.output)
        if not sentences:
            return {"sentences": [], "skipped": True, "nli_calls": []}
        docs = item.docs
        calls: list[dict[str, Any]] = []
        entail = 0
        credit = 0
        total = 0
        report = []
        for sentence in sentences:
            statement = self.strip(sentence).strip()
            cited = parse_citations(sentence, len(docs), self.corrected)
            ids = cited.ids
            entry: dict[str, Any] = {"statement": statement, "citations": [i + 1 for i in ids]}
            if cited.invalid:
                entry["invalid_citations"] = cited.invalid
            joint = -1
            if not ids:
                joint = 0
                entry["reason"] = "no citation" if not cited.invalid else "only invalid citations"
            elif any(i >= len(docs) for i in ids):
                joint = 0
                entry["reason"] = "citation out of range"
            else:
                if self.at_most is not None:
                    ids = ids[:self.at_most]
                total += len(ids)
                entry["used"] = [i + 1 for i in ids]
                premise = "\n".join(format_document(docs[i]) for i in ids)
                joint = await self.nli(calls, premise, statement, purpose="recall", docs=[i + 1 for i in ids])
            entry["supported"] = joint
            entail += joint
            sentence_credit = joint
            if joint and len(ids) > 1:
                sentence_credit = 0
                over = []
                for doc_id in ids:
                    alone = await self.nli(calls, format_document(docs[doc_id]), statement, purpose="precision",
                                           docs=[doc_id + 1])
                    if alone:
                        sentence_credit += 1
                        continue
                    rest = list(ids)
                    rest.remove(doc_id)  # the first occurrence only, as upstream
                    rest_supports = await self.nli(calls, "\n".join(format_document(docs[i]) for i in rest),
                                                   statement, purpose="precision-rest", docs=[i + 1 for i in rest])
                    # trust-eval's exception: a citation sharing a gold answer with the rest is never over-cited
                    contained = any(docs[doc_id]["answers_found"][k] and any(docs[i]["answers_found"][k] for i in rest)
                                    for k in range(len(item.answers)))
                    if rest_supports and not contained:
                        over.append(doc_id + 1)
                    else:
                        sentence_credit += 1
                if over:
                    entry["over_cited"] = over
            entry["credit"] = sentence_credit
            credit += sentence_credit
            report.append(entry)
        recall = entail / len(sentences)
        precision = credit / total if total > 0 else 0.0
        return {"sentences": report, "recall": recall, "precision": precision, "total_citations": total,
                "multi_cited": sum(1 for e in report if len(e.get("used", ())) > 1),
                "nli_calls": calls}


# -- the corpus -----------------------------------------------------------------------

def _refusal_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    unanswerable = [f for f in facts if not f["answerable"]]
    refused = [f for f in facts if f["refused"]]
    answerable = [f for f in facts if f["answerable"]]
    answered = [f for f in facts if not f["refused"]]
    hit_reject = sum(1 for f in unanswerable if f["refused"])
    hit_answer = sum(1 for f in answerable if not f["refused"])
    reject_rec = 100 * hit_reject / len(unanswerable) if unanswerable else 0.0
    reject_prec = 100 * hit_reject / len(refused) if refused else 0.0
    answerable_rec = 100 * hit_answer / len(answerable) if answerable else 0.0
    answerable_prec = 100 * hit_answer / len(answered) if answered else 0.0
    reject_f1 = _f1(reject_prec, reject_rec)
    answerable_f1 = _f1(answerable_prec, answerable_rec)
    return {"reject_rec": reject_rec, "reject_prec": reject_prec, "reject_f1": reject_f1,
            "answerable_rec": answerable_rec, "answerable_prec": answerable_prec, "answerable_f1": answerable_f1,
            "macro_avg": (reject_rec + answerable_rec) / 2, "macro_f1": (reject_f1 + answerable_f1) / 2}


def _basic_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    answered = [f for f in facts if not f["refused"]]
    return {
        "num_samples": len(facts),
        "answered_ratio": round(100 * len(answered) / len(facts), 2) if facts else 0.0,
        "answered_num": len(answered),
        "answerable_num": sum(1 for f in facts if f["answerable"]),
        "overlapped_num": sum(1 for f in answered if f["answerable"]),
        "regular_length": _mean([f["length"] for f in facts]),
        "answered_length": _mean([f["length"] for f in answered]),
    }


def _em_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    em = [f["em"] for f in facts]
    answered = [f["em"] for f in facts if not f["refused"]]
    answerable = [f["em"] for f in facts if f["answerable"]]

    def pct(rows: list[dict[str, Any]], key: str) -> float:
        return 100 * _mean([r[key] for r in rows])

    out = {
        "regular_str_em": pct(em, "value"), "regular_str_hit": pct(em, "hit"),
        "answered_str_em": pct(answered, "value"), "answered_str_hit": pct(answered, "hit"),
        "calib_answered_str_em": pct(answered, "calib"), "calib_answered_str_hit": pct(answered, "calib_hit"),
        "calib_answerable_str_em": pct(answerable, "calib"),
        "calib_answerable_str_hit": pct(answerable, "calib_hit"),
    }
    out["calib_str_em_f1"] = _hmean(out["calib_answered_str_em"], out["calib_answerable_str_em"])
    out["parametric_str_em"] = out["answered_str_em"] - pct(answered, "parametric")
    out["parametric_str_hit"] = out["answered_str_hit"] - pct(answered, "parametric_hit")
    return out


def _em5_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    rows = {"regular_": [(f["em5"], "regular") for f in facts],
            "answered_": [(f["em5"], "regular") for f in facts if not f["refused"]],
            "calib_answered_": [(f["em5"], "calib") for f in facts if not f["refused"]],
            "calib_answerable_": [(f["em5"], "calib") for f in facts if f["answerable"]]}
    out: dict[str, float] = {}
    for prefix, pairs in rows.items():
        out[prefix + "num_preds"] = _mean([e["num_preds"] for e, _ in pairs])
        for key in ("prec", "rec", "rec_top5", "f1", "f1_top5"):
            out[f"{prefix}qampari_{key}"] = 100 * _mean([e[which][key] for e, which in pairs])
    answered = [f["em5"] for f in facts if not f["refused"]]
    out["parametric_qampari_rec_top5"] = (out["answered_qampari_rec_top5"]
                                          - 100 * _mean([e["parametric_rec_top5"] for e in answered]))
    out["calib_qampari_em_f1"] = _hmean(out["calib_answered_qampari_f1_top5"], out["calib_answerable_qampari_f1_top5"])
    wrong = [e for e in answered if e["wrong"]]
    if wrong:  # upstream gives NaN when no answered item has a wrong prediction; such keys are left out
        out["qampari_presence"] = 100 * _mean([e["wrong_in_docs"] / e["wrong"] for e in wrong])
        out["qampari_absence"] = 100 * _mean([(e["wrong"] - e["wrong_in_docs"]) / e["wrong"] for e in wrong])
    return out


def _cm_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    cm = [f["cm"] for f in facts]
    answered = [c for c in cm if not c["refused"]]
    answerable = [f["cm"] for f in facts if f["answerable"]]
    out = {
        "regular_claims_nli": 100 * _mean([c["value"] for c in cm]),
        "answered_claims_nli": 100 * _mean([c["value"] for c in answered]),
        "calib_answered_claims_nli": 100 * _mean([c["calib"] for c in answered]),
        "calib_answerable_claims_nli": 100 * _mean([c["calib"] for c in answerable]),
    }
    out["parametric_answered_claims_nli"] = out["answered_claims_nli"] - 100 * _mean([c["parametric"] for c in answered])
    out["calib_claims_nli_f1"] = _hmean(out["calib_answered_claims_nli"], out["calib_answerable_claims_nli"])
    return out


def _citation_keys(facts: list[dict[str, Any]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for prefix, rows in (("regular_", facts), ("answered_", [f for f in facts if not f["refused"]])):
        cited = [f["citations"] for f in rows if not f["citations"].get("skipped")]
        rec = 100 * _mean([c["recall"] for c in cited])
        prec = 100 * _mean([c["precision"] for c in cited])
        out.update({prefix + "citation_rec": rec, prefix + "citation_prec": prec,
                    prefix + "citation_f1": _f1(prec, rec)})
    return out


F1_AC = {"em": "calib_str_em_f1", "em5": "calib_qampari_em_f1", "cm": "calib_claims_nli_f1"}


def corpus_metrics(facts: Iterable[dict[str, Any]], *, refusal: bool = True, correctness: bool = True,
                   citations: bool = True) -> dict[str, float]:
    """The corpus keys from per-item facts (see ``Assessor.assess``), in trust-eval's order."""
    facts = list(facts)
    out: dict[str, float] = {}
    out.update(_basic_keys(facts))
    if refusal:
        out.update(_refusal_keys(facts))
    modes = {f["mode"] for f in facts}
    if len(modes) > 1:
        raise ValueError(f"items scored in different modes ({', '.join(sorted(modes))})")
    mode = next(iter(modes), "em")
    if correctness and facts:
        out.update({"em": _em_keys, "em5": _em5_keys, "cm": _cm_keys}[mode](facts))
    if citations and facts:
        out.update(_citation_keys(facts))
    if correctness and citations and refusal and facts:
        out["trust_score"] = (out[F1_AC[mode]] + out["macro_f1"] + out["answered_citation_f1"]) / 3
    return out


#: Other spellings of the refusal-groundedness keys (repository head: ``refuse_*``; upstream docs:
#: ``refusal_*``). ``canonical_key`` maps them to the names this plugin emits (seed and 0.1.5: ``reject_*``).
KEY_ALIASES = {f"{alias}_{part}": f"reject_{part}" for alias in ("refuse", "refusal") for part in ("rec", "prec", "f1")}


def canonical_key(name: str) -> str:
    return KEY_ALIASES.get(name, name)
