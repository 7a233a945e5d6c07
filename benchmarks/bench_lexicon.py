"""Throughput of the lexicon scorers: score_batch on 5,000 distinct cases, one thread.

Usage (from the repository root)::

    .venv/bin/python benchmarks/bench_lexicon.py            # print the table
    .venv/bin/python benchmarks/bench_lexicon.py --write    # also update RESULTS.md

Cases are generated deterministically (seeded) from a mix of everyday words,
vague words, rarer vocabulary, names and numbers, in 1-4 sentences of 4-18
words, so every text is distinct: textstat-style caches cannot flatter the
numbers. Each scorer is warmed up on other cases first (dictionaries, wordfreq
and NLTK data load once per process), then timed as the best of several
repeats (the least disturbed by other load on the machine).

Arthur Bench 0.3.1 on the same kind of input (5,000 distinct texts, one thread;
see shared/reference/offline_and_dependencies.md section 8): exact_match
94k-151k cases/s, word_count_match 55k-81k/s, readability 19k-21.5k/s,
specificity 730-770/s.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for extra in (ROOT / "core", ROOT / "plugins" / "lexicon"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

# Compat rows and the Arthur-logic baseline for specificity need NLTK's data: point NLTK_DATA
# at a folder holding punkt_tab, averaged_perceptron_tagger_eng and cmudict.

from evalyard import Case  # noqa: E402
from evalyard_lexicon import ExactMatch, Readability, Specificity, WordCountMatch  # noqa: E402

from results_file import write_section  # noqa: E402  (benchmarks/ is on sys.path when run as a script)

N_CASES = 5_000
ARTHUR_FIGURES = {
    "exact_match": "94k-151k",
    "word_count_match": "55k-81k",
    "readability": "19k-21.5k",
    "specificity": "730-770",
}

COMMON = (
    "the a an of to and in is was for on with as by at from that this it be are have has "
    "not but or which their they we you can will more new time year people way day man "
    "thing woman life child world school state family student group country problem hand "
    "part place case week company system program question work government number night "
    "point home water room mother area money story fact month lot right study book eye job "
    "word business issue side kind head house service friend father power hour game line "
    "end member law car city community name president team minute idea kid body information "
    "back parent face others level office door health person art war history party result "
    "change morning reason research girl guy moment air teacher force education"
).split()
RARE = (
    "photosynthesis mitochondria latency throughput asymptotic heuristic stochastic "
    "epistemic oxidative jurisprudence amortization idempotent quadratic transformer "
    "vaccination immunology chlorophyll tectonic biodiversity derivative spectroscopy "
    "cryptographic protocol bandwidth algorithm hyperparameter regression covariance "
    "mindfulness placebo randomized cohort longitudinal meta-analysis interoperability"
).split()
VAGUE = (
    "around about almost basically approximately nearly roughly some most good nice great may could "
    "might usually typically like sure"
).split()
NAMES = (
    "Paris London Berlin Tokyo Amazon Google Einstein Curie NASA Python Linux Jupiter "
    "Thursday January Austen Shakespeare Apollo Europe Canada Nairobi Acme"
).split()
PUNCT = [",", ",", ";", ":", " -", ""]
ENDINGS = [".", ".", ".", "!", "?"]


def _word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.62:
        return rng.choice(COMMON)
    if roll < 0.74:
        return rng.choice(RARE)
    if roll < 0.84:
        return rng.choice(VAGUE)
    if roll < 0.93:
        return rng.choice(NAMES)
    numbers = [str(rng.randint(0, 2030)), f"{rng.randint(1, 99)}%", f"${rng.randint(1, 900)}.{rng.randint(0, 99)}"]
    return rng.choice(numbers)


def _text(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(1, 4)):
        words = [_word(rng) for _ in range(rng.randint(4, 18))]
        if rng.random() < 0.4:
            at = rng.randrange(1, len(words))
            words[at - 1] += rng.choice(PUNCT)
        words[0] = words[0][:1].upper() + words[0][1:]
        sentences.append(" ".join(words) + rng.choice(ENDINGS))
    return " ".join(sentences)


def make_cases(n: int, seed: int) -> list[Case]:
    """``n`` distinct cases; about a quarter have candidate == reference (up to case)."""
    rng = random.Random(seed)
    seen: set[str] = set()
    cases = []
    while len(cases) < n:
        reference = _text(rng)
        if reference in seen:
            continue
        seen.add(reference)
        roll = rng.random()
        if roll < 0.2:
            candidate = reference
        elif roll < 0.25:
            candidate = reference.upper()
        else:
            candidate = _text(rng)
        cases.append(Case(id=f"bench-{seed}-{len(cases)}", input="Q?", candidate=candidate, reference=reference))
    return cases


def time_scorer(scorer, cases: list[Case], repeats: int) -> float:
    """Best cases/s over ``repeats`` runs of score_batch over all cases (one batch per 256)."""
    size = scorer.batch_size
    batches = [cases[i : i + size] for i in range(0, len(cases), size)]
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            scorer.score_batch(batch)
        elapsed = time.perf_counter() - start
        best = max(best, len(cases) / elapsed)
    return best


def arthur_baselines() -> dict:
    """Arthur Bench 0.3.1's per-row computations, calling the same libraries it calls.

    Timed on this machine next to ours, so the comparison does not depend on how
    fast or loaded the machine is. Specificity needs NLTK's data (NLTK_DATA).
    """
    import textstat
    from wordfreq import word_frequency

    vague = ("around about almost basically approximately nearly roughly some most least good bad "
             "nice great may could certain most might usually typically like sure").split()
    punct = re.compile(r"[^\w\s'/]")

    def word_count_match(case):
        n_ref = textstat.lexicon_count(case.reference, removepunct=True)
        n_cand = textstat.lexicon_count(case.candidate, removepunct=True)
        delta = abs(n_ref - n_cand)
        return 0.0 if delta > n_ref else (n_ref - delta) / n_ref

    def readability(case):
        return textstat.flesch_reading_ease(case.candidate)

    # No exact_match baseline: the original's work is one string comparison, its cost
    # was building result objects, and a bare `==` loop says nothing about either.
    baselines = {"word_count_match": word_count_match, "readability": readability}
    try:
        import nltk

        nltk.data.find("taggers/averaged_perceptron_tagger_eng/")
        nltk.data.find("tokenizers/punkt_tab/english/")
    except (ImportError, LookupError):
        return baselines

    def specificity(case):
        text = case.candidate
        lowered = text.lower()
        counter = sum(lowered.count(v) for v in vague)
        n = textstat.lexicon_count(lowered, removepunct=True)
        v = max(0.0, ((n - counter) / n) / 0.2 - 4.0)
        tokens = punct.sub("", text).replace("/", " ").split()
        freqs = [min(0.001, word_frequency(t, "en")) for t in tokens]
        wf = sum(freqs) / len(freqs) if freqs else 0.001
        f = min(1.0, max(0.0, 2.0 - wf / 0.0004))
        tags = nltk.pos_tag(nltk.word_tokenize(text))
        pn = sum(1 for _, tag in tags if tag in ("NNP", "CD"))
        p = min(1.0, 5.0 * (pn / textstat.lexicon_count(text, removepunct=True)))
        return 0.33 * v + 0.33 * f + 0.33 * p

    baselines["specificity"] = specificity
    return baselines


def time_baseline(function, cases: list[Case], repeats: int) -> float:
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for case in cases:
            try:
                function(case)
            except ZeroDivisionError:
                pass
        best = max(best, len(cases) / (time.perf_counter() - start))
    return best


def run(repeats: int, include_compat: bool) -> list[tuple[str, str, float, float | None]]:
    cases = make_cases(N_CASES, seed=1)
    warmup = make_cases(500, seed=2)
    scorers = [
        ("exact_match", "default", ExactMatch()),
        ("word_count_match", "default", WordCountMatch()),
        ("readability", "default", Readability()),
        ("specificity", "default", Specificity()),
    ]
    if include_compat:
        scorers += [
            ("exact_match", "arthur_compat", ExactMatch(arthur_compat=True)),
            ("word_count_match", "arthur_compat", WordCountMatch(arthur_compat=True)),
            ("readability", "arthur_compat", Readability(arthur_compat=True)),
            ("specificity", "arthur_compat", Specificity(arthur_compat=True)),
        ]
    rows = []
    baselines = arthur_baselines()
    baseline_rates = {}
    for name, function in baselines.items():
        for case in warmup:
            try:
                function(case)
            except ZeroDivisionError:
                pass
        baseline_rates[name] = time_baseline(function, cases, repeats)
    for name, mode, scorer in scorers:
        scorer.score_batch(warmup)
        results = scorer.score_batch(cases[:50])
        note = ""
        approximated = results[0].details.get("approximated") if results[0].details else None
        if approximated:
            note = f" (approximated: {', '.join(approximated)}; NLTK data not found)"
        rate = time_scorer(scorer, cases, repeats)
        baseline = baseline_rates.get(name)
        rows.append((name, mode + note, rate, baseline))
        versus = f"{rate / baseline:5.1f}x Arthur's logic here" if baseline else " " * 24
        figures = f"(Arthur Bench figures: {ARTHUR_FIGURES[name]}/s)"
        print(f"{name:18s} {mode + note:28s} {rate:12,.0f} cases/s  {versus}  {figures}")
    for name, rate in baseline_rates.items():
        print(f"{'Arthur logic':18s} {name:28s} {rate:12,.0f} cases/s")
    return rows


def write_results(rows: list[tuple[str, str, float, float | None]], command: str) -> Path:
    """Replace (or add) the "## Lexicon" section of benchmarks/RESULTS.md, keeping the others."""
    lines = [
        "## Lexicon",
        "",
        f"`{command}` - {N_CASES:,} distinct generated cases, `score_batch` in batches of 256, one thread, "
        "best of the repeats. "
        f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} when written, {time.strftime('%Y-%m-%d')}.",
        "",
        "| scorer | mode | cases/s | Arthur Bench 0.3.1's logic, same machine and cases | Arthur Bench figures |",
        "|---|---|---:|---:|---:|",
    ]
    for name, mode, rate, baseline in rows:
        measured = f"{baseline:,.0f}" if baseline else "n/a"
        lines.append(f"| {name} | {mode} | {rate:,.0f} | {measured} | {ARTHUR_FIGURES[name]} |")
    lines += [
        "",
        "\"Arthur Bench 0.3.1's logic\" re-runs the original per-case computations (textstat 0.7.8, wordfreq, "
        "`nltk.pos_tag(nltk.word_tokenize(...))`) on the same cases in the same process, so the comparison does "
        "not depend on machine load; its loops build no result objects (so exact_match, one string "
        "comparison, has no such row). "
        "arthur_compat rows used the NLTK data named by `NLTK_DATA`; default modes never load NLTK.",
        "",
    ]
    section = "\n".join(lines)
    return write_section("Lexicon", section)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-compat", action="store_true", help="time only the default modes")
    parser.add_argument("--write", action="store_true", help="update the Lexicon section of RESULTS.md")
    args = parser.parse_args()
    rows = run(args.repeats, include_compat=not args.no_compat)
    if args.write:
        command = ".venv/bin/python " + " ".join(["benchmarks/bench_lexicon.py", *sys.argv[1:]])
        print("wrote", write_results(rows, command))


if __name__ == "__main__":
    main()
