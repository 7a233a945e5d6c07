"""Run every benchmark script in this folder, one after another (`make bench`)."""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
failed = []
for script in sorted(here.glob("bench_*.py")):
    print(f"\n== {script.name}", flush=True)
    if subprocess.run([sys.executable, str(script)]).returncode:
        failed.append(script.name)
sys.exit(1 if failed else 0)
