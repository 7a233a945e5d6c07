"""A jury against its members on held-out human-labelled data.

    python benchmarks/bench_jury.py --data FILE --positive correct --work /tmp/bench-jury --limit 80 \\
        --member criteria/correctness --member correctness \\
        --member criteria/correctness:model=local/smollm2-135m --judge-model local/qwen2.5-coder-1.5b

FILE is a labelled set (``metadata.human_label``), e.g. the project's judge benchmark sets given by
path (not in the repository). ``--limit N`` takes N cases, class-balanced (the first N/2 of each
label in file order), split into two halves with the same balance: the **calibration** half, on
which each member is calibrated against the people's labels and saved (``evalyard calibrate
--save``: the weighted jury's weights are those kappas), and the **test** half, never seen by the
calibration, on which every member and the three juries (majority, mean, weighted) are scored in
one run (the juries' member calls come from the response cache). Each is read at its own cut
(value >= 0.5 is the positive label) against the people's labels: accuracy and Cohen's kappa with
95% percentile-bootstrap intervals over the test cases (2000 resamples, one seed), and each jury's
paired difference in accuracy from the best member (the same resampled cases for both).
Resumable: the database under --work keeps every answer.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EVALYARD = str(Path(sys.executable).with_name("evalyard"))
BOOTSTRAP = 2000
SEED = 20261129


def balanced(rows: list[dict], limit: int) -> tuple[list[dict], list[dict]]:
    """``limit`` cases, half of each label, split into two halves of the same balance."""
    by_label: dict[str, list[dict]] = {}
    for row in rows:
        by_label.setdefault(row["metadata"]["human_label"], []).append(row)
    if len(by_label) != 2:
        sys.exit(f"expected two human labels, found {sorted(by_label)}")
    per = limit // 2
    calibration, test = [], []
    for label_rows in by_label.values():
        taken = label_rows[:per]
        calibration += taken[: per // 2]
        test += taken[per // 2:]
    return calibration, test


def evalyard(*args: str) -> str:
    done = subprocess.run([EVALYARD, *args], capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"evalyard {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-800:]}")
    return done.stdout


def figures(predicted: list[int], truth: list[int]) -> tuple[float, float]:
    n = len(truth)
    accuracy = sum(p == t for p, t in zip(predicted, truth)) / n
    p_yes = (sum(predicted) / n) * (sum(truth) / n) + (1 - sum(predicted) / n) * (1 - sum(truth) / n)
    kappa = (accuracy - p_yes) / (1 - p_yes) if p_yes < 1 else 0.0
    return accuracy, kappa


def interval(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return ordered[int(0.025 * len(ordered))], ordered[int(0.975 * len(ordered)) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", required=True)
    parser.add_argument("--positive", required=True, help="the human label a high value means")
    parser.add_argument("--member", action="append", required=True, help="a jury member (scorer spec), repeatable")
    parser.add_argument("--judge-model", required=True)
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--work", required=True)
    parser.add_argument("--concurrency", default="2")
    args = parser.parse_args()

    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{work / 'jury.db'}"
    rows = [json.loads(line) for line in Path(args.data).read_text().splitlines() if line.strip()]
    calibration, test = balanced(rows, args.limit)
    (work / "calibration.jsonl").write_text("".join(json.dumps(r) + "\n" for r in calibration))
    (work / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in test))

    common = ["--judge-model", args.judge_model, "--db", db]
    for member in args.member:  # each member's agreement with people, saved: the weighted jury's weights
        evalyard("calibrate", str(work / "calibration.jsonl"), "-s", member, "--positive", args.positive, "--save",
                 "-j", args.concurrency, *common)
    judges = "|".join(args.member)
    truth = {r["id"]: int(r["metadata"]["human_label"] == args.positive) for r in test}
    ids = sorted(truth)
    # one run per jury (a scorer is selected once per run); the members' answers come from the
    # cache after the first, and their own values are read from the jury's details
    values: dict[str, dict[str, float | None]] = {}
    weights, run_ids = None, []
    for mode in ("majority", "mean", "weighted"):
        out = evalyard("run", str(work / "test.jsonl"), "-s", f"jury:judges={judges},mode={mode}", "--json",
                       "-j", args.concurrency, *common)
        run_ids.append(json.loads(out)["run_id"])
        for line in evalyard("runs", "export", run_ids[-1], "--db", db).splitlines():
            row = json.loads(line)
            details = row.get("details") or {}
            values.setdefault(f"jury ({mode})", {})[row["case_id"]] = row["value"]
            for member, verdict in (details.get("members") or {}).items():
                values.setdefault(member, {})[row["case_id"]] = verdict["value"] if not verdict["error"] else None
            if details.get("weights"):
                weights = details["weights"]
    names = [*args.member, *(f"jury ({mode})" for mode in ("majority", "mean", "weighted"))]
    table = {}
    rng = random.Random(SEED)
    resamples = [[rng.choice(ids) for _ in ids] for _ in range(BOOTSTRAP)]
    for name in names:
        got = values.get(name) or {}
        answered = [c for c in ids if got.get(c) is not None]
        predicted = {c: int(got[c] >= 0.5) for c in answered}
        accuracy, kappa = figures([predicted[c] for c in answered], [truth[c] for c in answered])
        boots = [figures([predicted[c] for c in sample if c in predicted], [truth[c] for c in sample if c in predicted])
                 for sample in resamples]
        table[name] = {"n": len(answered), "accuracy": accuracy, "accuracy_ci": interval([b[0] for b in boots]),
                       "kappa": kappa, "kappa_ci": interval([b[1] for b in boots]), "correct": predicted}
    best = max(args.member, key=lambda m: table[m]["accuracy"])
    print(f"test half: {len(ids)} cases ({sum(truth.values())} {args.positive}); calibration half: "
          f"{len(calibration)} cases; runs {', '.join(run_ids)}")
    if weights:
        print("weighted jury's weights (each member's kappa on the calibration half, 0 at or below chance): "
              + ", ".join(f"{k} {v:.3f}" for k, v in weights.items()))
    print(f"{'scorer':58} {'n':>4} {'accuracy':>9} {'95% CI':>16} {'kappa':>7} {'95% CI':>17}  vs best member")
    for name in names:
        t = table[name]
        line = (f"{name:58} {t['n']:>4} {t['accuracy']:>9.3f} [{t['accuracy_ci'][0]:.3f}, {t['accuracy_ci'][1]:.3f}] "
                f"{t['kappa']:>7.3f} [{t['kappa_ci'][0]:+.3f}, {t['kappa_ci'][1]:+.3f}]")
        if name.startswith("jury"):
            both = [c for c in ids if c in t["correct"] and c in table[best]["correct"]]

            def diff(sample: list[str]) -> float:
                kept = [c for c in sample if c in t["correct"] and c in table[best]["correct"]]
                if not kept:
                    return 0.0
                return (sum(t["correct"][c] == truth[c] for c in kept)
                        - sum(table[best]["correct"][c] == truth[c] for c in kept)) / len(kept)

            low, high = interval([diff(s) for s in resamples])
            line += f"  {diff(both):+.3f} [{low:+.3f}, {high:+.3f}]"
        print(line)
    print(f"best member by accuracy on the test half: {best}")


if __name__ == "__main__":
    main()
