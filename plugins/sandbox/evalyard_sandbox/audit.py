"""A runtime tripwire from PEP 578 audit hooks, installed in the run just before candidate code.

Not a security boundary (PEP 578 says so: native code can bypass it), which is why
the OS layers exist. What it adds: an attempt to leave the sandbox becomes a clear
Python exception -- and so an ``error`` verdict naming the operation -- instead of a
silent failure (``os.system`` returning -1 because process creation is blocked), and
a second wall where an OS layer is missing (no jail: file access outside the run's
directory is refused here; no network namespace: connections are refused here).

It refuses only what leaves the sandbox, never what correct programs do inside it:
process creation and ``exec``, signals to other processes, loading native code
(ctypes), writes outside the run's directory, reads outside it, ``/usr`` and
``/dev``'s few devices, and -- only where the network namespace is missing --
network connections and name lookups. Sockets themselves (``asyncio``'s socketpair)
are fine: with the network namespace there is nothing to reach.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_REFUSED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.chroot", "os.startfile",
    "pty.spawn", "subprocess.Popen", "signal.pthread_kill", "resource.prlimit", "ctypes.dlopen",
})
_REFUSED_PREFIXES = ("ctypes.", "os.exec", "os.spawn", "os.posix_spawn")
#: refused only where the worker has no network namespace (then they would reach the host's network)
_NETWORK_EVENTS = frozenset({
    "socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
    "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo",
})
_NETWORK_PREFIXES = ("urllib.", "http.", "ftplib.", "smtplib.", "imaplib.", "poplib.", "nntplib.", "telnetlib.")
#: native code escapes the tripwire itself
_REFUSED_IMPORTS = frozenset({"ctypes", "_ctypes"})
#: readable besides the run's directory and the standard library (what the jail shows anyway)
_EXTRA_READ_ROOTS = ("/usr", "/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")

#: (event, index of each path argument, whether it writes)
_PATH_EVENTS = {
    "os.remove": ((0,), True), "os.rename": ((0, 1), True), "os.mkdir": ((0,), True),
    "os.rmdir": ((0,), True), "os.symlink": ((1,), True), "os.link": ((0, 1), True),
    "os.chmod": ((0,), True), "os.chown": ((0,), True), "os.truncate": ((0,), True),
    "os.utime": ((0,), True), "os.mkfifo": ((0,), True), "os.mknod": ((0,), True),
    "os.setxattr": ((0,), True), "os.removexattr": ((0,), True), "os.chflags": ((0,), True),
    "shutil.rmtree": ((0,), True), "shutil.copyfile": ((0, 1), True), "shutil.copymode": ((0, 1), True),
    "shutil.copystat": ((0, 1), True), "shutil.copytree": ((0, 1), True), "shutil.move": ((0, 1), True),
    "shutil.chown": ((0,), True), "shutil.make_archive": ((0,), True), "shutil.unpack_archive": ((0, 1), True),
    "sqlite3.connect": ((0,), True), "os.listdir": ((0,), False), "os.scandir": ((0,), False),
    "os.getxattr": ((0,), False), "os.listxattr": ((0,), False), "os.chdir": ((0,), False),
    "glob.glob": ((0,), False),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Tripwire:
    def __init__(self, workdir: str, read_roots: list[str], *, network_isolated: bool) -> None:
        self.workdir = os.path.realpath(workdir)
        self.read_roots = [os.path.realpath(r) for r in (*read_roots, *_EXTRA_READ_ROOTS)]
        self.network_isolated = network_isolated

    def _inside(self, path: Any, roots: list[str]) -> bool:
        if isinstance(path, int):  # a descriptor the run already holds (tempfile.TemporaryFile, os.fdopen)
            return True
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return False
        if text == ":memory:":  # sqlite3's in-memory database
            return True
        resolved = os.path.realpath(text or ".")
        return any(resolved == root or resolved.startswith(root + os.sep) for root in roots)

    def check_path(self, event: str, path: Any, writes: bool) -> None:
        roots = [self.workdir] if writes else [self.workdir, *self.read_roots]
        if not self._inside(path, roots):
            action = "write" if writes else "read"
            raise PermissionError(f"sandbox: {event} may not {action} {path!r} (outside the run directory)")

    def hook(self, event: str, args: tuple) -> None:
        if event in _REFUSED_EVENTS or event.startswith(_REFUSED_PREFIXES):
            raise PermissionError(f"sandbox: {event} is not permitted")
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writes = bool(isinstance(mode, str) and any(c in mode for c in "wax+")) or bool(
                isinstance(flags, int) and flags & _WRITE_FLAGS)
            self.check_path(event, path, writes)
        elif event == "import":
            name = args[0] if args else ""
            if isinstance(name, str) and name.partition(".")[0] in _REFUSED_IMPORTS:
                raise ImportError(f"sandbox: import of {name!r} is not permitted")
        elif event in _PATH_EVENTS:
            indexes, writes = _PATH_EVENTS[event]
            for index in indexes:
                if index < len(args) and args[index] is not None:
                    self.check_path(event, args[index], writes)
        elif not self.network_isolated and (event in _NETWORK_EVENTS or event.startswith(_NETWORK_PREFIXES)):
            raise PermissionError(f"sandbox: {event} is not permitted (no network namespace on this machine)")


def install(workdir: str, read_roots: list[str], *, network_isolated: bool) -> Tripwire:
    """Install the hook for the rest of this process's life (audit hooks cannot be removed).

    Loaded modules the hook refuses are forgotten first, so importing them again trips
    the import event (the worker's own ``jail`` uses ctypes; a cached ``ctypes._endian``
    would otherwise be importable without one).
    """
    for name in [name for name in sys.modules if name.partition(".")[0] in _REFUSED_IMPORTS]:
        sys.modules.pop(name, None)
    wire = Tripwire(workdir, read_roots, network_isolated=network_isolated)
    sys.addaudithook(wire.hook)
    return wire
