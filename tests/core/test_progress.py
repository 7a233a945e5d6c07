"""A progress bar on a terminal, silence otherwise."""

from __future__ import annotations

import os
import subprocess

from testutil import write


def test_progress_bar_only_on_a_terminal(tmp_path, cli_env, evalyard_exe):
    path = write(tmp_path / "c.jsonl", "".join(f'{{"id": "{i}", "candidate": "{{}}"}}\n' for i in range(50)))
    quiet = subprocess.run([evalyard_exe, "run", str(path), "-s", "json_valid"], env=cli_env, capture_output=True,
                           text=True)
    assert quiet.returncode == 0 and quiet.stderr == ""

    primary, secondary = os.openpty()
    proc = subprocess.Popen([evalyard_exe, "run", str(path), "-s", "json_valid"], env=cli_env,
                            stdout=subprocess.PIPE, stderr=secondary)
    os.close(secondary)
    out, _ = proc.communicate(timeout=60)
    chunks = []
    while True:
        try:
            data = os.read(primary, 4096)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(primary)
    terminal = b"".join(chunks).decode(errors="replace")
    assert proc.returncode == 0 and b"json_valid" in out
    assert "scoring" in terminal and "50/50" in terminal
