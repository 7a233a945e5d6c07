"""Start a throwaway PostgreSQL server from Debian's packages for the store tests.

initdb refuses to run as root, so the server runs as the ``postgres`` user (or
``nobody``) in a fresh temp directory, on a private port and socket directory.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time


class Unavailable(Exception):
    pass


def _bin_dir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run("apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql",
                       shell=True, capture_output=True, timeout=600)
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise Unavailable("PostgreSQL server binaries not found (apt-get install postgresql)")
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    def __init__(self) -> None:
        self.bin = _bin_dir()
        self.user = next((u for u in ("postgres", "nobody") if _has_user(u)), None)
        if os.geteuid() == 0 and self.user is None:
            raise Unavailable("no unprivileged user to run PostgreSQL as")
        self.dir = tempfile.mkdtemp(prefix="evalyard-pg-")
        os.chmod(self.dir, 0o777)
        self.data = os.path.join(self.dir, "data")
        self.port = _free_port()

    def _as_user(self, *args: str) -> subprocess.CompletedProcess:
        command = list(args)
        if os.geteuid() == 0:
            command = ["runuser", "-u", self.user, "--"] + command
        return subprocess.run(command, capture_output=True, text=True, timeout=120)

    def start(self) -> str:
        init = self._as_user(f"{self.bin}/initdb", "-D", self.data, "-A", "trust", "-U", "evalyard", "--no-sync")
        if init.returncode:
            raise Unavailable(f"initdb failed: {init.stderr.strip()[-300:]}")
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        started = self._as_user(f"{self.bin}/pg_ctl", "-D", self.data, "-o", options, "-l",
                                os.path.join(self.dir, "log"), "-w", "start")
        if started.returncode:
            raise Unavailable(f"pg_ctl start failed: {started.stderr.strip()[-300:]}")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return f"postgresql+psycopg://evalyard@127.0.0.1:{self.port}/postgres"
            time.sleep(0.1)
        raise Unavailable("PostgreSQL did not accept connections within 20 s")

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=evalyard dbname=postgres", autocommit=True) as con:
            con.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql+psycopg://evalyard@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        self._as_user(f"{self.bin}/pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False
