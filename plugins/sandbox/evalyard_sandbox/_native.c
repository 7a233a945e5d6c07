/* The sandbox's per-run hot path in C: fork a zygote, wait for its job, confine it.
 *
 * Why C: a child forked from the worker shares the worker's memory copy-on-write,
 * so every page it *writes* costs a fault and a 4 KiB copy, and CPython writes to
 * every object it touches (reference counts, bytecode warm-up counters, frames).
 * Doing these steps in Python cost each child ~250 faults (~1 ms here) before the
 * candidate ran; in C they touch a few stack pages. See README.md, "Performance".
 *
 * The steps are the same system calls as the pure-Python path in child.py and
 * jail.py, which stays the fallback (and is used with a PID namespace per run).
 *
 * fork_zygote deliberately skips PyOS_AfterFork_Child: the worker is
 * single-threaded (no lock can be held by another thread, no other thread state
 * exists), and going through it cost each child ~50 page faults. The worker
 * checks that it has no other threads before using this. The one at-fork
 * callback the worker has, random's reseed, is run by the child itself
 * (child._reseed_random), which costs it ~15 faults.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SYS_close_range
#define SYS_close_range 436
#endif

/* Close every descriptor >= low except those in keep (sorted ascending, n entries). */
static void close_range_or_loop(unsigned low, unsigned high)
{
    if (syscall(SYS_close_range, low, high, 0) == 0)
        return;
    struct rlimit lim;
    unsigned top = 65536;
    if (getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < (rlim_t)top)
        top = (unsigned)lim.rlim_cur;
    if (high > top)
        high = top;
    for (unsigned fd = low; fd <= high; fd++)
        close((int)fd);
}

/* Close every descriptor >= low except those in keep (sorted ascending, n entries). */
static void close_all_but(int low, const int *keep, int n)
{
    for (int i = 0; i < n; i++) {
        if (keep[i] < low)
            continue;
        if (keep[i] > low)
            close_range_or_loop((unsigned)low, (unsigned)(keep[i] - 1));
        low = keep[i] + 1;
    }
    close_range_or_loop((unsigned)low, ~0U);
}

static void sort_small(int *a, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
            int t = a[j];
            a[j] = a[j - 1];
            a[j - 1] = t;
        }
}

/* Read exactly size bytes; 0 on success, -1 on EOF or error. */
static int read_exactly(int fd, char *buf, size_t size)
{
    size_t done = 0;
    while (done < size) {
        ssize_t got = read(fd, buf + done, size - done);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return -1;
        done += (size_t)got;
    }
    return 0;
}

PyDoc_STRVAR(fork_zygote_doc,
"fork_zygote(ctrl_r, out_w, res_w, proc_fd) -> (pid, body)\n\n"
"Fork. In the worker: (child pid, None). In the child: it leads a new process group,\n"
"keeps only the four descriptors (proc_fd may be -1), blocks until one length-prefixed\n"
"frame arrives on ctrl_r and returns (0, frame body). A child whose control pipe closes\n"
"before a whole frame arrived exits with status 0 (the worker is retiring it).");

static PyObject *fork_zygote(PyObject *Py_UNUSED(self), PyObject *args)
{
    int ctrl_r, out_w, res_w, proc_fd;
    if (!PyArg_ParseTuple(args, "iiii", &ctrl_r, &out_w, &res_w, &proc_fd))
        return NULL;
    pid_t pid = fork();
    if (pid < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (pid > 0)
        return Py_BuildValue("(iO)", (int)pid, Py_None);

    /* The child: from here on, no Python object is touched until the job is in. */
    if (setpgid(0, 0) != 0)
        _exit(70);
    int keep[4] = {ctrl_r, out_w, res_w, proc_fd};
    int n = proc_fd >= 0 ? 4 : 3;
    sort_small(keep, n);
    close_all_but(3, keep, n);
    unsigned char header[4];
    if (read_exactly(ctrl_r, (char *)header, 4) != 0)
        _exit(0);
    size_t length = ((size_t)header[0] << 24) | ((size_t)header[1] << 16) | ((size_t)header[2] << 8) | header[3];
    PyObject *body = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)length);
    if (body == NULL)
        _exit(70);
    if (read_exactly(ctrl_r, PyBytes_AS_STRING(body), length) != 0)
        _exit(0);
    close(ctrl_r);
    return Py_BuildValue("(iN)", 0, body);
}

static int append_note(PyObject *notes, const char *what, int err)
{
    PyObject *text = PyUnicode_FromFormat("%s: [Errno %d] %s", what, err, strerror(err));
    if (text == NULL)
        return -1;
    int rc = PyList_Append(notes, text);
    Py_DECREF(text);
    return rc;
}

/* This process's address-space size in bytes, read through /proc (0 when unknown). */
static unsigned long long vm_size_bytes(int proc_fd)
{
    if (proc_fd < 0)
        return 0;
    char path[64];
    snprintf(path, sizeof path, "%d/statm", (int)getpid());
    int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fd = openat(proc_fd, "self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[128];
    ssize_t got = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (got <= 0)
        return 0;
    buf[got] = '\0';
    unsigned long long pages = strtoull(buf, NULL, 10);
    return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };

PyDoc_STRVAR(confine_doc,
"confine(out_w, res_w, proc_fd, workdir, uid, in_user_namespace, cpu_s, memory, file_bytes, open_files) -> notes\n\n"
"The run's descriptors (0 kept, 1+2 the output pipe, 3 the verdict pipe, nothing else),\n"
"its working directory, then its privileges and limits: child._confine plus\n"
"jail.confine_run. uid < 0: keep the uid (capabilities are dropped inside a user\n"
"namespace). Raises OSError where the Python path raises; returns the notes of the\n"
"steps that may fail softly.");

/* The run's HOME and TMPDIR entries ("NAME=value"), which putenv() points environ at; they
 * live as long as the run. The worker already has both names (its scratch directory), so
 * putenv only swaps two pointers: setenv's allocation and bookkeeping cost a child ~40 page
 * faults. The caller updates os.environ's mapping to match. */
static char home_entry[PATH_MAX + sizeof "HOME="];
static char tmpdir_entry[PATH_MAX + sizeof "TMPDIR="];

static PyObject *confine(PyObject *Py_UNUSED(self), PyObject *args)
{
    int out_w, res_w, proc_fd, uid, in_userns;
    const char *workdir;
    unsigned long long cpu_s, memory, file_bytes, open_files;
    if (!PyArg_ParseTuple(args, "iiiyipKKKK", &out_w, &res_w, &proc_fd, &workdir, &uid, &in_userns,
                          &cpu_s, &memory, &file_bytes, &open_files))
        return NULL;

    /* Descriptors: everything moves above 100 first so no dup2 below can clobber a source. */
    int high_out = fcntl(out_w, F_DUPFD_CLOEXEC, 100);
    int high_res = high_out < 0 ? -1 : fcntl(res_w, F_DUPFD_CLOEXEC, 100);
    int high_proc = -1;
    if (high_res < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (proc_fd >= 0 && (high_proc = fcntl(proc_fd, F_DUPFD_CLOEXEC, 100)) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (dup2(high_out, 1) < 0 || dup2(high_out, 2) < 0 || dup3(high_res, 3, O_CLOEXEC) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    if (high_proc >= 0 && dup3(high_proc, 4, O_CLOEXEC) < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    int keep[2] = {3, 4};
    close_all_but(3, keep, high_proc >= 0 ? 2 : 1);
    if (chdir(workdir) != 0)
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, workdir);
    if ((size_t)snprintf(home_entry, sizeof home_entry, "HOME=%s", workdir) >= sizeof home_entry
        || (size_t)snprintf(tmpdir_entry, sizeof tmpdir_entry, "TMPDIR=%s", workdir) >= sizeof tmpdir_entry) {
        PyErr_SetString(PyExc_ValueError, "confine: the run directory's path is too long");
        return NULL;
    }
    if (putenv(home_entry) != 0 || putenv(tmpdir_entry) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);

    PyObject *notes = PyList_New(0);
    if (notes == NULL)
        return NULL;
    unsigned long long vm_base = vm_size_bytes(high_proc >= 0 ? 4 : -1);
    if (uid >= 0) {
        if (setgroups(0, NULL) != 0 || setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0
            || setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) {
            Py_DECREF(notes);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
    } else if (in_userns) {
        struct cap_header header = {0x20080522, 0}; /* _LINUX_CAPABILITY_VERSION_3 */
        struct cap_data data[2];
        memset(data, 0, sizeof data);
        if (syscall(SYS_capset, &header, data) != 0 && append_note(notes, "capabilities not dropped: capset", errno) < 0)
            goto fail;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0 && append_note(notes, "prctl(38)", errno) < 0)
        goto fail;
    if (prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL) != 0 && append_note(notes, "prctl(4)", errno) < 0)
        goto fail;
    unsigned long long as_limit = vm_base ? vm_base + memory : memory;
    struct { int resource; const char *name; rlim_t soft, hard; } limits[] = {
        {RLIMIT_CORE, "setrlimit RLIMIT_CORE", 0, 0},
        {RLIMIT_FSIZE, "setrlimit RLIMIT_FSIZE", (rlim_t)file_bytes, (rlim_t)file_bytes},
        {RLIMIT_NOFILE, "setrlimit RLIMIT_NOFILE", (rlim_t)open_files, (rlim_t)open_files},
        /* 0: no new process or thread (counted per uid; root bypasses it, hence the uid switch) */
        {RLIMIT_NPROC, "setrlimit RLIMIT_NPROC", 0, 0},
        {RLIMIT_AS, "setrlimit RLIMIT_AS", (rlim_t)as_limit, (rlim_t)as_limit},
        /* soft limit sends SIGXCPU, the hard one a second later SIGKILL */
        {RLIMIT_CPU, "setrlimit RLIMIT_CPU", (rlim_t)cpu_s, (rlim_t)(cpu_s + 1)},
    };
    for (size_t i = 0; i < sizeof limits / sizeof limits[0]; i++) {
        struct rlimit value = {limits[i].soft, limits[i].hard};
        if (setrlimit(limits[i].resource, &value) != 0 && append_note(notes, limits[i].name, errno) < 0)
            goto fail;
    }
    if (high_proc >= 0)
        close(4);
    return notes;
fail:
    Py_DECREF(notes);
    return NULL;
}

/* _getattr_ for restricted candidates (policy.Policy.getattr), its common case in C.
 *
 * Under the restricted policy every attribute read in candidate code is a call to the
 * guard, so a loop calling xs.append or math.sqrt pays for a Python function call
 * (~0.4 us here) on each pass. This does the same checks in C and hands every case
 * it does not settle to the Python guard, which stays the reference:
 *
 *   state = (slow, refused, denied, module_value)
 *   slow(obj, name[, default])  the Python guard: any other arity, a name that is not
 *                               an exact str, empty, starting with "_" or in `refused`
 *                               (inspect attributes, str.format/format_map), a module
 *                               subclass, or a member `denied` lists for its module;
 *   denied                      dict: module name -> frozenset of refused members;
 *   module_value(value)         returns value or raises: a module reached through an
 *                               attribute must itself be allowed.
 */
static PyObject *attr_guard_call(PyObject *state, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *slow = PyTuple_GET_ITEM(state, 0);
    if (nargs != 2)
        return PyObject_Vectorcall(slow, args, nargs, NULL);
    PyObject *obj = args[0], *name = args[1];
    if (!PyUnicode_CheckExact(name) || PyUnicode_GET_LENGTH(name) == 0 || PyUnicode_READ_CHAR(name, 0) == '_')
        return PyObject_Vectorcall(slow, args, nargs, NULL);
    int hit = PySet_Contains(PyTuple_GET_ITEM(state, 1), name);
    if (hit < 0)
        return NULL;
    if (hit)
        return PyObject_Vectorcall(slow, args, nargs, NULL);
    if (PyModule_Check(obj)) {
        if (!PyModule_CheckExact(obj))
            return PyObject_Vectorcall(slow, args, nargs, NULL);
        PyObject *module_name = PyModule_GetNameObject(obj);
        if (module_name == NULL) {  /* no str __name__: the Python guard says what happens */
            PyErr_Clear();
            return PyObject_Vectorcall(slow, args, nargs, NULL);
        }
        PyObject *members = PyDict_GetItemWithError(PyTuple_GET_ITEM(state, 2), module_name);  /* borrowed */
        Py_DECREF(module_name);
        if (members == NULL && PyErr_Occurred())
            return NULL;
        if (members != NULL) {
            int denied = PySet_Contains(members, name);
            if (denied < 0)
                return NULL;
            if (denied)
                return PyObject_Vectorcall(slow, args, nargs, NULL);
        }
    }
    PyObject *value = PyObject_GetAttr(obj, name);
    if (value == NULL || !PyModule_Check(value))
        return value;
    PyObject *checked = PyObject_CallOneArg(PyTuple_GET_ITEM(state, 3), value);
    Py_DECREF(value);
    return checked;
}

static PyMethodDef attr_guard_def = {
    "_getattr_", (PyCFunction)(void (*)(void))attr_guard_call, METH_FASTCALL,
    "getattr(obj, name[, default]) under the sandbox's restricted policy (see policy.py).",
};

PyDoc_STRVAR(attr_guard_doc,
"attr_guard(slow, refused, denied, module_value) -> the restricted policy's _getattr_, in C.\n\n"
"slow: the Python guard, called for every case the C path does not settle; refused: frozenset\n"
"of names that always go to slow; denied: dict module name -> frozenset of refused members;\n"
"module_value(value): returns value or raises, for a module reached through an attribute.");

static PyObject *attr_guard(PyObject *self, PyObject *args)
{
    PyObject *slow, *refused, *denied, *module_value;
    if (!PyArg_ParseTuple(args, "OO!O!O:attr_guard", &slow, &PyFrozenSet_Type, &refused, &PyDict_Type, &denied,
                          &module_value))
        return NULL;
    if (!PyCallable_Check(slow) || !PyCallable_Check(module_value)) {
        PyErr_SetString(PyExc_TypeError, "attr_guard: slow and module_value must be callable");
        return NULL;
    }
    PyObject *value;
    Py_ssize_t pos = 0;
    PyObject *key;
    while (PyDict_Next(denied, &pos, &key, &value)) {
        if (!PyFrozenSet_CheckExact(value)) {
            PyErr_SetString(PyExc_TypeError, "attr_guard: denied must map module names to frozensets");
            return NULL;
        }
    }
    PyObject *state = PyTuple_Pack(4, slow, refused, denied, module_value);
    if (state == NULL)
        return NULL;
    PyObject *guard = PyCFunction_New(&attr_guard_def, state);
    Py_DECREF(state);
    return guard;
}

static PyMethodDef methods[] = {
    {"fork_zygote", fork_zygote, METH_VARARGS, fork_zygote_doc},
    {"confine", confine, METH_VARARGS, confine_doc},
    {"attr_guard", attr_guard, METH_VARARGS, attr_guard_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "evalyard_sandbox._native",
    .m_doc = "The sandbox's hot paths in C (fork a zygote, confine a run, the restricted attribute guard); "
              "child.py and policy.py hold the Python fallbacks.",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    return PyModule_Create(&module);
}
