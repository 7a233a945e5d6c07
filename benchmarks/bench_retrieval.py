"""Retrieval measures at scale: evalyard (a TREC run file and qrels, all seven measures at
k = 1, 5, 10, 100, whole process, results stored) against pytrec_eval and ranx on the same files,
each as a whole process (start-up, reading the files, computing; evalyard also storing its results).

    .venv/bin/python benchmarks/bench_retrieval.py --queries 100000 --docs 100 --out /tmp/ir \
        --ranx-python .venvs/ranx/bin/python

ranx needs numba, which the project does not depend on: give it a venv of its own
(``python -m venv .venvs/ranx && .venvs/ranx/bin/pip install ranx``). ``--tools`` and
``--measures``/``--cutoffs`` narrow the run (the memory check at a million queries). Prints each
tool's wall and CPU seconds (user + system) and peak RSS, from /usr/bin/time.
"""

from __future__ import annotations

import argparse
import random
import subprocess
import sys
import time
from pathlib import Path

MEASURES = ("hit_rate", "precision", "recall", "r_precision", "mrr", "map", "ndcg")
CUTOFFS = (1, 5, 10, 100)

PYTREC = r"""
import sys, pytrec_eval
def read(path, cols):
    out = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if cols == 6:
                out.setdefault(p[0], {})[p[2]] = float(p[4])
            else:
                out.setdefault(p[0], {})[p[2]] = int(p[3])
    return out
run, qrels = read(sys.argv[1], 6), read(sys.argv[2], 4)
ks = "1,5,10,100"
measures = {"map", "ndcg", "recip_rank", "Rprec", f"P.{ks}", f"recall.{ks}", f"ndcg_cut.{ks}", f"map_cut.{ks}", f"success.{ks}"}
result = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
print(len(result))
"""

RANX = r"""
import sys
from ranx import Qrels, Run, evaluate
run = Run.from_file(sys.argv[1], kind="trec")
qrels = Qrels.from_file(sys.argv[2], kind="trec")
metrics = [f"{m}@{k}" for m in ("hit_rate", "precision", "recall", "mrr", "map", "ndcg") for k in (1, 5, 10, 100)]
scores = evaluate(qrels, run, metrics + ["r-precision"])
print(len(scores))
"""


def write(out: Path, queries: int, docs: int, seed: int = 1) -> tuple[Path, Path]:
    """A TREC run (``docs`` per query) and qrels (1-5 judged documents per query, some unretrieved)."""
    rng = random.Random(seed)
    run, qrels = out / "run.trec", out / "qrels.txt"
    with run.open("w") as r, qrels.open("w") as q:
        for n in range(queries):
            qid = f"q{n}"
            for rank in range(1, docs + 1):  # scores with ties every few ranks
                r.write(f"{qid} Q0 d{rank} {rank} {1 - (rank // 3) / docs:.4f} bench\n")
            judged = rng.sample(range(1, 2 * docs), rng.randint(1, 5))
            for doc in judged:
                q.write(f"{qid} 0 d{doc} {rng.randint(0, 3)}\n")
    return run, qrels


def timed(command: list[str]) -> tuple[float, float, float]:
    """(wall s, CPU s = user + system, peak RSS MB) of the command as a whole process."""
    started = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", *command], capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command[0]} failed: {done.stderr[-1500:]}")
    peak_kb, user, system = map(float, done.stderr.strip().splitlines()[-1].split())
    return wall, user + system, peak_kb / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tools", default="evalyard,pytrec_eval,ranx", help="which to time, in this order")
    parser.add_argument("--measures", default=",".join(MEASURES), help="evalyard's measures (default: all seven)")
    parser.add_argument("--cutoffs", default=",".join(map(str, CUTOFFS)))
    parser.add_argument("--pytrec-python", default=sys.executable, help="a Python with pytrec-eval-terrier")
    parser.add_argument("--ranx-python", default=sys.executable, help="a Python with ranx (and numba)")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    run, qrels = write(args.out, args.queries, args.docs)
    exe = str(Path(sys.executable).parent / "evalyard")
    measures, cutoffs = args.measures.split(","), args.cutoffs.split(",")
    scorers = [a for m in measures for k in cutoffs for a in ("-s", f"{m}@{k}")]
    db = args.out / "runs.db"
    commands = {
        "evalyard": [exe, "run", str(run), "--qrels", str(qrels), *scorers, "--db", f"sqlite:///{db}", "--json"],
        "pytrec_eval": [args.pytrec_python, "-c", PYTREC, str(run), str(qrels)],
        "ranx": [args.ranx_python, "-c", RANX, str(run), str(qrels)],
    }
    rows = []
    for tool in args.tools.split(","):
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        rows.append((tool, *timed(commands[tool])))
    print(f"{args.queries} queries x {args.docs} documents; evalyard: {len(scorers) // 2} scorers "
          f"({', '.join(measures)} at k = {', '.join(cutoffs)}), one stored result each")
    print(f"{'tool':<14} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    for name, wall, cpu, peak in rows:
        print(f"{name:<14} {wall:>8.1f} {cpu:>8.1f} {peak:>8.0f}")


if __name__ == "__main__":
    main()
