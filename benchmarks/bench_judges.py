"""Judge quality on human-labelled data: each built-in judge on the labelled sets that fit it, its
agreement with people (AUC, accuracy, Cohen's kappa, each with a 95% bootstrap interval), the best
no-model baseline on the same cases, and a paired comparison of two versions of the judges.

    python benchmarks/bench_judges.py --data DIR --judge-model local/qwen2.5-coder-1.5b --limit 40 \\
        --work /tmp/bench-judges [--judges correctness,pairwise] \\
        [--version old=rev:3188f14 --version new=rev:HEAD] [--write]

DIR holds the labelled sets (``examples/labelled`` when not given: the small sets shipped with the
project; a larger human-labelled collection can be named instead). Which judge runs on which set is
the ``JUDGES`` table below; a set that is not in DIR is skipped. ``--limit N`` takes N cases of each
set, class-balanced (the first N/2 of each human label in file order, interleaved), the same cases
for every version.

Each judge is run by ``evalyard calibrate SET -s JUDGE --json`` in a subprocess (the project's own
calibration: held-out threshold accuracy and its baselines), and its per-case values are read back
with ``evalyard runs export``. Intervals: percentile bootstrap over cases (2000 resamples, fixed
seed). A version is ``NAME=current`` (this checkout), ``NAME=rev:REV`` (a git revision, checked out
with ``git worktree`` under --work), ``NAME=prompts:DIR`` (this checkout with a prompt directory that
overrides built-in templates) or ``NAME=options:k=v,...`` (this checkout with extra scorer options,
e.g. ``reasoning=true``). With two versions each judge gets a paired row: the two versions' AUC and
accuracy on the same cases, and the bootstrap interval of their difference (the same resampled cases
for both: a paired bootstrap).

Resumable: each version has its own database under --work (``NAME.db``) whose response cache answers
every call already made, and each finished (version, judge, set) keeps its JSON there.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOTSTRAP = 2000
SEED = 20261126
LABEL = "metadata.human_label"


@dataclass(frozen=True)
class Judge:
    key: str            # short name for --judges
    scorer: str         # scorer spec given to calibrate -s
    data: str           # file name of the labelled set
    positive: str       # the human label a high value means
    baseline: str       # which no-model predictors fit: "answer" (length, overlap), "claims", "pairs"


JUDGES = [
    Judge("correctness", "criteria/correctness:logprobs=true", "truthfulqa_correctness.jsonl", "correct", "answer"),
    Judge("correctness-examples", "criteria/correctness:logprobs=true", "correctness.jsonl", "correct", "answer"),
    Judge("hallucination", "judge/hallucination:logprobs=true", "halueval_qa.jsonl", "hallucination", "answer"),
    Judge("criteria-hallucination", "criteria/hallucination", "halueval_qa.jsonl", "hallucination",
          "answer"),
    Judge("trust-entailment", "trust_correctness:mode=cm,entailment=judge,entailment_answer=logprobs",
          "vitaminc_claims.jsonl", "supported", "claims"),
    Judge("trust-entailment-examples", "trust_correctness:mode=cm,entailment=judge,entailment_answer=logprobs",
          "claims.jsonl", "supported", "claims"),
    Judge("pairwise", "pairwise", "hhh_pairwise.jsonl", "candidate", "pairs"),
    Judge("pairwise-debiased", "pairwise:logprobs=true", "hhh_pairwise.jsonl", "candidate", "pairs"),
    Judge("pairwise-examples", "pairwise:logprobs=true", "pairwise.jsonl", "candidate", "pairs"),
]


# -- data ----------------------------------------------------------------------------------------
def read_cases(path: Path) -> list[dict]:
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            fail(f"{path}:{number}: not JSON ({exc.msg})")
        if not isinstance(case, dict) or "id" not in case:
            fail(f"{path}:{number}: field id: a case needs an id")
        if human_label(case) is None:
            fail(f"{path}:{number}: field {LABEL}: no human label")
        cases.append(case)
    return cases


def human_label(case: dict) -> str | None:
    label = (case.get("metadata") or {}).get("human_label")
    return None if label is None else str(label)


def balanced(cases: list[dict], limit: int | None) -> list[dict]:
    """The first limit/2 cases of each label in file order, interleaved (all cases without a limit)."""
    if not limit:
        return cases
    by_label: dict[str, list[dict]] = {}
    for case in cases:
        by_label.setdefault(human_label(case), []).append(case)
    out = []
    for i in range(limit // len(by_label)):
        out += [by_label[label][i] for label in sorted(by_label) if i < len(by_label[label])]
    return out


# -- statistics ----------------------------------------------------------------------------------
def auc(values: list[float], positive: list[bool]) -> float | None:
    """P(a positive case's value > a negative one's), ties half (Mann-Whitney)."""
    pos = [v for v, p in zip(values, positive) if p]
    neg = [v for v, p in zip(values, positive) if not p]
    if not pos or not neg:
        return None
    wins = sum((a > b) + 0.5 * (a == b) for a in pos for b in neg)
    return wins / (len(pos) * len(neg))


def accuracy(predicted: list[str], truth: list[str]) -> float | None:
    return sum(p == t for p, t in zip(predicted, truth)) / len(truth) if truth else None


def kappa(predicted: list[str], truth: list[str]) -> float | None:
    n = len(truth)
    if not n:
        return None
    seen = accuracy(predicted, truth)
    chance = sum(predicted.count(k) * truth.count(k) for k in set(truth) | set(predicted)) / (n * n)
    return None if chance == 1 else (seen - chance) / (1 - chance)


def resamples(n: int) -> list[list[int]]:
    rng = random.Random(SEED)
    return [[rng.randrange(n) for _ in range(n)] for _ in range(BOOTSTRAP)]


def interval(statistic, rows: list[list[int]]) -> list[float] | None:
    """Percentile 95% interval of statistic(indexes) over the resamples (resamples it cannot be
    computed on, such as one label only for an AUC, are left out)."""
    found = sorted(x for x in (statistic(r) for r in rows) if x is not None)
    if len(found) < BOOTSTRAP // 2:
        return None
    return [found[int(0.025 * len(found))], found[min(len(found) - 1, int(0.975 * len(found)))]]


@dataclass
class Scored:
    """One version's verdicts on a set, case by case (cases in set order)."""
    ids: list[str]
    truth: list[str]          # "pos" / "neg"
    values: list[float | None]
    predicted: list[str]      # "pos", "neg", or "tie" (no side)
    consistent: list[bool | None]

    # A case the judge gave no verdict for (an error: recorded, never a fake value) is left out.
    def judged(self, rows: list[int]) -> list[int]:
        return [i for i in rows if self.values[i] is not None]

    def auc(self, rows: list[int]) -> float | None:
        kept = self.judged(rows)
        return auc([self.values[i] for i in kept], [self.truth[i] == "pos" for i in kept])

    def accuracy(self, rows: list[int]) -> float | None:
        kept = self.judged(rows)
        return accuracy([self.predicted[i] for i in kept], [self.truth[i] for i in kept])

    def kappa(self, rows: list[int]) -> float | None:
        kept = self.judged(rows)
        return kappa([self.predicted[i] for i in kept], [self.truth[i] for i in kept])


def figures(scored: Scored, rows: list[list[int]]) -> dict:
    everything = list(range(len(scored.ids)))
    out = {"n": len(scored.judged(everything)), "errors": sum(v is None for v in scored.values)}
    for name in ("auc", "accuracy", "kappa"):
        method = getattr(scored, name)
        out[name] = method(everything)
        out[name + "_ci95"] = interval(method, rows)
    decided = [i for i in scored.judged(everything) if scored.predicted[i] != "tie"]
    out["decided"] = len(decided) / out["n"] if out["n"] else None
    consistent = [c for c in scored.consistent if c is not None]
    if consistent:
        out["position_consistent"] = sum(consistent) / len(consistent)
    return out


def paired(a: Scored, b: Scored, rows: list[list[int]]) -> dict:
    """B minus A on the same cases (those both versions judged): AUC and accuracy, with paired
    bootstrap intervals."""
    if a.ids != b.ids:
        fail("the two versions judged different cases: a paired comparison needs the same ones")
    both = set(a.judged(b.judged(list(range(len(a.ids))))))
    out: dict = {"n": len(both)}
    for name in ("auc", "accuracy"):
        def difference(r, name=name):
            r = [i for i in r if i in both]
            x, y = getattr(a, name)(r), getattr(b, name)(r)
            return None if x is None or y is None else y - x
        out[name] = difference(list(range(len(a.ids))))
        out[name + "_ci95"] = interval(difference, rows)
    return out


# -- no-model baselines --------------------------------------------------------------------------
_WORD = re.compile(r"\w+")


def words(text: str | None) -> list[str]:
    return _WORD.findall((text or "").lower())


def overlap(text: str | None, sources: str | None) -> float:
    said, known = words(text), set(words(sources))
    return sum(w in known for w in said) / len(said) if said else 0.0


def baseline_values(case: dict, kind: str) -> dict[str, float]:
    """Each no-model predictor's value for one case (higher = more likely the positive label, or the
    reverse: the direction is chosen on the data, see ``best_baseline``)."""
    if kind == "pairs":
        return {"longer response wins": float(len(words(case.get("candidate"))) - len(words(case.get("reference"))))}
    if kind == "claims":
        claim = (case.get("metadata") or {}).get("claim") or " ".join(
            " ".join(group) for group in (case.get("metadata") or {}).get("answers") or [])
        evidence = "\n".join(case.get("context") or []) or case.get("candidate")
        return {"claim-evidence word overlap": overlap(claim, evidence)}
    sources = "\n".join([*(case.get("context") or []), case.get("reference") or ""])
    return {"response length": float(len(words(case.get("candidate")))),
            "word overlap with context/reference": overlap(case.get("candidate"), sources)}


def best_baseline(cases: list[dict], truth: list[str], kind: str, rows: list[list[int]]) -> dict:
    """The baseline with the highest AUC (either direction: the direction is fitted on these cases,
    as a threshold would be) and its interval."""
    positive = [t == "pos" for t in truth]
    found = {}
    for name in baseline_values(cases[0], kind):
        values = [baseline_values(c, kind)[name] for c in cases]
        direct = auc(values, positive)
        if direct is None:
            continue
        sign = 1.0 if direct >= 0.5 else -1.0
        oriented = [sign * v for v in values]
        found[name] = {"name": name + ("" if sign > 0 else " (reversed)"), "auc": max(direct, 1 - direct),
                       "auc_ci95": interval(lambda r: auc([oriented[i] for i in r], [positive[i] for i in r]), rows)}
    return max(found.values(), key=lambda b: b["auc"]) if found else {}


# -- running a version ---------------------------------------------------------------------------
@dataclass
class Version:
    name: str
    kind: str   # current, rev, prompts, options
    arg: str = ""

    @classmethod
    def parse(cls, text: str) -> "Version":
        name, _, spec = text.partition("=")
        kind, _, arg = spec.partition(":")
        if not name or kind not in ("current", "rev", "prompts", "options"):
            fail(f"--version {text!r}: expected NAME=current, NAME=rev:REV, NAME=prompts:DIR or NAME=options:k=v,...")
        return cls(name, kind, arg)


def checkout(version: Version, work: Path) -> Path:
    """This checkout, or the revision's worktree under --work (made once)."""
    if version.kind != "rev":
        return ROOT
    tree = work / f"wt-{version.name}"
    if not tree.exists():
        run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), version.arg])
        # An editable install maps evalyard.prompts to the installed checkout's prompts/: point the
        # revision's own package at its own templates, so that the revision's prompts are the ones used.
        link = tree / "core" / "evalyard" / "prompts"
        if not link.exists():
            link.symlink_to(Path("..") / ".." / "prompts")
    return tree


def environment(version: Version, tree: Path) -> dict[str, str]:
    env = dict(os.environ)
    if version.kind == "rev":
        plugins = sorted(p for p in (tree / "plugins").iterdir() if (p / "pyproject.toml").exists())
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "core"), *map(str, plugins)])
        # plugins installed here that the revision does not have would fail to import against its core
        from importlib.metadata import entry_points

        present = {d.name for p in plugins for d in p.iterdir() if d.name.startswith("evalyard_")}
        missing = {ep.name for ep in entry_points(group="evalyard") if ep.value.split(".")[0] not in present
                   and not ep.value.startswith("evalyard.")}
        if missing:
            env["EVALYARD_BLOCK_PLUGINS"] = ",".join(sorted(missing))
        # an older revision may look for installed local models elsewhere: use this checkout's
        try:
            from evalyard_local.files import models_dir

            env.setdefault("EVALYARD_MODELS_DIR", str(models_dir()))
        except ImportError:  # no local-model plugin here
            pass
    return env


def scorer_spec(judge: Judge, version: Version) -> str:
    if version.kind != "options":
        return judge.scorer
    return judge.scorer + ("," if ":" in judge.scorer else ":") + version.arg


def run(command: list[str], env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        fail(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    return done.stdout


def judged(judge: Judge, version: Version, data: Path, args: argparse.Namespace) -> tuple[dict, list[dict]]:
    """calibrate's report and the exported results of one (judge, version), made once and kept."""
    work = Path(args.work)
    kept = work / version.name / f"{judge.key}-{data.stem}.json"
    if kept.exists():
        saved = json.loads(kept.read_text())
        return saved["calibrate"], saved["results"]
    tree = checkout(version, work)
    env = environment(version, tree)
    db = f"sqlite:///{(work / (version.name + '.db')).resolve()}"
    if args.timeout:  # a suite file around the cases: its models: section sets the call timeout
        suite = data.with_suffix(".yaml")
        suite.write_text(json.dumps({"data": data.name, "models": {args.judge_model: {"timeout": args.timeout}}}))
        data = suite
    command = ["evalyard", "calibrate", str(data.resolve()), "-s", scorer_spec(judge, version), "--positive",
               judge.positive, "--json", "--db", db, "-j", str(args.concurrency), "--show", "0"]
    if args.judge_model:
        command += ["--judge-model", args.judge_model]
    if version.kind == "prompts":
        command += ["--prompts-dir", str(Path(version.arg).resolve())]
    print(f"  {version.name}: {judge.scorer} on {data.name} ...", file=sys.stderr, flush=True)
    report = json.loads(run(command, env=env, cwd=tree))
    exported = run(["evalyard", "runs", "export", report["run_id"], "--db", db], env=env, cwd=tree)
    results = [json.loads(line) for line in exported.splitlines() if line.strip()]
    kept.parent.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps({"calibrate": report, "results": results, "command": command}))
    return report, results


def scored(judge: Judge, cases: list[dict], results: list[dict]) -> Scored:
    by_id = {r["case_id"]: r for r in results}
    truth, values, predicted, consistent = [], [], [], []
    for case in cases:
        truth.append("pos" if human_label(case) == judge.positive else "neg")
        row = by_id.get(case["id"]) or {}
        value = row.get("value") if row.get("error") is None else None
        values.append(value)
        details = row.get("details") or {}
        consistent.append(details.get("position_consistent"))
        if judge.baseline == "pairs":  # the judge's side; equal and inconsistent name none
            label = row.get("label")
            predicted.append({"candidate": "pos", "reference": "neg"}.get(label, "tie"))
        else:  # the scorer's own threshold, 0.5, on a value where high means the positive label
            predicted.append("tie" if value is None else "pos" if value >= 0.5 else "neg")
    return Scored([c["id"] for c in cases], truth, values, predicted, consistent)


def words_results(results: list[dict]) -> list[dict] | None:
    """A logprobs pairwise run's verdicts as the judge's words give them (``pairwise`` without
    logprobs): each order's greedy first token (``details.raw``, the word a temperature-0 reply
    starts with) combined by the original rule. None when the run kept no such tokens."""
    out = []
    for row in results:
        verdicts = (row.get("details") or {}).get("verdicts") or []
        if row.get("error") is not None or len(verdicts) != 2:
            out.append({**row, "value": None, "label": None, "details": {}})
            continue
        winners, values = [], []
        for verdict in verdicts:
            raw = str((verdict.get("details") or {}).get("raw") or "").strip().strip("`.").lower()
            if raw not in ("first", "second", "tie"):
                return None
            first_won = {"first": 1.0, "second": 0.0, "tie": 0.5}[raw]
            candidate_first = verdict.get("order") == "candidate_first"
            values.append(first_won if candidate_first else 1.0 - first_won)
            winners.append("tie" if raw == "tie" else "candidate" if (raw == "first") == candidate_first
                           else "reference")
        value = sum(values) / 2
        if winners[0] == winners[1]:
            label = {"candidate": "candidate", "reference": "reference", "tie": "equal"}[winners[0]]
        else:
            label = "candidate" if value > 0.5 else "reference" if value < 0.5 else "inconsistent"
        out.append({**row, "value": value, "label": label,
                    "details": {"position_consistent": winners[0] == winners[1]}})
    return out


def calibrate_summary(report: dict) -> dict:
    """What the project's calibrate said: held-out accuracy of its fitted threshold, its best baseline."""
    threshold = report.get("threshold") or {}
    held = threshold.get("held_out") or {}
    baselines = report.get("baselines") or {}
    best = max(((name, (b.get("held_out") or {}).get("accuracy")) for name, b in baselines.items()
                if (b.get("held_out") or {}).get("accuracy") is not None), key=lambda x: x[1], default=(None, None))
    return {"auc": report.get("auc"), "value": report.get("value"), "held_out_accuracy": held.get("accuracy"),
            "best_baseline_held_out": best[0],
            "best_baseline_held_out_accuracy": best[1], "run_id": report.get("run_id")}


# -- output --------------------------------------------------------------------------------------
def fmt(x: float | None, ci: list[float] | None = None, signed: bool = False) -> str:
    if x is None:
        return "-"
    text = f"{x:+.3f}" if signed else f"{x:.3f}"
    return text + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if signed and ci else f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else "")


def table(rows: list[dict], versions: list[Version]) -> str:
    lines = ["| judge | set (n) | version | AUC [95% CI] | accuracy at 0.5 [95% CI] | kappa [95% CI] | "
             "decided | position consistent | calibrate: AUC (value) | calibrate: held-out acc. | "
             "best baseline: AUC [95% CI] | its held-out acc. (calibrate) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        for version in versions:
            f, c = row["versions"].get(version.name), row["calibrate"].get(version.name)
            if f is None:
                continue
            base = row["baseline"]
            errors = f", {f['errors']} error{'s' if f['errors'] > 1 else ''} left out" if f["errors"] else ""
            lines.append(
                f"| `{row['scorer']}` | {row['set']} ({f['n']}{errors}) | {version.name} | {fmt(f['auc'], f['auc_ci95'])} | "
                f"{fmt(f['accuracy'], f['accuracy_ci95'])} | {fmt(f['kappa'], f['kappa_ci95'])} | "
                f"{fmt(f['decided'])} | {fmt(f.get('position_consistent'))} | "
                f"{fmt(c['auc'])}{' (' + c['value'] + ')' if c['value'] else ''} | {fmt(c['held_out_accuracy'])} | "
                f"{base.get('name', '-')}: {fmt(base.get('auc'), base.get('auc_ci95'))} | "
                f"{c['best_baseline_held_out'] or '-'}: {fmt(c['best_baseline_held_out_accuracy'])} |")
    if len(versions) == 2:
        a, b = versions
        lines += ["", f"Paired, {b.name} minus {a.name}, same cases (paired bootstrap, 95% CI):", "",
                  "| judge | set (n) | AUC difference | accuracy difference |", "|---|---|---|---|"]
        for row in rows:
            d = row.get("paired")
            if d:
                lines.append(f"| `{row['scorer']}` | {row['set']} ({d['n']}) | "
                             f"{fmt(d['auc'], d['auc_ci95'], True)} | {fmt(d['accuracy'], d['accuracy_ci95'], True)} |")
    return "\n".join(lines)


def fail(message: str) -> None:
    print(f"bench_judges: {message}", file=sys.stderr)
    raise SystemExit(2)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "examples" / "labelled"),
                        help="directory of labelled sets (default: examples/labelled)")
    parser.add_argument("--judge-model", help="judge model (default: $EVALYARD_JUDGE_MODEL)")
    parser.add_argument("--judges", help="comma-separated keys of JUDGES (default: every one whose set is in --data)")
    parser.add_argument("--limit", type=int, help="cases per set, class-balanced (default: all)")
    parser.add_argument("--version", action="append", default=[], metavar="NAME=SPEC",
                        help="current | rev:REV | prompts:DIR | options:k=v,... (twice for a paired comparison)")
    parser.add_argument("--work", default="bench-judges-work", help="databases, worktrees and kept results")
    parser.add_argument("-j", "--concurrency", type=int, default=1)
    parser.add_argument("--timeout", type=float, help="seconds a judge call may take (a slow local model on a "
                                                       "busy machine needs more than the default 60)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON instead of a table")
    args = parser.parse_args(argv)

    data_dir = Path(args.data)
    if not data_dir.is_dir():
        fail(f"--data {data_dir}: not a directory")
    if args.timeout and not args.judge_model:
        fail("--timeout needs --judge-model (the model whose calls it sets)")
    versions = [Version.parse(v) for v in args.version] or [Version("current", "current")]
    if len(versions) > 2:
        fail("--version: at most two versions (a paired comparison)")
    keys = args.judges.split(",") if args.judges else None
    unknown = set(keys or []) - {j.key for j in JUDGES}
    if unknown:
        fail(f"--judges: unknown {', '.join(sorted(unknown))} (known: {', '.join(j.key for j in JUDGES)})")
    chosen = [j for j in JUDGES if (keys is None or j.key in keys) and (data_dir / j.data).exists()]
    if not chosen:
        fail(f"no judge's labelled set is in {data_dir}")
    work = Path(args.work)
    (work / "data").mkdir(parents=True, exist_ok=True)

    rows = []
    for judge in chosen:
        source = data_dir / judge.data
        cases = balanced(read_cases(source), args.limit)
        subset = work / "data" / f"{source.stem}-{args.limit or 'all'}.jsonl"
        if not subset.exists():
            subset.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
        resampled = resamples(len(cases))
        row = {"judge": judge.key, "scorer": judge.scorer, "set": judge.data, "n": len(cases), "versions": {},
               "calibrate": {}, "scored": {}}
        words_row = None
        for version in versions:
            report, results = judged(judge, version, subset, args)
            row["scored"][version.name] = scored(judge, cases, results)
            row["versions"][version.name] = figures(row["scored"][version.name], resampled)
            row["calibrate"][version.name] = calibrate_summary(report)
            words = words_results(results) if judge.baseline == "pairs" and "logprobs=true" in judge.scorer else None
            if words is not None:  # the same calls read as before position debiasing
                words_row = words_row or {**row, "scorer": "pairwise (words: greedy first token of the same calls)",
                                          "versions": {}, "calibrate": {}, "scored": {}}
                words_row["scored"][version.name] = scored(judge, cases, words)
                words_row["versions"][version.name] = figures(words_row["scored"][version.name], resampled)
                words_row["calibrate"][version.name] = {"auc": None, "value": None, "held_out_accuracy": None,
                                                        "best_baseline_held_out": None,
                                                        "best_baseline_held_out_accuracy": None}
        truth = row["scored"][versions[0].name].truth
        row["baseline"] = best_baseline(cases, truth, judge.baseline, resampled)
        for kept in (words_row, row) if words_row else (row,):
            kept["baseline"] = row["baseline"]
            if len(versions) == 2:
                kept["paired"] = paired(kept["scored"][versions[0].name], kept["scored"][versions[1].name], resampled)
            del kept["scored"]
            rows.append(kept)
    if args.json:
        print(json.dumps({"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "judge_model":
                          args.judge_model, "limit": args.limit, "rows": rows}, indent=1))
    else:
        print(table(rows, versions))
    return 0


if __name__ == "__main__":
    sys.exit(main())
