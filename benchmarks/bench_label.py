"""The labelling sampler on a large run: time and Python memory of choosing the cases to label.

Builds a bulk synthetic run (``evalyard.report.synthetic.write_bulk_run``: two scorers, ~1%
errors) in a fresh SQLite file, then measures on its graded scorer ``overlap``:

- the first pass: ``evalyard.figures.labels.sample`` of 20 cases from 5 bins of the judge's value;
- labels stored for 500 cases (half of them against the judge's verdict);
- the second pass: the same sample with the disagreements first;
- ``labelled_cases``: the labelled cases read back for ``calibrate --run``;
- the labelling page's data (``page_cases``) for the second pass's cases.

Memory is the peak of Python allocations during each step (tracemalloc): bounded by the cases
sampled and labelled, not by the run.

    python benchmarks/bench_label.py --cases 1000000 [--write]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from datetime import date
from pathlib import Path


def measured(step):
    tracemalloc.start()
    started = time.perf_counter()
    out = step()
    seconds = time.perf_counter() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, peak / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200_000)
    parser.add_argument("--write", action="store_true", help="write the table into benchmarks/RESULTS.md")
    args = parser.parse_args()

    from sqlalchemy import select

    from evalyard.analysis.labels import judge_says_yes, scorer_entry
    from evalyard.figures.labels import labelled_cases, sample, save_label
    from evalyard.report.labelling import page_cases
    from evalyard.report.synthetic import write_bulk_run
    from evalyard.store import Store
    from evalyard.store.models import ResultRow

    work = Path(tempfile.mkdtemp(prefix="bench-label-"))
    store = Store(f"sqlite:///{work / 'label.db'}")
    started = time.perf_counter()
    run_id = write_bulk_run(store, args.cases)
    print(f"run {run_id}: {args.cases:,} cases built in {time.perf_counter() - started:.0f} s", flush=True)
    run = store.get_run(run_id)
    entry = scorer_entry(run, "overlap")
    rows = []

    first, seconds, peak = measured(lambda: sample(store, run, entry, 20, bins=5))
    rows.append(("first pass: sample 20 cases from 5 bins", seconds, peak))
    print(rows[-1], [p.why for p in first], flush=True)

    # 500 labels on cases spread over the run, every other one against the judge's verdict
    picked = sample(store, run, entry, 500, bins=5, seed=3)
    query = (select(ResultRow.case_id, ResultRow.value, ResultRow.label, ResultRow.passed)
             .where(ResultRow.run_id == run_id, ResultRow.scorer == "overlap",
                    ResultRow.case_id.in_([p.case_id for p in picked])))
    with store.engine.connect() as connection:
        verdicts = {row[0]: row[1:] for row in connection.execute(query)}
    for n, pick in enumerate(picked):
        says = judge_says_yes(*verdicts[pick.case_id], threshold=entry["threshold"])
        label = "yes" if says else "no"
        save_label(store, run_id, pick.case_id, label if n % 2 else {"yes": "no", "no": "yes"}[label])

    second, seconds, peak = measured(lambda: sample(store, run, entry, 20, bins=5))
    again = sum(p.why == "disagreement" for p in second)
    rows.append((f"second pass: {again} disagreements first, then 20 unlabelled cases", seconds, peak))
    print(rows[-1], flush=True)
    (cases, _), seconds, peak = measured(lambda: labelled_cases(store, run_id, "overlap"))
    rows.append((f"labelled_cases: the {len(cases)} labelled cases for calibrate --run", seconds, peak))
    print(rows[-1], flush=True)
    shown, seconds, peak = measured(lambda: page_cases(store, run, entry, second))
    rows.append((f"the page's data for the second pass's {len(shown)} cases", seconds, peak))
    print(rows[-1], flush=True)
    store.close()

    if args.write:
        from results_file import write_section

        body = [f"## Labelling sampler at scale\n",
                f"`python benchmarks/bench_label.py --cases {args.cases} --write` ({date.today().isoformat()}): a bulk "
                f"synthetic run of {args.cases:,} cases (`evalyard.report.synthetic.write_bulk_run`) in SQLite, the "
                f"graded scorer `overlap`; 2 cores shared with other sessions. Memory: peak Python allocations "
                f"during the step (tracemalloc).\n",
                "| step | seconds | peak MiB |", "| --- | ---: | ---: |"]
        body += [f"| {name} | {seconds:.2f} | {peak:.1f} |" for name, seconds, peak in rows]
        print(write_section("Labelling sampler at scale", "\n".join(body) + "\n"))


if __name__ == "__main__":
    main()
