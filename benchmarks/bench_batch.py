"""Batch mode end to end: 1,000 judge calls through `evalyard run --batch` against the fake OpenAI
server's Batch API, the driver killed with SIGKILL while it polls, then `--resume`.

Checks and reports: every case answered; the cost exactly half the online price of the same
tokens (litellm's batch prices for openai/gpt-4o-mini); no request submitted twice (read back
from the server's own batch input files); a rerun of the same suite answered entirely from the
response cache (0 calls). Writes the "Batch mode" section of RESULTS.md.

    .venv/bin/python benchmarks/bench_batch.py [--cases 1000] [--delay-s 8]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from results_file import write_section

MODEL = "openai/gpt-4o-mini"
PLUGIN = ("from evalyard import hookimpl\n"
          "from evalyard.prompting.scorer import register_prompt_scorer\n"
          "@hookimpl\n"
          "def register_scorers(register):\n"
          "    register_prompt_scorer('judge', template='correctness', register=register)\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--delay-s", type=float, default=8.0, help="how long the fake provider takes per job")
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    exe = str(Path(sys.executable).parent / "evalyard")
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    server = subprocess.Popen([sys.executable, "-m", "evalyard.testing.fake_openai", "--port", "0",
                               "--batch-delay-s", str(args.delay_s)], stdout=subprocess.PIPE, text=True)
    base_url = server.stdout.readline().rsplit(" ", 1)[1].strip()
    try:
        (work / "cases.jsonl").write_text("".join(json.dumps(
            {"id": f"q{i}", "input": f"question {i}", "candidate": f"answer {i}", "reference": f"answer {i}"}) + "\n"
            for i in range(args.cases)))
        suite = work / "suite.yaml"
        suite.write_text(f"name: batched\ndata: cases.jsonl\nscorers:\n  - judge\nmodels:\n  {MODEL}:\n"
                         f"    api_base: {base_url}\n    api_key_env: FAKE_KEY\n    batch_poll_s: 0.5\n")
        (work / "judge_plugin.py").write_text(PLUGIN)
        env = dict(os.environ, EVALYARD_HOME=str(work / "home"), EVALYARD_EXTRA_PLUGINS=str(work / "judge_plugin.py"),
                   FAKE_KEY="sk-fake")
        db = work / "home" / "evalyard.db"
        started = time.perf_counter()
        driver = subprocess.Popen([exe, "run", str(suite), "--judge-model", MODEL, "--batch"], env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)

        def jobs_submitted() -> int:
            try:
                with sqlite3.connect(db) as con:
                    return con.execute("select count(*) from batch_jobs where status='submitted'").fetchone()[0]
            except sqlite3.Error:
                return 0

        while not jobs_submitted():
            if driver.poll() is not None:
                raise SystemExit("the driver ended before its job was submitted")
            time.sleep(0.05)
        time.sleep(1.0)
        os.killpg(driver.pid, signal.SIGKILL)  # killed while polling
        driver.wait()
        with sqlite3.connect(db) as con:
            (run_id,), = con.execute("select id from runs").fetchall()
        resumed = subprocess.run([exe, "run", "--resume", run_id, "--json"], env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        if resumed.returncode:
            raise SystemExit(resumed.stderr)
        data = json.loads(resumed.stdout)
        usage = data["usage"]
        import litellm

        info = litellm.get_model_info(model=MODEL)
        online = usage["prompt_tokens"] * info["input_cost_per_token"] + usage["completion_tokens"] * info[
            "output_cost_per_token"]
        from evalyard.testing.fake_openai import submitted_batches

        jobs, ids = submitted_batches(base_url)
        rerun = subprocess.run([exe, "run", str(suite), "--judge-model", MODEL, "--batch", "--json"], env=env,
                               capture_output=True, text=True)
        rerun_usage = json.loads(rerun.stdout)["usage"]
    finally:
        server.terminate()
        server.wait()
    rows = [
        ("cases judged", f"{data['scorers']['judge']['scored']:,} of {args.cases:,} ({data['scorers']['judge']['errors']} errors)"),
        ("batch jobs at the provider", f"{jobs}"),
        ("requests submitted / distinct", f"{len(ids):,} / {len(set(ids)):,} (duplicates: {len(ids) - len(set(ids))})"),
        ("cost (batch price)", f"${usage['cost']:.6f}"),
        ("online price of the same tokens", f"${online:.6f} (batch / online = {usage['cost'] / online:.4f})"),
        ("rerun of the same suite", f"{rerun_usage['calls']} calls, {rerun_usage['cache_hits']} from the cache, "
                                    f"{rerun_usage['calls'] - rerun_usage['cache_hits']} sent"),
        ("wall time, start to resumed end", f"{elapsed:.1f} s (the fake provider takes {args.delay_s:g} s per job)"),
    ]
    lines = ["## Batch mode", "",
             f"`.venv/bin/python benchmarks/bench_batch.py --cases {args.cases} --delay-s {args.delay_s:g}`: "
             f"{args.cases:,} judge calls (`correctness` on `{MODEL}`) through `evalyard run --batch` against the fake "
             "OpenAI server's Batch API; the driver is killed with SIGKILL while it polls its job, then "
             "`evalyard run --resume RUN` finishes the run; then the same suite is run again.", "",
             "| measure | value |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines += ["", f"Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs, load average "
                  f"{os.getloadavg()[0]:.1f} when written, {time.strftime('%Y-%m-%d')}.", ""]
    print("\n".join(lines))
    write_section("Batch mode", "\n".join(lines))


if __name__ == "__main__":
    main()
