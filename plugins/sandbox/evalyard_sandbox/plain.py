"""Plain-data checks: a verdict may rest only on values whose behaviour the candidate cannot script.

A wrong solution can "pass" ``assert f(x) == [1, 2]`` by returning an object whose
``__eq__`` always says True (or whose ``__sub__`` returns 0, whose ``__bool__`` is
True, ...). Checking every operator is hopeless; checking *values* is not. So the
harness requires that

- every value a candidate function returns to the tests, and every argument that
  was plain data before the call (a candidate may mutate its inputs), is plain data
  after the call; and
- both sides of every comparison in the test code are plain data;

where *plain data* means built-in scalars and containers (nested to any depth), their
subclasses whose special methods were not written by the candidate or the tests
(namedtuples, ``IntEnum`` members, ``class Point(tuple): pass``), and instances of
library classes whose special methods the candidate has not replaced (``uuid.UUID``,
``socket.AF_INET``). The behaviour of all of those is the interpreter's or the
standard library's, not the candidate's.

A refusal raises ``UntrustedValue``, a ``BaseException`` so that a test's own
``except Exception`` cannot swallow it, and is also recorded on the checker so that
even a bare ``except:`` cannot turn it into a pass.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import functools
import types
from typing import Any

_SCALARS = frozenset({
    type(None), bool, int, float, complex, str, bytes, bytearray, range, slice, type(Ellipsis),
    type(NotImplemented), decimal.Decimal, fractions.Fraction, datetime.date, datetime.datetime,
    datetime.time, datetime.timedelta, datetime.timezone,
})
_SEQUENCES = frozenset({list, tuple, set, frozenset, collections.deque})
_MAPPINGS = frozenset({dict, collections.OrderedDict, collections.defaultdict, collections.Counter})
_BASES = _SCALARS | _SEQUENCES | _MAPPINGS

#: Class-body names that change no behaviour the tests rely on.
_INERT_DUNDERS = frozenset({
    "__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__",
    "__match_args__", "__annotations__", "__orig_bases__", "__parameters__", "__firstlineno__",
    "__static_attributes__",
})
_CANDIDATE_FILES = ("<candidate", "<tests")
_CANDIDATE_MODULES = frozenset({"__candidate__", "__tests__"})
#: callables implemented in C: never the candidate's
_C_CALLABLES = (types.BuiltinFunctionType, types.WrapperDescriptorType, types.MethodDescriptorType,
                types.ClassMethodDescriptorType, types.MethodWrapperType)
#: items (of any type) the id()-free walk visits before leaving the value to the general one:
#: it bounds the walk on cycles and on heavily shared structure, which it would revisit
_TREE_BUDGET = 100_000


class UntrustedValue(BaseException):
    """A value the verdict would depend on is not plain data."""


def _scripted(value: Any) -> bool:
    """Whether a class attribute is behaviour the candidate (or the tests) wrote."""
    while isinstance(value, (staticmethod, classmethod, functools.partial)):
        value = value.func if isinstance(value, functools.partial) else value.__func__
    if value is None or isinstance(value, _C_CALLABLES) or not callable(value):
        return False
    code = getattr(value, "__code__", None)
    if code is not None:
        filename = code.co_filename
        return not isinstance(filename, str) or filename.startswith(_CANDIDATE_FILES)
    # a class (``__class_getitem__ = classmethod(GenericAlias)``) or another callable object
    owner = value if isinstance(value, type) else type(value)
    return owner.__module__ in _CANDIDATE_MODULES


def _state(item: Any) -> list:
    """A library object's own state (``__dict__`` and slot values): what its comparisons may look
    at (``collections.UserList`` compares its ``data``, ``SimpleNamespace`` its ``__dict__``)."""
    values = []
    try:
        values.extend(object.__getattribute__(item, "__dict__").values())
    except (AttributeError, TypeError):
        pass
    for cls in type(item).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name in ("__dict__", "__weakref__"):
                continue
            if name.startswith("__") and not name.endswith("__"):
                name = f"_{cls.__name__.lstrip('_')}{name}"  # a private slot's mangled name
            try:
                values.append(object.__getattribute__(item, name))
            except AttributeError:
                pass
    return values


class PlainChecker:
    def __init__(self) -> None:
        self.violation: str | None = None
        self._benign: dict[type, type | None] = {}

    def _base_of(self, kind: type) -> type | None:
        """The built-in base whose behaviour ``kind`` keeps unchanged (``object`` for a library
        class: an opaque value), or None when the candidate or the tests script its behaviour."""
        if kind in self._benign:
            return self._benign[kind]
        base = None
        for cls in kind.__mro__:
            if cls in _BASES:
                base = cls
                break
            if cls is object:  # no built-in base: only a library class is trusted, as a whole
                base = None if kind.__module__ in _CANDIDATE_MODULES else object
                break
            if any(name.startswith("__") and name.endswith("__") and name not in _INERT_DUNDERS and _scripted(value)
                   for name, value in vars(cls).items()):
                break
        self._benign[kind] = base
        return base

    def is_plain(self, value: Any) -> bool:
        kind = type(value)
        if kind in _SCALARS or kind is type:  # most compared values: no walk at all
            return True
        if self._is_plain_tree(value):
            return True
        return self._is_plain_graph(value)

    def _is_plain_tree(self, value: Any) -> bool:
        """The walk for ordinary values, without ``id()``: that is an audited call, a trip through
        the run's tripwire each time. It gives up (False) on anything unusual -- a non-plain
        item, or more than _TREE_BUDGET items (a cycle, much shared structure, or just a very
        large value) -- and ``_is_plain_graph`` then decides.
        """
        stack = [value]
        budget = _TREE_BUDGET
        while stack:
            budget -= 1
            if budget < 0:
                return False
            item = stack.pop()
            kind = type(item)
            if kind in _SCALARS:
                continue
            if kind is list or kind is tuple:
                stack.extend(item)
            elif kind is dict:
                stack.extend(dict.keys(item))
                stack.extend(dict.values(item))
            elif kind is set or kind is frozenset:
                stack.extend(item)
            elif kind is not type:  # subclasses, deques...: the general walk knows them
                return False
        return True

    def _is_plain_graph(self, value: Any) -> bool:
        stack = [value]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind in _SCALARS or kind is type:
                continue  # ``type`` objects with the plain metaclass compare by identity
            base = kind if kind in _SEQUENCES or kind in _MAPPINGS else self._base_of(kind)
            if base is None:
                return False
            if base in _SCALARS:
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            if base is object:  # a library object: its comparisons may look at its own state
                stack.extend(_state(item))
            elif base in _MAPPINGS:
                # dict's own methods: a subclass cannot redirect them (it overrides nothing)
                stack.extend(dict.keys(item))
                stack.extend(dict.values(item))
            elif base is collections.deque:
                stack.extend(collections.deque.__iter__(item))
            else:
                stack.extend(base.__iter__(item))
        return True

    def require(self, value: Any, what: str) -> Any:
        if type(value) in _SCALARS or self.is_plain(value):
            return value
        self.refuse(value, what)

    def refuse(self, value: Any, what: str) -> None:
        """Record and raise the refusal of ``value`` (known not to be plain data)."""
        message = (
            f"{what} is not plain data (it contains an object of type "
            f"{self._describe(value)}); the sandbox refuses values with scripted comparisons"
        )
        if self.violation is None:
            self.violation = message
        raise UntrustedValue(message)

    def _describe(self, value: Any) -> str:
        """Name the first non-plain type found inside ``value``."""
        stack = [value]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            if self.is_plain(item):
                continue
            kind = type(item)
            base = kind if kind in _SEQUENCES or kind in _MAPPINGS else self._base_of(kind)
            if base is None or id(item) in seen:
                name = type.__dict__["__qualname__"].__get__(kind)  # the real name, not a class attribute
                return name if isinstance(name, str) else "?"
            seen.add(id(item))
            if base is object:
                stack.extend(_state(item))
            elif base in _MAPPINGS:
                stack.extend(dict.keys(item))
                stack.extend(dict.values(item))
            else:
                stack.extend(base.__iter__(item))
        return "?"
