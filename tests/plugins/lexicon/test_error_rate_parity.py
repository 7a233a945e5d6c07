"""``wer`` and ``cer`` against jiwer 4.0.0 (the real package, in a venv of its own:
``tests/reference_envs.py``): on generated transcripts with every kind of edit, repeated and
tab-separated spaces, punctuation, contractions, Kaldi non-words, non-ASCII text and empty
texts, every option combination the scorers offer gives jiwer's rate, hits, substitutions,
deletions, insertions, MER, WIL and WIP case by case, and jiwer's corpus rate over the run."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from click.testing import CliRunner

from evalyard.cli import cli

pytestmark = pytest.mark.slow

WORDS = ["the", "cat", "sat", "on", "mat", "don't", "won't", "it's", "<unk>", "[noise]", "Hello,", "world!",
         "café", "naïve", "“quoted”", "über", "x", "a", "A", "The"]
SPACES = [" ", " ", " ", "  ", "\t", " \n ", "   "]


def sentence(rng: random.Random, n: int) -> str:
    out = ""
    for k in range(n):
        out += (rng.choice(SPACES) if k else "") + rng.choice(WORDS)
    return rng.choice(["", " ", "\n"]) + out + rng.choice(["", " ", "  "])


def transcript(rng: random.Random, reference: str) -> str:
    """The reference with edits: words replaced, dropped, added, case and spacing changed."""
    words = reference.split()
    out = []
    for word in words:
        roll = rng.random()
        if roll < 0.15:
            continue
        out.append(rng.choice(WORDS) if roll < 0.3 else word.upper() if roll < 0.35 else word)
        if rng.random() < 0.1:
            out.append(rng.choice(WORDS))
    return rng.choice(SPACES).join(out)


def cases(seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = [{"reference": "", "candidate": ""}, {"reference": "", "candidate": "two words"},
            {"reference": "one", "candidate": ""}, {"reference": "   ", "candidate": "x"},
            {"reference": "a\tb c", "candidate": "a b  c"}]
    for _ in range(45):
        reference = sentence(rng, rng.randint(1, 14))
        rows.append({"reference": reference, "candidate": transcript(rng, reference)})
    return [{"id": str(n), **row} for n, row in enumerate(rows)]


OPTIONS = ["lowercase", "expand_contractions", "remove_non_words", "remove_punctuation", "whitespace_to_space"]
CONFIGS = [{}, {"standardize": True}, {"remove_punctuation": True, "lowercase": True},
           *({name: True} for name in OPTIONS), dict.fromkeys(OPTIONS, True)]

JIWER = r"""
import json, sys
import jiwer
import jiwer.transforms as tr

ORDER = [("lowercase", tr.ToLowerCase()), ("expand_contractions", tr.ExpandCommonEnglishContractions()),
         ("remove_non_words", tr.RemoveKaldiNonWords()), ("remove_punctuation", tr.RemovePunctuation()),
         ("whitespace_to_space", tr.RemoveWhiteSpace(replace_by_space=True))]

def transform(config, unit):
    chosen = dict(config)
    if chosen.pop("standardize", False):
        chosen.update(lowercase=True, expand_contractions=True, remove_non_words=True, whitespace_to_space=True)
    steps = [t for name, t in ORDER if chosen.get(name)]
    if unit == "words":
        return tr.Compose(steps + [tr.RemoveMultipleSpaces(), tr.Strip(), tr.ReduceToListOfListOfWords()])
    return tr.Compose(steps + [tr.Strip(), tr.ReduceToListOfListOfChars()])

data = json.load(sys.stdin)
out = []
for config in data["configs"]:
    row = {}
    for unit, process in (("words", jiwer.process_words), ("characters", jiwer.process_characters)):
        t = transform(config, unit)
        per_case = []
        for case in data["cases"]:
            r = process(case["reference"], case["candidate"], reference_transform=t, hypothesis_transform=t)
            rate = r.wer if unit == "words" else r.cer
            item = {"rate": float(rate), "hits": r.hits, "substitutions": r.substitutions,
                    "deletions": r.deletions, "insertions": r.insertions}
            if unit == "words":
                item.update(mer=float(r.mer), wil=float(r.wil), wip=float(r.wip))
            per_case.append(item)
        refs = [c["reference"] for c in data["cases"]]
        hyps = [c["candidate"] for c in data["cases"]]
        corpus = process(refs, hyps, reference_transform=t, hypothesis_transform=t)
        row[unit] = {"cases": per_case, "corpus": float(corpus.wer if unit == "words" else corpus.cer)}
    out.append(row)
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def jiwer_python():
    from reference_envs import REFERENCES, reference_python

    return reference_python(*REFERENCES["jiwer"])


def ours(app, tmp_path, rows, config) -> dict:
    data = tmp_path / "transcripts.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    options = ",".join(f"{k}={str(v).lower()}" for k, v in config.items())
    scorers = [f"{name}:{options}" if options else name for name in ("wer", "cer")]
    result = CliRunner().invoke(cli, ["run", str(data), "-s", scorers[0], "-s", scorers[1], "--json"], obj=app,
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    exported = CliRunner().invoke(cli, ["runs", "export", summary["run_id"]], obj=app, catch_exceptions=False)
    found: dict = {"words": {}, "characters": {}}
    for line in exported.stdout.splitlines():
        row = json.loads(line)
        found["words" if row["scorer"] == "wer" else "characters"][row["case_id"]] = row
    aggregates = {unit: summary["scorers"][name]["aggregate"][f"corpus_{name}"]
                  for unit, name in (("words", "wer"), ("characters", "cer"))}
    return {"rows": found, "corpus": aggregates}


@pytest.mark.parametrize("seed", [1, 2])
def test_wer_and_cer_equal_jiwer(app, tmp_path, jiwer_python, seed):
    from reference_envs import run_reference

    rows = cases(seed)
    theirs = run_reference(jiwer_python, JIWER, {"cases": rows, "configs": CONFIGS})
    compared = 0
    for config, expected in zip(CONFIGS, theirs):
        got = ours(app, tmp_path, rows, config)
        for unit in ("words", "characters"):
            for case, want in zip(rows, expected[unit]["cases"]):
                row = got["rows"][unit][case["id"]]
                details = row["details"]
                assert row["value"] == pytest.approx(want["rate"], abs=1e-12), (config, unit, case)
                assert [details[k] for k in ("hits", "substitutions", "deletions", "insertions")] == \
                    [want[k] for k in ("hits", "substitutions", "deletions", "insertions")], (config, unit, case)
                if unit == "words" and "mer" in details:
                    assert [details[k] for k in ("mer", "wil", "wip")] == pytest.approx(
                        [want[k] for k in ("mer", "wil", "wip")], abs=1e-12), (config, case)
                compared += 1
            assert got["corpus"][unit] == pytest.approx(expected[unit]["corpus"], abs=1e-12), (config, unit)
    assert compared == len(CONFIGS) * 2 * len(rows)
    # the options change the figures (a test that could not fail would pass on identical configs)
    corpus = {json.dumps(c): t["words"]["corpus"] for c, t in zip(CONFIGS, theirs)}
    assert len(set(corpus.values())) >= 4, corpus
    print(f"\nseed {seed}: {compared} case values equal jiwer 4.0.0 over {len(CONFIGS)} option sets; corpus WER "
          + ", ".join(f"{k}={v:.4f}" for k, v in corpus.items()))


def test_every_option_combination_is_a_valid_config(app, tmp_path):
    """All 64 combinations load and score (the normaliser is one composition, not a table)."""
    rows = [{"id": "a", "reference": "It's the <unk> CAT!", "candidate": "it is the cat"}]
    values = set()
    for flags in itertools.product([False, True], repeat=len(OPTIONS)):
        config = {name: True for name, on in zip(OPTIONS, flags) if on}
        got = ours(app, tmp_path, rows, config)
        values.add(got["rows"]["words"]["a"]["value"])
    assert len(values) > 3
