"""A runtime tripwire from PEP 578 audit hooks, installed in the run just before candidate code.

Not a security boundary (PEP 578 says so: native code can bypass it), which is why
the OS layers exist. What it adds: a refused operation becomes a clear Python
exception -- and so an ``error`` verdict naming the operation -- instead of a
silent failure (``os.system`` returning -1 because process creation is blocked),
and a second wall where an OS layer is missing (no jail: file access outside the
run's directory is refused here). It also refuses the introspection that in-process
verdict forging needs (frame walking, ``gc`` object walks, tracing).

Refused: process creation and ``exec``, signals, sockets, ctypes and native
loading, code-object construction, writes outside the run's directory, reads
outside it and the standard library, and ``gc``/trace/frame introspection.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_REFUSED_EVENTS = frozenset({
    "os.system", "os.fork", "os.forkpty", "os.kill", "os.killpg", "os.chroot", "os.startfile",
    "os.posix_spawn", "os.posix_spawnp", "os.exec", "os.spawn", "pty.spawn", "subprocess.Popen",
    "sys.settrace", "sys.setprofile", "sys._current_frames", "sys._current_exceptions",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__", "function.__new__",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.addressof", "ctypes.cdata",
    "ctypes.call_function", "ctypes.string_at", "ctypes.wstring_at", "ctypes.PyObj_FromPtr",
    "mmap.__new__", "resource.prlimit", "signal.pthread_kill", "webbrowser.open",
    "sys.addaudithook", "cpython.remote_debugger_script",
})
_REFUSED_PREFIXES = ("socket.", "ctypes.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn",
                     "urllib.", "http.", "ftplib.", "smtplib.", "imaplib.", "poplib.", "nntplib.", "telnetlib.")
_REFUSED_IMPORTS = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "mmap", "_socket", "socket",
                              "multiprocessing", "_multiprocessing", "_testcapi", "_xxsubinterpreters"})
#: Attribute reads CPython audits that lead from a value to a live frame.
_FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back"})

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
    "glob.glob": ((0,), False), "os.add_dll_directory": ((0,), True),
}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


class Tripwire:
    """Holds the switch the harness flips around its own bookkeeping (e.g. walking a traceback)."""

    def __init__(self, workdir: str, read_roots: list[str], *, resolved: bool = False) -> None:
        """``resolved``: the paths are already real (no symlinks), as the worker's are."""
        self.workdir = workdir if resolved else os.path.realpath(workdir)
        self.read_roots = list(read_roots) if resolved else [os.path.realpath(r) for r in read_roots]
        self.suspended = False

    def _inside(self, path: Any, roots: list[str]) -> bool:
        if isinstance(path, int):
            return path in (0, 1, 2)
        try:
            text = os.fsdecode(os.fspath(path))
        except TypeError:
            return False
        if text in ("", ".") or not text:
            text = "."
        resolved = os.path.realpath(text)
        return any(resolved == root or resolved.startswith(root + os.sep) for root in roots)

    def check_path(self, event: str, path: Any, writes: bool) -> None:
        roots = [self.workdir] if writes else [self.workdir, *self.read_roots]
        if not self._inside(path, roots):
            action = "write" if writes else "read"
            raise PermissionError(f"sandbox: {event} may not {action} {path!r} (outside the run directory)")

    def hook(self, event: str, args: tuple) -> None:
        if self.suspended:
            return
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
        elif event == "object.__getattr__":
            if len(args) > 1 and args[1] in _FRAME_ATTRIBUTES:
                raise PermissionError(f"sandbox: reading {args[1]} is not permitted")
        elif event in _PATH_EVENTS:
            indexes, writes = _PATH_EVENTS[event]
            for index in indexes:
                if index < len(args) and args[index] is not None:
                    self.check_path(event, args[index], writes)


#: (size of sys.modules, the tripwire and its bound hook) built by prepare() in the worker
_prepared: tuple[int, Tripwire, Any] | None = None


def _drop_refused_modules() -> None:
    """Forget loaded modules the hook refuses, so importing them again trips the import event.

    (A cached ``ctypes._endian`` would otherwise be importable without one.) Whoever
    imported them keeps its own reference: the worker's ``jail`` still calls ctypes.
    """
    for name in [name for name in sys.modules if name.partition(".")[0] in _REFUSED_IMPORTS]:
        sys.modules.pop(name, None)


def prepare(read_roots: list[str]) -> None:
    """In the worker, before any fork: drop the refused modules it loaded (it uses ctypes itself)
    and build the tripwire every run will install.

    Doing both in each run cost it ~40 copy-on-write faults and ~0.1 ms: popping three
    entries of ``sys.modules`` and building the hook object touch pages shared with the
    worker. A run only sets its directory on the prepared tripwire. ``read_roots`` must be
    resolved paths (the worker's are).
    """
    global _prepared
    _drop_refused_modules()
    wire = Tripwire("", read_roots, resolved=True)
    _prepared = (len(sys.modules), wire, wire.hook)


def install(workdir: str, read_roots: list[str], *, resolved: bool = False) -> Tripwire:
    """Install the hook for the rest of this process's life (audit hooks cannot be removed)."""
    prepared, size = _prepared, len(sys.modules)
    if prepared is not None and prepared[0] == size and resolved and prepared[1].read_roots == read_roots:
        _, wire, hook = prepared
        wire.workdir = workdir
    else:  # not prepared, other roots, or something was imported since prepare(): the full way
        _drop_refused_modules()
        wire = Tripwire(workdir, read_roots, resolved=resolved)
        hook = wire.hook
    sys.addaudithook(hook)
    return wire
