"""OS isolation layers (Linux), used only inside the sandbox worker and its children.

Two levels:

- ``setup_worker`` runs once when the worker starts. It moves the worker into new
  mount, network, IPC and UTS namespaces (directly as root, or inside a new user
  namespace where unprivileged user namespaces are allowed), and pivots into a
  read-only filesystem jail holding only /usr, the standard library and a few
  /dev nodes, with a size-capped tmpfs for the runs' working directories. Every
  child forked afterwards inherits all of that for free, which is why it is done
  once here rather than per run.
- ``confine_run`` runs in each forked child just before untrusted code: resource
  limits, a per-slot unprivileged uid (when we are real root) or dropped
  capabilities (inside a user namespace), no-new-privileges, not dumpable.

Every step is attempted and its outcome recorded in an ``Isolation`` report, so
the platform can say exactly which layers held on this machine instead of
assuming. Nothing here imports anything heavy; ctypes reaches the few syscalls
that Python 3.11's ``os`` lacks (unshare, mount, pivot_root, capset, prctl).
"""

from __future__ import annotations

import ctypes
import os
import platform
import resource
import sysconfig
import tempfile

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_NOATIME = 1024
MS_NODIRATIME = 2048
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_RELATIME = 1 << 21
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38

# Syscall numbers glibc has no wrapper for (or only a recent one).
_SYSCALLS = {
    "x86_64": {"pivot_root": 155, "capset": 126},
    "aarch64": {"pivot_root": 41, "capset": 91},
}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _syscall_number(name: str) -> int:
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        raise OSError(0, f"{name}: unsupported architecture {platform.machine()}")
    return numbers[name]


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def enc(value: str | None) -> bytes | None:
        return None if value is None else os.fsencode(value)

    _check(
        _libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)),
        f"mount {target}",
    )


def umount2(target: str, flags: int) -> None:
    _check(_libc.umount2(os.fsencode(target), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _syscall_number("pivot_root")
    _check(_libc.syscall(ctypes.c_long(number), os.fsencode(new_root), os.fsencode(put_old)), "pivot_root")


def prctl(option: int, arg: int) -> None:
    _check(_libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0),
                       ctypes.c_ulong(0), ctypes.c_ulong(0)), f"prctl({option})")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def drop_capabilities() -> None:
    """Clear every capability of this process (used where we are 'root' only inside a user namespace)."""
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two 32-bit data words
    data = (_CapData * 2)()
    number = _syscall_number("capset")
    _check(_libc.syscall(ctypes.c_long(number), ctypes.byref(header), ctypes.byref(data)), "capset")


class Isolation:
    """What actually holds on this machine; sent to the client and shown in score details.

    """

    __slots__ = ("user_namespace", "mount_jail", "network_namespace", "ipc_namespace", "run_uid_base",
                 "pid_namespace_per_run", "scratch_dir", "host_mountpoint", "notes")

    def __init__(self) -> None:
        self.user_namespace = False
        self.mount_jail = False
        self.network_namespace = False
        self.ipc_namespace = False
        #: runs execute as uid ``run_uid_base + slot`` (needs real root); None when not possible
        self.run_uid_base: int | None = None
        #: each run gets its own PID namespace (used when no per-slot uid is available)
        self.pid_namespace_per_run = False
        self.scratch_dir = ""
        #: host directory the jail was built on, if one had to be created (empty; the client removes it)
        self.host_mountpoint: str | None = None
        self.notes: list[str] = []

    def to_dict(self) -> dict:
        report = {name: getattr(self, name) for name in self.__slots__}
        report["notes"] = list(self.notes)
        return report


def stdlib_dirs() -> list[str]:
    """Directories the standard library is imported from (bound read-only into the jail)."""
    paths = sysconfig.get_paths()
    dirs = []
    for key in ("stdlib", "platstdlib"):
        path = os.path.realpath(paths[key])
        if os.path.isdir(path) and path not in dirs:
            dirs.append(path)
    # a venv's platstdlib points at the venv; only real stdlib trees (with os.py) matter
    return [d for d in dirs if os.path.exists(os.path.join(d, "os.py"))]


def _enter_namespaces(force_user_namespace: bool, iso: Isolation) -> bool:
    """Unshare mount/net/ipc/uts namespaces; via a user namespace when not root. True on success."""
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
    if os.geteuid() == 0 and not force_user_namespace:
        try:
            unshare(flags)
            iso.network_namespace = iso.ipc_namespace = True
            return True
        except OSError as exc:
            iso.notes.append(f"namespaces as root refused ({exc.strerror}); trying a user namespace")
    uid, gid = os.geteuid(), os.getegid()
    try:
        unshare(flags | CLONE_NEWUSER)
    except OSError as exc:
        iso.notes.append(f"user namespaces unavailable ({exc.strerror}): no network namespace, no filesystem jail")
        return False
    # Map only ourselves: 'root' inside is our own uid outside, with no power beyond it.
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        try:
            with open(f"/proc/self/{name}", "w") as handle:
                handle.write(text)
        except OSError as exc:
            iso.notes.append(f"writing /proc/self/{name} failed: {exc}")
    iso.user_namespace = iso.network_namespace = iso.ipc_namespace = True
    return True


def _bind_read_only(source: str, target: str) -> None:
    mount(source, target, None, MS_BIND | MS_REC)
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
    try:
        mount(None, target, None, flags)
    except OSError:
        # Inside a user namespace the source's atime/noexec flags are locked and must be repeated.
        st = os.statvfs(source).f_flag
        for st_flag, ms_flag in ((os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, MS_NOATIME),
                                 (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME)):
            if st & st_flag:
                flags |= ms_flag
        mount(None, target, None, flags)


def _build_jail(scratch_mb: int, read_only: list[str], iso: Isolation) -> None:
    """Pivot into a tmpfs root that holds read-only binds of ``read_only`` and a private /tmp."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    base = os.path.realpath(tempfile.gettempdir())
    if any(p == base or p.startswith(base + "/") for p in read_only):
        # a source lives under the temp dir: build beside it instead of covering it
        base = tempfile.mkdtemp(prefix="evalyard-sandbox-jail-")
        iso.host_mountpoint = base
    # Cover the temp dir with a tmpfs in our private mount namespace only (the host sees nothing,
    # and nothing is left behind there), then build the new root as a mount point inside it.
    mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
    root = base + "/root"
    os.mkdir(root, 0o755)
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=755")
    old_umask = os.umask(0o022)
    try:
        bound: list[str] = []
        for source in sorted(set(read_only)):
            if any(source == b or source.startswith(b + "/") for b in bound) or not os.path.isdir(source):
                continue
            target = root + source
            os.makedirs(target, exist_ok=True)
            _bind_read_only(source, target)
            bound.append(source)
        # /lib, /lib64, /bin are symlinks into /usr on merged-usr systems; real dirs elsewhere.
        for name in ("lib", "lib64", "lib32", "bin", "sbin"):
            host = "/" + name
            if os.path.islink(host):
                os.symlink(os.readlink(host), root + host)
            elif os.path.isdir(host) and host not in bound:
                os.makedirs(root + host, exist_ok=True)
                _bind_read_only(host, root + host)
        os.makedirs(root + "/dev", exist_ok=True)
        for node in ("null", "zero", "urandom", "random"):
            target = f"{root}/dev/{node}"
            open(target, "w").close()
            mount(f"/dev/{node}", target, None, MS_BIND)
        os.makedirs(root + "/tmp", exist_ok=True)
        # root-owned and not world-writable: a run can write only inside its own directory
        mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, f"size={scratch_mb}m,mode=755")
        os.makedirs(root + "/.oldroot", exist_ok=True)
        pivot_root(root, root + "/.oldroot")
        os.chdir("/")
        umount2("/.oldroot", MNT_DETACH)
        os.rmdir("/.oldroot")
        # The skeleton itself becomes read-only; /tmp and the /dev binds are separate mounts.
        mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    finally:
        os.umask(old_umask)
    iso.mount_jail = True
    iso.scratch_dir = "/tmp"


def _probe(child) -> bool:
    """Run ``child`` in a throwaway fork; True if it exits 0 (probes what the kernel permits)."""
    pid = os.fork()
    if pid == 0:
        try:
            code = 0 if child() is not False else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _can_switch_uid(uid: int) -> bool:
    def child():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)

    return _probe(child)


def _uid_can_read(uid: int, directory: str) -> bool:
    def child():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        os.listdir(directory)

    return _probe(child)


def _can_unshare_pid() -> bool:
    def child():
        unshare(CLONE_NEWPID)
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

    return _probe(child)


def setup_worker(*, namespaces: bool, scratch_mb: int, uid_base: int, slots: int,
                 force_user_namespace: bool = False) -> Isolation:
    """Apply the worker-wide layers and report which hold. Never raises: a layer that fails is noted."""
    iso = Isolation()
    in_namespaces = False
    if namespaces:
        in_namespaces = _enter_namespaces(force_user_namespace, iso)
    else:
        iso.notes.append("namespaces disabled by configuration")
    if in_namespaces:
        read_only = ["/usr", *stdlib_dirs()]
        try:
            _build_jail(scratch_mb, read_only, iso)
        except OSError as exc:
            iso.notes.append(f"filesystem jail not built ({exc}); runs see the host filesystem")
    if not iso.mount_jail:
        iso.scratch_dir = os.path.realpath(tempfile.mkdtemp(prefix="evalyard-sandbox-"))
        os.chmod(iso.scratch_dir, 0o755)
    # A distinct unprivileged uid per concurrent slot: runs cannot signal, ptrace or read each other,
    # and RLIMIT_NPROC is enforced (it is not for root).
    if os.geteuid() == 0 and not iso.user_namespace and _can_switch_uid(uid_base + slots - 1):
        iso.run_uid_base = uid_base
    elif os.geteuid() == 0 and not iso.user_namespace:
        iso.notes.append("could not switch to an unprivileged uid; runs keep the worker's uid")
    if iso.run_uid_base is not None and not iso.mount_jail:
        unreadable = [d for d in stdlib_dirs() if not _uid_can_read(iso.run_uid_base, d)]
        if unreadable:
            iso.notes.append(f"the run uid cannot read {', '.join(unreadable)}: runs can import only the "
                             "modules the worker preloaded (the jail binds the standard library readable)")
    if iso.run_uid_base is None:
        # Without a private uid, a PID namespace per run keeps kill(-1) and stray children contained.
        iso.pid_namespace_per_run = _can_unshare_pid()
        if not iso.pid_namespace_per_run:
            iso.notes.append("no PID namespace per run: a run shares the PID space with the worker's user")
    return iso


class RunLimits:
    __slots__ = ("cpu_seconds", "memory_bytes", "file_bytes", "open_files")

    def __init__(self, cpu_seconds: int, memory_bytes: int, file_bytes: int, open_files: int) -> None:
        self.cpu_seconds, self.memory_bytes = cpu_seconds, memory_bytes
        self.file_bytes, self.open_files = file_bytes, open_files


def _vm_size_bytes(proc_fd: int | None) -> int:
    """This process's current address-space size (RLIMIT_AS counts what fork inherited)."""
    if proc_fd is None:
        return 0
    try:
        fd = os.open("self/statm", os.O_RDONLY, dir_fd=proc_fd)
    except OSError:
        return 0
    try:
        pages = int(os.read(fd, 100).split()[0])
    finally:
        os.close(fd)
    return pages * os.sysconf("SC_PAGE_SIZE")


def confine_run(limits: RunLimits, *, uid: int | None, in_user_namespace: bool, proc_fd: int | None) -> list[str]:
    """Last step before untrusted code in a forked child: privileges, then limits. Returns notes."""
    notes = []
    vm_base = _vm_size_bytes(proc_fd)
    if uid is not None:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    elif in_user_namespace:
        try:
            drop_capabilities()
        except OSError as exc:
            notes.append(f"capabilities not dropped: {exc}")
    for option, arg in ((PR_SET_NO_NEW_PRIVS, 1), (PR_SET_DUMPABLE, 0)):
        try:
            prctl(option, arg)
        except OSError as exc:
            notes.append(str(exc))
    memory = vm_base + limits.memory_bytes if vm_base else limits.memory_bytes
    for rlimit, value in (
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes)),
        (resource.RLIMIT_NOFILE, (limits.open_files, limits.open_files)),
        # 0: no new process or thread (counted per uid; root bypasses it, hence the uid switch)
        (resource.RLIMIT_NPROC, (0, 0)),
        (resource.RLIMIT_AS, (memory, memory)),
        # soft limit sends SIGXCPU, the hard one a second later SIGKILL
        (resource.RLIMIT_CPU, (limits.cpu_seconds, limits.cpu_seconds + 1)),
    ):
        try:
            resource.setrlimit(rlimit, value)
        except (OSError, ValueError) as exc:
            notes.append(f"setrlimit {rlimit}: {exc}")
    return notes
