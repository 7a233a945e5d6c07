"""How a run is confined, seen from inside: a candidate running with the OS layers alone
inspects its own process -- open descriptors, resource limits, uid, no-new-privileges,
dumpability and working directory -- and each run starts with freshly seeded ``random``
state, as any forked Python process does.
"""

from __future__ import annotations

from sandbox_helpers import code_case

INSPECT = '''
import ctypes, os, resource

def open_fds():
    found = []
    for fd in range(0, 256):
        try:
            os.fstat(fd)
            found.append(fd)
        except OSError:
            pass
    return found

_libc = ctypes.CDLL(None, use_errno=True)

def prctl_get(option):
    return _libc.prctl(option, 0, 0, 0, 0)

def limit(name):
    return resource.getrlimit(getattr(resource, name))

def c_getenv(name):
    _libc.getenv.restype = ctypes.c_char_p
    return _libc.getenv(name.encode()).decode()
'''

CHECKS = '''
assert open_fds() == [0, 1, 2, 3], open_fds()
assert limit("RLIMIT_NPROC") == (0, 0)
assert limit("RLIMIT_CORE") == (0, 0)
assert limit("RLIMIT_NOFILE") == (32, 32)
assert limit("RLIMIT_FSIZE") == (1 << 20, 1 << 20)
assert limit("RLIMIT_CPU") == (2, 3)
soft, hard = limit("RLIMIT_AS")
assert soft == hard and 256 * 2**20 < soft < 4 * 2**30, (soft, hard)
assert prctl_get(39) == 1  # PR_GET_NO_NEW_PRIVS
assert prctl_get(3) == 0  # PR_GET_DUMPABLE
assert os.getcwd() == os.environ["HOME"] == os.environ["TMPDIR"]
assert c_getenv("HOME") == c_getenv("TMPDIR") == os.getcwd()  # the C environment agrees
assert os.listdir(".") == []
UID_CHECK
'''


def test_a_run_is_confined(sandbox):
    scorer = sandbox(timeout=1.5, memory_mb=256, workers=2, audit_hook=False)
    scorer.score_batch([code_case("x = 1\n", "assert x == 1\n")])  # the worker's isolation report
    base = scorer._client.isolation.get("run_uid_base")
    uid_check = (f"assert {base} <= os.getuid() < {base} + 2 and os.getgid() == os.getuid()"
                 if base is not None else "assert True")
    tests = CHECKS.replace("UID_CHECK", uid_check)
    scores = scorer.score_batch([code_case(INSPECT, tests, f"inspect-{i}") for i in range(4)])
    for score in scores:
        assert score.label == "pass", (score.details.get("message"), score.details.get("traceback"))


def test_every_run_gets_fresh_random_state(sandbox):
    scorer = sandbox(timeout=2.0, workers=2)
    code = "import random\nprint(random.getrandbits(64))\n"
    scores = scorer.score_batch([code_case(code, "assert True\n", f"r{i}") for i in range(6)])
    drawn = {score.details["output"].strip() for score in scores}
    assert len(drawn) == 6, drawn  # the worker's random state, reseeded in every run
