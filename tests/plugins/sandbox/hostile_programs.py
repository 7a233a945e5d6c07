"""A corpus of hostile candidate programs, each with a payload that leaves evidence if it runs.

Placeholders filled per test: ``{MARKER}`` is a host path a payload tries to create
(it must not exist afterwards), ``{SECRET}`` a host file whose text ``{SECRET_TEXT}``
a payload tries to leak into its output (it must not appear in the score), ``{PORT}``
a port the test listens on at the host's 127.0.0.1 (it must accept no connection).
Network payloads only ever try to connect: inside the run's empty network namespace
there is nothing to reach, and the external address is TEST-NET-1 (192.0.2.0/24,
reserved for documentation), so no traffic leaves even where the namespace is missing.

Every program defines a correct ``f(x) = x + 1`` after its payload where it can, so
a payload that is merely swallowed cannot hide behind a failing answer: the
evidence checks decide whether the payload ran, the verdict checks whether the run
could still pass.
"""

from __future__ import annotations

from dataclasses import dataclass

TESTS = "assert f(1) == 2\nassert f(41) == 42\n"
SOLUTION = "\ndef f(x):\n    return x + 1\n"


@dataclass(frozen=True)
class Hostile:
    name: str
    category: str
    code: str
    #: the OS layers alone stop the payload but may let a correct solution pass afterwards
    may_pass_without_guards: bool = False

    def render(self, marker: str, secret: str, port: int = 9) -> str:
        code = self.code.replace("{MARKER}", repr(marker)).replace("{SECRET}", repr(secret))
        return code.replace("{PORT}", str(port)) + SOLUTION


TOUCH = "'touch ' + {MARKER}"

PROGRAMS = [
    # -- files outside the run directory --------------------------------------------
    Hostile("write_open", "files", "open({MARKER}, 'w').write('pwned')"),
    Hostile("write_pathlib", "files", "import pathlib\npathlib.Path({MARKER}).write_text('pwned')"),
    Hostile("write_os_open", "files",
            "import os\nfd = os.open({MARKER}, os.O_WRONLY | os.O_CREAT)\nos.write(fd, b'pwned')"),
    Hostile("read_secret", "files", "print(open({SECRET}).read())"),
    Hostile("read_secret_symlink", "files",
            "import os\nos.symlink({SECRET}, 'link')\nprint(open('link').read())"),
    Hostile("list_root", "files", "import os\nprint(os.listdir('/'))\nprint(open({SECRET}).read())"),
    # -- processes -----------------------------------------------------------------
    Hostile("os_system", "processes", "import os\nos.system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("os_popen", "processes", "import os\nos.popen(" + TOUCH + ").read()"),
    Hostile("subprocess_run", "processes", "import subprocess\nsubprocess.run(['touch', {MARKER}])"),
    Hostile("os_fork", "processes",
            "import os\nif os.fork() == 0:\n    open({MARKER}, 'w').write('child')\n    os._exit(0)"),
    Hostile("fork_bomb", "processes", "import os\nwhile True:\n    os.fork()"),
    Hostile("os_exec", "processes", "import os\nos.execv('/bin/sh', ['sh', '-c', " + TOUCH + "])"),
    Hostile("ctypes_system", "processes",
            "import ctypes\nctypes.CDLL(None).system((" + TOUCH + ").encode())", may_pass_without_guards=True),
    Hostile("thread_writes_outside", "processes",
            "import threading\nerrors = []\ndef go():\n    try:\n        open({MARKER}, 'w').write('thread')\n"
            "    except BaseException as exc:\n        errors.append(exc)\n"
            "t = threading.Thread(target=go)\nt.start()\nt.join()\nif errors:\n    raise errors[0]"),
    Hostile("thread_bomb", "processes",
            "import threading, time\nwhile True:\n    threading.Thread(target=time.sleep, args=(100,), daemon=True).start()"),
    Hostile("fork_from_a_thread", "processes",
            "import os, threading\nresult = []\ndef go():\n    try:\n        pid = os.fork()\n"
            "        if pid == 0:\n            open({MARKER}, 'w')\n            os._exit(0)\n"
            "    except BaseException as exc:\n        result.append(exc)\n"
            "t = threading.Thread(target=go)\nt.start()\nt.join()\nif result:\n    raise result[0]"),
    # -- import tricks -----------------------------------------------------------------
    Hostile("dunder_import", "imports", "__import__('os').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("importlib", "imports",
            "import importlib\nimportlib.import_module('os').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("from_statistics_import_sys", "imports",
            "from statistics import sys\nsys.modules['os'].system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("module_attribute_sys", "imports",
            "import statistics\nstatistics.sys.modules['os'].system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("typing_get_type_hints", "imports",
            "import typing\nCMD = " + TOUCH + "\n"
            "def g(x: \"__import__('os').system(CMD)\"):\n    pass\ntyping.get_type_hints(g)",
            may_pass_without_guards=True),
    Hostile("string_formatter", "imports",
            "import string\nobj = string.Formatter().get_field('0.__class__.__base__', [1], {})[0]\n"
            "for c in obj.__subclasses__():\n    if c.__name__ == '_wrap_close':\n"
            "        c.__init__.__globals__['system'](" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("operator_attrgetter", "imports",
            "import operator\nsubs = operator.methodcaller('__subclasses__')(operator.attrgetter('__class__.__base__')(1))\n"
            "for c in subs:\n    if c.__name__ == '_wrap_close':\n"
            "        c.__init__.__globals__['system'](" + TOUCH + ")", may_pass_without_guards=True),
    # -- introspection escapes --------------------------------------------------------------
    Hostile("subclasses_walk", "introspection",
            "for c in ().__class__.__base__.__subclasses__():\n    if c.__name__ == '_wrap_close':\n"
            "        c.__init__.__globals__['system'](" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("subclasses_getattr_strings", "introspection",
            "g = getattr\nbase = g(g((), '__cl' + 'ass__'), '__ba' + 'se__')\n"
            "for c in g(base, '__subcl' + 'asses__')():\n    if g(c, '__na' + 'me__') == '_wrap_close':\n"
            "        g(g(c, '__in' + 'it__'), '__glo' + 'bals__')['system'](" + TOUCH + ")",
            may_pass_without_guards=True),
    Hostile("str_format_attribute_walk", "introspection",
            "print('{0.__class__.__base__.__subclasses__}'.format(()))\n"
            "print(('{0.__init__.__globals__[' + 'sys' + ']}').format(open))"),
    Hostile("generator_gi_frame", "introspection",
            "gen = (x for x in [1])\nframe = gen.gi_frame\n"
            "frame.f_builtins['__import__']('os').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("traceback_tb_frame", "introspection",
            "try:\n    1 / 0\nexcept ZeroDivisionError as exc:\n    frame = exc.__traceback__.tb_frame\n"
            "    frame.f_builtins['__import__']('os').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("builtins_dict", "introspection",
            "b = __builtins__\nimp = b['__import__'] if isinstance(b, dict) else b.__import__\n"
            "imp('os').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("function_globals", "introspection",
            "def h():\n    pass\nh.__globals__['__builtins__']['__import__']('os').system(" + TOUCH + ")",
            may_pass_without_guards=True),
    Hostile("type_three_arguments", "introspection",
            "T = type('T', (), {'go': lambda self: __import__('os').system(" + TOUCH + ")})\nT().go()",
            may_pass_without_guards=True),
    Hostile("eval_string", "introspection",
            "eval(\"__import__('os').system(\" + repr(" + TOUCH + ") + \")\")", may_pass_without_guards=True),
    Hostile("exec_string", "introspection",
            "exec(\"__import__('os').system(\" + repr(" + TOUCH + ") + \")\")", may_pass_without_guards=True),
    Hostile("subclasses_builtin_importer", "introspection",
            "imp = [c for c in object.__subclasses__() if c.__name__ == 'BuiltinImporter'][0]\n"
            "imp.load_module('posix').system(" + TOUCH + ")", may_pass_without_guards=True),
    Hostile("frame_walk_to_os", "introspection",
            "import sys\nframe = sys._getframe()\nwhile frame is not None:\n"
            "    found = frame.f_globals.get('os')\n"
            "    if found is not None and hasattr(found, 'system'):\n"
            "        found.system(" + TOUCH + ")\n        break\n"
            "    frame = frame.f_back", may_pass_without_guards=True),
    Hostile("frame_walk_from_traceback", "introspection",
            "try:\n    raise ValueError\nexcept ValueError as exc:\n    frame = exc.__traceback__.tb_frame\n"
            "while frame is not None:\n    loader = frame.f_globals.get('__builtins__')\n"
            "    frame = frame.f_back\n"
            "imp = loader['__import__'] if isinstance(loader, dict) else loader.__import__\n"
            "imp('subprocess').run(['touch', {MARKER}])"),
    Hostile("gc_object_walk", "introspection",
            "import gc\ngc.unfreeze()\nfor o in gc.get_objects():\n    if type(o).__name__ == 'module' and o.__name__ == 'os':\n"
            "        o.system(" + TOUCH + ")\n        break", may_pass_without_guards=True),
    # -- time ------------------------------------------------------------------------------
    Hostile("infinite_loop", "time", "while True:\n    pass"),
    Hostile("signal_swallow", "time",
            "import signal\nfor s in (signal.SIGXCPU, signal.SIGTERM, signal.SIGALRM, signal.SIGINT, signal.SIGHUP):\n"
            "    signal.signal(s, signal.SIG_IGN)\nwhile True:\n    pass"),
    Hostile("except_swallow", "time",
            "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass"),
    Hostile("huge_power", "time", "x = 10 ** (10 ** 8)"),
    Hostile("sleep_forever", "time", "import time\ntime.sleep(1000)"),
    # -- memory ----------------------------------------------------------------------------
    Hostile("memory_bytearray_16g", "memory", "blob = bytearray(1 << 34)"),
    Hostile("memory_list", "memory", "items = [0] * 10 ** 10"),
    Hostile("memory_growing", "memory", "chunks = []\nwhile True:\n    chunks.append(' ' * 10 ** 7)"),
    Hostile("memory_string", "memory", "s = 'a' * 10 ** 11"),
    # -- output ----------------------------------------------------------------------------
    Hostile("output_flood_loop", "output", "while True:\n    print('x' * 10000)"),
    Hostile("output_flood_once", "output", "print('x' * 10 ** 8)", may_pass_without_guards=True),
    # -- network ---------------------------------------------------------------------------
    Hostile("network_connect", "network",
            "import socket\ns = socket.create_connection(('192.0.2.1', 53), timeout=2)\n"
            "print('CONNECTED')\nopen({MARKER}, 'w')"),
    Hostile("network_loopback_connect", "network",
            "import socket\ns = socket.create_connection(('127.0.0.1', {PORT}), timeout=1)\n"
            "print('CONNECTED')\nopen({MARKER}, 'w')"),
    Hostile("network_external_connect", "network",
            "import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.settimeout(1)\n"
            "s.connect(('192.0.2.1', 80))\nprint('CONNECTED')\nopen({MARKER}, 'w')"),
    Hostile("network_asyncio_connect", "network",
            "import asyncio\nasync def go():\n    await asyncio.wait_for(asyncio.open_connection('127.0.0.1', {PORT}), 1)\n"
            "asyncio.run(go())\nprint('CONNECTED')\nopen({MARKER}, 'w')"),
    Hostile("network_resolve", "network",
            "import socket\nprint(socket.getaddrinfo('pypi.org', 443))\nopen({MARKER}, 'w')"),
    # -- other processes and the disk ------------------------------------------------------------
    Hostile("kill_everything", "signals", "import os, signal\nos.kill(-1, signal.SIGKILL)",
            may_pass_without_guards=True),
    Hostile("kill_parent", "signals", "import os\nos.kill(os.getppid(), 9)\nos.kill(1, 9)",
            may_pass_without_guards=True),
    Hostile("disk_fill", "disk",
            "i = 0\nwhile True:\n    handle = open('fill%d' % i, 'w')\n    handle.write('x' * (1 << 20))\n"
            "    handle.close()\n    i += 1"),
    Hostile("big_file", "disk", "handle = open('big', 'w')\nhandle.write('x' * (50 << 20))\nhandle.close()"),
    Hostile("lock_out_cleanup", "disk", "import os\nos.mkdir('d')\nos.chmod('d', 0)\nos.chmod('.', 0)",
            may_pass_without_guards=True),
]


# -- answers that merely claim equality ----------------------------------------------------------


@dataclass(frozen=True)
class ClaimsEquality:
    """A wrong answer whose object claims to equal (or order before) whatever it is compared
    with. Under plain Python each one passes its tests; in the sandbox none may."""

    name: str
    code: str
    tests: str
    entry_point: str | None = None


ADD_TESTS = "def check(candidate):\n    assert candidate(2, 3) == 5\n    assert candidate(0, 0) == 0\n"
MOCK = "from unittest import mock\n"

CLAIMED_EQUALITY = [
    # a library object whose class says "equal" to anything
    ClaimsEquality("mock_any", MOCK + "def add(a, b):\n    return mock.ANY\n", ADD_TESTS, "add"),
    ClaimsEquality("mock_any_plain_assert", MOCK + "def add(a, b):\n    return mock.ANY\n",
                   "assert add(2, 3) == 5\nassert 5 == add(2, 3)\n"),
    ClaimsEquality("mock_any_in_list", MOCK + "def squares(n):\n    return [mock.ANY] * n\n",
                   "assert squares(3) == [0, 1, 4]\n"),
    ClaimsEquality("mock_any_in_dict", MOCK + "def count(s):\n    return {c: mock.ANY for c in set(s)}\n",
                   "assert count('aab') == {'a': 2, 'b': 1}\n"),
    ClaimsEquality("mock_any_in_namedtuple",
                   MOCK + "from collections import namedtuple\nP = namedtuple('P', 'x y')\n"
                   "def mid(a, b):\n    return P(mock.ANY, mock.ANY)\n", "assert mid((0, 0), (2, 4)) == (1, 2)\n"),
    ClaimsEquality("mock_any_in_userlist",
                   MOCK + "from collections import UserList\ndef evens(n):\n    return UserList([mock.ANY])\n",
                   "assert evens(1) == [0]\n"),
    ClaimsEquality("mock_any_inside_a_fraction",
                   MOCK + "from fractions import Fraction\ndef third():\n    f = Fraction(0)\n"
                   "    f._numerator = mock.ANY\n    return f\n", "assert third() == 7\n"),
    ClaimsEquality("magicmock_eq_true",
                   MOCK + "def add(a, b):\n    m = mock.MagicMock()\n    m.__eq__.return_value = True\n    return m\n",
                   ADD_TESTS, "add"),
    ClaimsEquality("magicmock_lt_true",
                   MOCK + "def smallest(xs):\n    m = mock.MagicMock()\n    m.__lt__.return_value = True\n    return m\n",
                   "assert smallest([5, 3]) < 4\n"),
    # the candidate's own class, comparing through a method nobody wrote in <candidate>
    ClaimsEquality("int_subclass_borrows_mock_eq",
                   MOCK + "class I(int):\n    __eq__ = mock.ANY.__eq__\ndef add(a, b):\n    return I(0)\n",
                   ADD_TESTS, "add"),
    ClaimsEquality("int_subclass_bool_as_eq", "class I(int):\n    __eq__ = bool\ndef add(a, b):\n    return I(0)\n",
                   "assert add(2, 3) == 5\n"),
    ClaimsEquality("metaclass_passes_itself_off_as_int",
                   "class Meta(type):\n    def __hash__(cls):\n        return hash(int)\n"
                   "    def __eq__(cls, other):\n        return True\n"
                   "class Anything(metaclass=Meta):\n    def __eq__(self, other):\n        return True\n"
                   "def add(a, b):\n    return Anything()\n", ADD_TESTS, "add"),
]
