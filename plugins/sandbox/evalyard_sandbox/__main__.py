"""``python -m evalyard_sandbox``: report which isolation layers hold on this machine."""

from __future__ import annotations

import json
import sys

from .client import SandboxClient


def main() -> int:
    client = SandboxClient(slots=1)
    try:
        probe = client.run_many([{"code": "x = 1", "tests": "assert x == 1", "timeout": 5.0}])[0]
        report = {"isolation": client.isolation, "probe": probe.get("status"), "python": sys.version.split()[0]}
    finally:
        client.close()
    print(json.dumps(report, indent=2))
    return 0 if report["probe"] == "pass" else 1


if __name__ == "__main__":
    sys.exit(main())
