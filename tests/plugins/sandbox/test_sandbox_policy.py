"""The in-process layers, unit by unit: RestrictedPython policy, plain-data checks, test rewriting, tripwire.

These run candidate snippets in the test process itself (the policy is what is under
test), so the "escapes" here only try to *reach* something (a module, a dunder) and
never do anything with it.
"""

from __future__ import annotations

import collections
import fractions
import os
import subprocess
import sys
import types

import pytest

from evalyard_sandbox.audit import Tripwire
from evalyard_sandbox.plain import PlainChecker, UntrustedValue
from evalyard_sandbox.policy import Policy, PolicyViolation, compile_candidate
from evalyard_sandbox.testcode import compile_tests

def run_restricted(source: str, **extra) -> dict:
    namespace = Policy().candidate_namespace({"__name__": "__candidate__"})
    namespace.update(extra)
    exec(compile_candidate(source), namespace)
    return namespace


def candidate_defined(source: str) -> dict:
    """Definitions made as the sandbox makes a candidate's: file <candidate>, module __candidate__."""
    module = types.ModuleType("__candidate__")
    sys.modules["__candidate__"] = module  # dataclasses looks the module up, as in a run
    try:
        exec(compile(source, "<candidate>", "exec"), module.__dict__)
    finally:
        del sys.modules["__candidate__"]
    return module.__dict__


# -- valid Python the stock RestrictedPython transformer rejects, accepted here -------------------

def test_accepts_nonlocal_annotations_and_augmented_item_assignment():
    ns = run_restricted(
        "from typing import List\n"
        "def counter() -> int:\n    n: int = 0\n    def bump():\n        nonlocal n\n        n += 1\n"
        "    bump(); bump()\n    return n\n"
        "counts: dict = {}\nfor ch in 'abca':\n    counts[ch] = counts.get(ch, 0)\n    counts[ch] += 1\n"
        "grid = [[0, 0], [0, 0]]\ngrid[1][0] += 5\nnums = [1, 2, 3, 4]\nnums[1:3] *= 1\n"
        "class Box:\n    def __init__(self):\n        self.size = 1\n        self.size += 2\n"
        "box = Box()\nbox.size *= 10\nresult = (counter(), counts, grid, box.size)\n"
    )
    assert ns["result"] == (2, {"a": 2, "b": 1, "c": 1}, [[0, 0], [5, 0]], 30)


def test_eval_and_format_work_under_the_same_policy():
    ns = run_restricted(
        "value = eval('2 + 3 * 4')\nlocal = (lambda a: eval('a * 2'))(21)\n"
        "text = '{} and {name} {!r}'.format('x', 'z', name='y')\nby_type = str.format('{0}-{1}', 1, 2)\n"
        "mapped = '{a}'.format_map({'a': 7})\n"
    )
    assert (ns["value"], ns["local"], ns["text"], ns["by_type"], ns["mapped"]) == (14, 42, "x and y 'z'", "1-2", "7")
    with pytest.raises(SyntaxError, match="starts with"):
        run_restricted("eval('().__class__')")
    with pytest.raises(AttributeError, match="starts with"):
        run_restricted("'{0.__class__}'.format(1)")


def test_eval_called_back_by_library_code_gets_no_real_builtins(tmp_path):
    # heapq.nlargest calls key() from its own Python frame, whose globals hold the real builtins
    target = tmp_path / "written"
    ns = run_restricted(
        f"import heapq\ntry:\n    heapq.nlargest(1, [\"open({str(target)!r}, 'w')\"], key=eval)\n"
        "    outcome = 'ran'\nexcept Exception:\n    outcome = 'refused'\n"
    )
    assert ns["outcome"] == "refused" and not target.exists()


def test_eval_globals_cannot_replace_the_guards():
    # a crafted namespace must not swap _getattr_ for the real getattr
    with pytest.raises(SyntaxError):
        run_restricted("eval('x.__class__', {'_getattr_': getattr, 'x': 1})")
    ns = run_restricted("out = eval('x.real', {'_getattr_': None, 'x': 5})")
    assert ns["out"] == 5


@pytest.mark.parametrize("source, error", [
    ("import os", ImportError),
    ("import os.path", ImportError),
    ("from statistics import sys", ImportError),
    ("import statistics\nstatistics.sys", PolicyViolation),
    ("import json\njson.decoder", PolicyViolation),
    ("import typing\ntyping.get_type_hints", PolicyViolation),
    ("from typing import get_type_hints", ImportError),
    ("import string\nstring.Formatter", PolicyViolation),
    ("import operator\noperator.attrgetter", PolicyViolation),
    ("import functools\nfunctools.singledispatch", PolicyViolation),
    ("type('T', (), {})", PolicyViolation),
    ("import math\nmath.pi = 3", PolicyViolation),
    ("setattr(int, 'x', 1)", PolicyViolation),
    ("getattr(1, '__class__')", AttributeError),
    ("x = (i for i in [1])\nx.gi_frame", SyntaxError),
    ("open('/etc/passwd')", PolicyViolation),
    ("globals()", PolicyViolation),
    ("exec('1')", SyntaxError),
    ("import importlib", ImportError),
    ("from . import x", ImportError),
    ("import statistics\ngetattr(statistics, 'sys')", PolicyViolation),
    ("import string\ngetattr(string, 'Formatter', None)", PolicyViolation),
    ("getattr(len, '__self__', None)", AttributeError),
    ("'{0.__class__}'.format(1)", AttributeError),
])
def test_refusals(source, error):
    policy = Policy()
    namespace = policy.candidate_namespace({"__name__": "__candidate__"})
    with pytest.raises(error):
        exec(compile_candidate(source), namespace)
    # every run-time refusal is on record (the harness reports the run as refused, not failed)
    assert error is SyntaxError or policy.refusals


def test_allow_listed_modules_work_including_through_attributes():
    ns = run_restricted(
        "import collections.abc\nimport math, re, heapq, itertools, functools, statistics\n"
        "from collections import abc, Counter\nfrom typing import List, Optional\n"
        "ok = (isinstance([], collections.abc.Sequence), abc is collections.abc, math.sqrt(16),\n"
        "      statistics.mean([1, 2, 3]), re.findall('a', 'banana'), Counter('aab')['a'])\n",
    )
    assert ns["ok"] == (True, True, 4.0, 2, ["a", "a", "a"], 2)
    with pytest.raises(ImportError):
        run_restricted("import fnmatch")
    policy = Policy(extra_imports=["fnmatch"])
    namespace = policy.candidate_namespace({})
    exec(compile_candidate("import fnmatch\nok = fnmatch.fnmatch('a.py', '*.py')"), namespace)
    assert namespace["ok"] is True


def test_identity_guards_compile_to_plain_bytecode():
    """Reads, loops and unpacking run as ordinary bytecode; attribute reads and writes keep their guards."""
    source = (
        "def f(xs, d):\n    total = 0\n    for i, (a, b) in enumerate(xs):\n        first, *rest = d[a]\n"
        "        total += b + first + len(rest)\n        d[a] = [v for v, w in zip(rest, rest)]\n"
        "    xs.sort()\n    return total\n"
        "out = f([(1, 2), (2, 3)], {1: [5, 6, 7], 2: [1]})\n"
    )
    code = compile_candidate(source)
    body = next(c for c in code.co_consts if hasattr(c, "co_names"))
    names = set(body.co_names)
    for const in body.co_consts:  # the comprehension's own code object
        if hasattr(const, "co_names"):
            names |= set(const.co_names)
    assert not names & {"_getiter_", "_getitem_", "_iter_unpack_sequence_", "_unpack_sequence_", "_inplacevar_"}
    assert {"_getattr_", "_write_"} <= names
    plain: dict = {}
    exec(source, plain)
    assert run_restricted(source)["out"] == plain["out"] == 13
    with pytest.raises(ValueError, match="too many values"):
        run_restricted("a, b = [1, 2, 3]")
    with pytest.raises(SyntaxError, match="starts with"):
        run_restricted("for _x in range(3):\n    pass")
    with pytest.raises(SyntaxError, match="starts with"):
        run_restricted("a, __b = 1, 2")


def test_print_reaches_the_runs_stdout(capsys):
    run_restricted("print('hello', 42)\ndef f():\n    print('inside')\nf()")
    assert capsys.readouterr().out == "hello 42\ninside\n"


# -- plain data -----------------------------------------------------------------------------------

def test_plain_data_accepts_builtin_values_and_inert_subclasses():
    checker = PlainChecker()
    Point = collections.namedtuple("Point", "x y")

    class Pair(tuple):
        pass

    cyclic: list = [1]
    cyclic.append(cyclic)
    for value in [None, 1, 2.5, 1j, "s", b"b", [1, [2, (3, {4: {5}})]], frozenset({1}), range(3),
                  collections.Counter("ab"), collections.OrderedDict(a=1), collections.deque([1]),
                  fractions.Fraction(1, 3), Point(1, 2), Pair((1, 2)), cyclic, int, {"k": [float("nan")]}]:
        assert checker.is_plain(value), value
    assert checker.violation is None


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def test_plain_data_fast_walk_agrees_with_the_general_walk():
    """The id()-free walk may only say "plain" where the general walk does; else it defers."""
    import random

    AlwaysEqual = candidate_defined("class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n")["AlwaysEqual"]

    class Pair(tuple):
        pass

    rng = random.Random(7)
    leaves = [0, -3, 2.5, "s", b"b", None, True, range(2), int, AlwaysEqual(), Pair((1, 2)), collections.deque([1])]

    def build(depth: int):
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(leaves)
        kind = rng.choice([list, tuple, dict, set, frozenset])
        items = [build(depth - 1) for _ in range(rng.randrange(4))]
        if kind is dict:
            return {rng.choice(["a", "b", 1, (2, 3)]): item for item in items}
        if kind in (set, frozenset):
            return kind(i for i in items if _hashable(i))
        return kind(items)

    checker = PlainChecker()
    shared = [0] * 1000
    dag = [shared] * 1000  # a million items through the fast walk: past its budget, the general walk decides
    cyclic: list = []
    cyclic.append(cyclic)
    values = [build(5) for _ in range(400)] + [dag, cyclic, [cyclic, AlwaysEqual()]]
    outcomes = set()
    for value in values:
        general = checker._is_plain_graph(value)
        assert checker.is_plain(value) == general, value
        if checker._is_plain_tree(value):
            assert general, value
        outcomes.add(general)
    assert outcomes == {True, False}
    assert checker.is_plain(dag) and checker.is_plain(cyclic) and not checker.is_plain([cyclic, AlwaysEqual()])


def test_plain_data_refuses_scripted_comparisons():
    checker = PlainChecker()
    defined = candidate_defined(
        "import dataclasses, enum, uuid\n"
        "class AlwaysEqual:\n    def __eq__(self, other):\n        return True\n"
        "class SneakyInt(int):\n    def __eq__(self, other):\n        return True\n"
        "class SneakyList(list):\n    def __len__(self):\n        return 0\n"
        "class Plain:\n    pass\n"
        "@dataclasses.dataclass\nclass Point:\n    x: int\n"
        "class Color(enum.Enum):\n    RED = 1\n"
        "class Level(enum.IntEnum):\n    LOW = 1\n"
        "class Patched(uuid.UUID):\n    pass\n"
        "Patched.__eq__ = lambda self, other: True\n"
    )
    AlwaysEqual, SneakyInt, SneakyList = defined["AlwaysEqual"], defined["SneakyInt"], defined["SneakyList"]
    refused = [AlwaysEqual(), [1, AlwaysEqual()], {"k": (AlwaysEqual(),)}, SneakyInt(1), SneakyList(),
               defined["Plain"](), defined["Point"](1), defined["Color"].RED, defined["Patched"](int=1)]
    # library containers whose comparisons reach a candidate's object inside them
    import collections as library_collections
    import types as library_types
    refused += [library_collections.UserList([AlwaysEqual()]), library_types.SimpleNamespace(a=AlwaysEqual())]
    for value in refused:
        assert not checker.is_plain(value), value
    with pytest.raises(UntrustedValue, match="AlwaysEqual"):
        PlainChecker().require(library_collections.UserList([1, AlwaysEqual()]), "the value")
    # the interpreter's and the library's own behaviour, and a candidate IntEnum (int's comparisons)
    import socket
    import uuid
    for value in [(x for x in []), lambda: 0, object(), uuid.UUID(int=1), socket.AF_INET, defined["Level"].LOW,
                  library_collections.UserList([1, (2, "x")]), library_types.SimpleNamespace(a=[1])]:
        assert checker.is_plain(value), value
    with pytest.raises(UntrustedValue, match="AlwaysEqual"):
        checker.require([AlwaysEqual()], "the value")
    assert checker.violation and "AlwaysEqual" in checker.violation
    assert not issubclass(UntrustedValue, Exception)  # `except Exception` in tests cannot swallow it


def test_test_code_rewriting():
    compiled = compile_tests("def check(c):\n    assert c(1) == 2\n    assert c(2) is not None\n"
                             "    assert 1 < c(3) <= 9\ncheck(f)\n", guard_comparisons=True)
    assert compiled.assert_statements == 3 and compiled.calls_check
    seen, ticks = [], []
    namespace = {"__evalyard_plain__": lambda v: seen.append(v) or v,
                 "__evalyard_tick__": lambda: ticks.append(1), "f": lambda x: x + 1}
    exec(compiled.code, namespace)
    assert seen == [2, 2, 1, 4, 9] and len(ticks) == 3  # `is not` needs no guard; chains keep one evaluation
    membership = compile_tests("assert 3 in box\nassert 1 < 4 not in box\n", guard_comparisons=True)
    seen.clear()
    exec(membership.code, dict(namespace, box=[2, 3]))
    assert seen == [3, 1, 4]  # the container of `in` is the candidate's to answer for; the item is checked
    assert not compile_tests("def check(c):\n    pass\n", guard_comparisons=True).calls_check


# -- the tripwire (checked directly: installing a hook would last for the whole test session) ------

def test_tripwire_rules(tmp_path):
    stdlib = os.path.dirname(os.__file__)
    wire = Tripwire(str(tmp_path), [stdlib], network_isolated=True)
    wire.hook("open", (str(tmp_path / "out.txt"), "w", 0))
    wire.hook("open", (os.path.join(stdlib, "os.py"), "r", 0))
    wire.hook("open", ("/usr/share/zoneinfo/UTC", "rb", 0))
    wire.hook("open", (5, "r", 0))  # a descriptor the run holds (tempfile.TemporaryFile)
    wire.hook("import", ("json", None, None, None, None))
    # what correct programs do: sockets (asyncio's socketpair, a connect the network namespace
    # answers), introspection, tracing
    for event, args in [("socket.__new__", (None, 1, 1, 0)), ("socket.connect", (None, ("1.1.1.1", 53))),
                        ("gc.get_objects", (0,)), ("object.__getattr__", (None, "tb_frame")),
                        ("sys.settrace", (None,)), ("import", ("socket", None, None, None, None))]:
        wire.hook(event, args)
    with pytest.raises(PermissionError, match="may not write"):
        wire.hook("open", ("/tmp/elsewhere.txt", "w", 0))
    with pytest.raises(PermissionError, match="may not read"):
        wire.hook("open", ("/etc/passwd", "r", 0))
    with pytest.raises(PermissionError, match="may not write"):
        wire.hook("open", (os.path.join(stdlib, "os.py"), None, os.O_WRONLY))
    with pytest.raises(PermissionError, match="may not write"):
        wire.hook("os.rename", (str(tmp_path / "a"), "/tmp/b", -1, -1))
    (tmp_path / "link").symlink_to("/etc/passwd")
    with pytest.raises(PermissionError):
        wire.hook("open", (str(tmp_path / "link"), "r", 0))
    for event, args in [("os.system", (b"true",)), ("subprocess.Popen", ("x", [], None, None)),
                        ("os.kill", (1, 9)), ("os.exec", ("/bin/sh", [], None)), ("ctypes.dlopen", ("libc",))]:
        with pytest.raises(PermissionError):
            wire.hook(event, args)
    with pytest.raises(ImportError):
        wire.hook("import", ("ctypes", None, None, None, None))
    # without a network namespace, the tripwire is the wall: no connections, no lookups
    exposed = Tripwire(str(tmp_path), [stdlib], network_isolated=False)
    exposed.hook("socket.__new__", (None, 1, 1, 0))
    for event, args in [("socket.connect", (None, ("127.0.0.1", 80))), ("socket.getaddrinfo", ("pypi.org", 443)),
                        ("urllib.Request", ("http://x", None, {}, "GET"))]:
        with pytest.raises(PermissionError, match="no network namespace"):
            exposed.hook(event, args)


def test_install_forgets_refused_modules_already_loaded(tmp_path):
    # In a subprocess: an installed audit hook cannot be removed again.
    code = (
        "import ctypes, sys\n"
        "from evalyard_sandbox import audit, jail\n"
        f"audit.install({str(tmp_path)!r}, jail.stdlib_dirs(), network_isolated=True)\n"
        "print(sorted(n for n in sys.modules if n.split('.')[0] in ('ctypes', '_ctypes')))\n"
        "for name in ('ctypes', 'ctypes._endian', 'mmap', 'socket'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "        print('imported', name)\n"
        "    except ImportError as exc:\n"
        "        print('refused', name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["[]", "refused ctypes", "refused ctypes._endian", "imported mmap", "imported socket"]
