"""Plain-data checks: a verdict may rest only on values whose behaviour the candidate cannot script.

A wrong solution can "pass" ``assert f(x) == [1, 2]`` by returning an object whose
``__eq__`` always says True (or whose ``__sub__`` returns 0, whose ``__bool__`` is
True, ...). Checking every operator is hopeless; checking *values* is not. So the
harness requires that

- every value a candidate function returns to the tests, and every argument that
  was plain data before the call (a candidate may mutate its inputs), is plain data
  after the call; and
- both sides of every comparison in the test code are plain data;

where *plain data* is decided by the type of each value crossing into the comparison:

- built-in scalars and containers (nested to any depth), and their subclasses that neither
  script a special method (candidate or test code) nor define comparisons of their own
  (namedtuples, ``IntEnum`` members, ``class Point(tuple): pass``);
- library classes that define no comparison at all: they compare by identity, so they can
  never claim to equal an expected value (``enum`` members, ``functools.partial``...);
- library types known to compare honestly (``_HONEST_TYPES``: ``UserList``, ``uuid.UUID``,
  ``pathlib`` paths, dict views...), whose contents -- what their comparisons look at -- are
  plain in turn (a ``UserList`` holding an always-equal object is not).

Any other class that defines a comparison method is refused, whoever wrote it: a class of
the candidate's (``__eq__`` returning True, or borrowed: ``__eq__ = mock.ANY.__eq__``) as
much as a library's (``unittest.mock.ANY``, a configured ``MagicMock``). The behaviour of
everything accepted is the interpreter's or a known part of the standard library's.

A class whose metaclass defines ``__eq__`` or ``__hash__`` is refused too: the checks below
look types up in sets, and such a class could pass itself off as ``int`` there.

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
import re
import sys
import types
from typing import Any

_SCALARS = frozenset({
    type(None), bool, int, float, complex, str, bytes, bytearray, range, slice, type(Ellipsis),
    type(NotImplemented), decimal.Decimal, datetime.date, datetime.datetime,
    datetime.time, datetime.timedelta, datetime.timezone,
})
_SEQUENCES = frozenset({list, tuple, set, frozenset, collections.deque})
_MAPPINGS = frozenset({dict, collections.OrderedDict, collections.defaultdict, collections.Counter})
#: numbers written in Python, whose comparisons read their (assignable) state: walked like a
#: library object's, so ``Fraction`` with ``_numerator = mock.ANY`` is not plain
_STATEFUL_NUMBERS = frozenset({fractions.Fraction})
_BASES = _SCALARS | _SEQUENCES | _MAPPINGS | _STATEFUL_NUMBERS

#: Class-body names that no comparison consults: declarations, and the methods that build,
#: show, copy or pickle an object (what they produce is checked when it is compared), so
#: ``class Meters(int)`` with its own ``__new__`` and ``__repr__`` is still a plain number.
_INERT_DUNDERS = frozenset({
    "__module__", "__qualname__", "__doc__", "__slots__", "__dict__", "__weakref__",
    "__match_args__", "__annotations__", "__orig_bases__", "__parameters__", "__firstlineno__",
    "__static_attributes__",
    "__new__", "__init__", "__init_subclass__", "__set_name__", "__class_getitem__", "__del__",
    "__repr__", "__str__", "__format__", "__dir__", "__sizeof__",
    "__copy__", "__deepcopy__", "__reduce__", "__reduce_ex__", "__getnewargs__", "__getnewargs_ex__",
    "__getstate__", "__setstate__",
})
#: The methods through which an object answers a comparison (``==``, ``<``, ``in``...).
_COMPARISONS = frozenset({"__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"})
#: What a metaclass must not define: set and dict lookups of a class go through them.
_CLASS_IDENTITY = frozenset({"__eq__", "__ne__", "__hash__"})

# How the walk treats an accepted value that is not a built-in scalar or container:
_LEAF = "leaf"  # nothing inside it can change a comparison (identity, raw numbers or bytes)
_STATE = "state"  # it compares its own state (``__dict__`` and slot values), which is walked
_ELEMENTS = "elements"  # it compares its elements (dict views), which are walked

#: Library types whose comparisons are known to be honest (they compare what they hold by
#: Python's rules and answer NotImplemented or False to anything else), with what they compare.
#: A type that is not listed here and defines a comparison method is refused.
_HONEST_TYPES = {
    collections.UserList: _STATE, collections.UserDict: _STATE, collections.UserString: _STATE,
    collections.ChainMap: _STATE, types.SimpleNamespace: _STATE,
    type({}.keys()): _ELEMENTS, type({}.items()): _ELEMENTS,
    memoryview: _LEAF, types.BuiltinFunctionType: _LEAF, re.Pattern: _LEAF,
}
#: The same, for modules the sandbox does not import itself: recognised by module and name,
#: and only if the class is the one that module really holds under that name.
_HONEST_TYPES_BY_NAME = {
    ("array", "array"): _LEAF,
    ("uuid", "UUID"): _STATE,
    ("pathlib", "PurePath"): _STATE,
    ("argparse", "Namespace"): _STATE,
    **{("ipaddress", name): _STATE for name in ("IPv4Address", "IPv6Address", "IPv4Network", "IPv6Network",
                                                 "IPv4Interface", "IPv6Interface")},
}
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
    if isinstance(value, property):  # ``__class__ = property(...)`` fools isinstance()
        return any(_scripted(f) for f in (value.fget, value.fset, value.fdel) if f is not None)
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


def _class_name(cls: type) -> tuple[Any, Any]:
    """(module, qualified name) as the class itself records them, past any metaclass properties."""
    return type.__dict__["__module__"].__get__(cls), type.__dict__["__qualname__"].__get__(cls)


def _listed_honest(cls: type) -> str | None:
    """How the walk treats ``cls`` if it is a known-honest library type, else None."""
    how = _HONEST_TYPES.get(cls)
    if how is not None:
        return how
    module, name = _class_name(cls)
    if not (isinstance(module, str) and isinstance(name, str)):
        return None
    how = _HONEST_TYPES_BY_NAME.get((module, name))
    if how is None:
        return None
    # a class that merely calls itself ``uuid.UUID`` is not the one the uuid module defines
    loaded = sys.modules.get(module)
    return how if isinstance(loaded, types.ModuleType) and vars(loaded).get(name) is cls else None


def _honest_metaclass(meta: type) -> bool:
    """Whether classes of metaclass ``meta`` hash and compare by identity, as ``type``'s do."""
    if type(meta) is not type:  # a metaclass of a metaclass: nothing ordinary code needs
        return False
    return not any(_CLASS_IDENTITY & vars(cls).keys() for cls in meta.__mro__ if cls is not type and cls is not object)


class PlainChecker:
    def __init__(self) -> None:
        self.violation: str | None = None
        self._benign: dict[type, Any] = {}
        self._metaclasses: dict[type, bool] = {type: True}

    def _comparable_type(self, kind: type) -> bool:
        """Whether ``kind`` may be looked up in sets and dicts (its metaclass cannot fake it)."""
        meta = type(kind)
        if meta is type:
            return True
        known = self._metaclasses.get(meta) if type(meta) is type else False
        if known is None:
            known = self._metaclasses[meta] = _honest_metaclass(meta)
        return known

    def _base_of(self, kind: type) -> Any:
        """How the walk treats values of ``kind``: the built-in base whose behaviour it keeps
        unchanged, ``_LEAF``/``_STATE``/``_ELEMENTS`` for a library type that compares by identity
        or is known to compare honestly, or None when its comparisons cannot be trusted."""
        if not self._comparable_type(kind):
            return None
        if kind in self._benign:
            return self._benign[kind]
        base = None
        for cls in kind.__mro__:
            if cls in _BASES:
                base = cls
                break
            if cls is object:  # no built-in base: only a library class is trusted, as a whole
                base = None if kind.__module__ in _CANDIDATE_MODULES else _LEAF
                break
            honest = _listed_honest(cls)
            if honest is not None:
                base = None if kind.__module__ in _CANDIDATE_MODULES else honest
                break
            own = vars(cls)
            if _COMPARISONS & own.keys():
                break  # it answers comparisons its own way, and is not known to be honest
            if any(name.startswith("__") and name.endswith("__") and name not in _INERT_DUNDERS and _scripted(value)
                   for name, value in own.items()):
                break
        self._benign[kind] = base
        return base

    def is_plain(self, value: Any) -> bool:
        kind = type(value)
        if type(kind) is type and (kind in _SCALARS or kind is type):  # most compared values: no walk
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
            if type(kind) is not type:  # an enum member, or a class with a custom metaclass
                return False
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

    def _inside(self, item: Any, base: Any) -> Any:
        """What a comparison of ``item`` (walked as ``base``) looks at, without running its methods."""
        if base is _STATE or base in _STATEFUL_NUMBERS:
            return _state(item)
        if base is _ELEMENTS:
            return iter(item)  # a dict view (not subclassable): the dict's own iteration
        if base in _MAPPINGS:
            # dict's own methods: a subclass cannot redirect them (it overrides nothing)
            return [*dict.keys(item), *dict.values(item)]
        return base.__iter__(item)

    def _is_plain_graph(self, value: Any) -> bool:
        stack = [value]
        seen: set[int] = set()
        while stack:
            item = stack.pop()
            kind = type(item)
            if kind is type:
                continue  # ``type`` objects with the plain metaclass compare by identity
            base = self._base_of(kind)
            if base is None:
                return False
            if base is _LEAF or base in _SCALARS:
                continue
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(self._inside(item, base))
        return True

    def require(self, value: Any, what: str) -> Any:
        if self.is_plain(value):
            return value
        self.refuse(value, what)

    def refuse(self, value: Any, what: str) -> None:
        """Record and raise the refusal of ``value`` (known not to be plain data)."""
        message = (
            f"{what} is not plain data (it contains an object of type "
            f"{self._describe(value)}); the sandbox refuses values whose comparisons it cannot trust"
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
            base = self._base_of(kind)
            if base is None or base is _LEAF or base in _SCALARS or id(item) in seen:
                module, name = _class_name(kind)  # the real name, not a class attribute
                if not isinstance(name, str):
                    return "?"
                return name if module in ("builtins", *_CANDIDATE_MODULES) or not isinstance(module, str) \
                    else f"{module}.{name}"
            seen.add(id(item))
            stack.extend(self._inside(item, base))
        return "?"
