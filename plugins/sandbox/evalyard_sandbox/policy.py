"""The RestrictedPython policy layer: what candidate code may name, import and touch.

RestrictedPython rewrites attribute access, item access, iteration and writes
into calls to guard functions supplied in the candidate's globals. This module
supplies those guards. The rules, and why:

- Imports go through an allow-list of standard-library modules with no path to
  the OS. ``from m import name`` is checked too, because ``IMPORT_FROM`` reads the
  attribute directly, past ``_getattr_``.
- ``_getattr_`` refuses names starting with ``_``, frame/code attributes, str.format
  (attribute walks inside format strings), and any *module object* that is not
  itself allow-listed: ``statistics.sys`` would otherwise hand out ``sys`` and,
  through ``sys.modules``, ``os``. A few allow-listed modules have single members
  that reopen the door (``string.Formatter``, ``operator.attrgetter``,
  ``typing.get_type_hints`` which ``eval``s annotation strings, ...): refused.
- Writes (``obj.x = 1``, ``obj[k] = v``) are allowed on built-in mutable containers
  and on classes, instances and functions the candidate itself created.
- ``eval`` compiles its string under this same policy; ``exec``/``compile``/``open``/
  ``globals``/``vars``/3-argument ``type`` are absent.
- Item reads (``a[i]``), iteration (``for``, comprehensions), tuple unpacking and
  augmented assignment to plain names compile to ordinary bytecode. RestrictedPython
  would route them through ``_getitem_``/``_getiter_``/``_unpack_sequence_``/
  ``_inplacevar_``, hooks for Zope's per-object checks; here those guards would be
  ``operator.getitem``, ``iter``, a Python generator and ``operator.iadd`` & co., the
  very operations the bytecode performs, only several times slower in a loop.

Stock RestrictedPython also rejects some ordinary, harmless Python; the transformer
below accepts ``nonlocal``, annotated assignments and augmented assignment to items
and attributes (``counts[x] += 1``), all rewritten through the same guards. It
still rejects names starting with ``_`` (so ``super().__init__()``), ``match``,
``async`` and ``try/except*`` -- the ``os_only`` policy runs such code.
"""

from __future__ import annotations

import _string
import ast
import builtins
import operator
import string
import sys
import types
import warnings
from typing import Any

from RestrictedPython import compile_restricted
from RestrictedPython.Guards import safe_builtins
from RestrictedPython.transformer import INSPECT_ATTRIBUTES, IOPERATOR_TO_STR, RestrictingNodeTransformer

CANDIDATE_FILENAME = "<candidate>"
EVAL_FILENAME = "<candidate-eval>"

#: Standard-library modules a candidate may import under the restricted policy.
ALLOWED_IMPORTS = frozenset({
    "array", "base64", "binascii", "bisect", "calendar", "cmath", "collections", "collections.abc",
    "copy", "datetime", "decimal", "difflib", "fractions", "functools", "hashlib", "heapq",
    "itertools", "json", "math", "numbers", "operator", "random", "re", "statistics", "string",
    "struct", "textwrap", "time", "typing", "unicodedata", "zlib",
})

#: Members of allowed modules that would undo the policy, and why.
DENIED_MEMBERS = {
    "string": {"Formatter"},  # Formatter.get_field walks attributes named in a string
    "operator": {"attrgetter", "methodcaller"},  # attribute access by string, past _getattr_
    "typing": {"get_type_hints", "ForwardRef"},  # eval annotation strings with real builtins
    "functools": {"singledispatch", "singledispatchmethod"},  # resolve annotations via get_type_hints
}

_FORMAT_METHODS = frozenset({"format", "format_map"})
_MISSING = object()


def _located(new: ast.AST, old: ast.AST) -> ast.AST:
    """``new`` with ``old``'s source position (and positions filled in below it)."""
    return ast.fix_missing_locations(ast.copy_location(new, old))


def _static_builtins() -> dict[str, Any]:
    """Builtins that need no guard: RestrictedPython's safe set plus harmless ones it leaves out.

    RestrictedPython omits ``sorted``, ``zip``, ``tuple``... because they iterate in C past
    ``_getiter_``; that guard polices Zope object access, which this sandbox does not use.
    """
    names = dict(safe_builtins)
    for name in ("sum", "min", "max", "enumerate", "list", "dict", "set", "frozenset", "tuple",
                 "sorted", "reversed", "zip", "map", "filter", "any", "all", "iter", "next", "bytes",
                 "bytearray", "bin", "format", "ascii", "object", "staticmethod", "classmethod",
                 "property", "super", "NotImplemented", "aiter", "anext"):
        names[name] = getattr(builtins, name)
    for name, value in vars(builtins).items():
        if isinstance(value, type) and issubclass(value, BaseException):
            names[name] = value
    return names


_STATIC_BUILTINS = _static_builtins()


class PolicyViolation(Exception):
    """Raised at run time when candidate code reaches for something the policy refuses
    (where Python itself would raise another type, that type is raised instead, so the
    candidate's own ``except ImportError`` fallbacks keep working; every refusal is also
    recorded in ``Policy.refusals``)."""


def _inplace(op: str, left: Any, right: Any) -> Any:
    return _INPLACE_OPERATORS[op](left, right)


_INPLACE_OPERATORS = {
    "+=": operator.iadd, "-=": operator.isub, "*=": operator.imul, "/=": operator.itruediv,
    "//=": operator.ifloordiv, "%=": operator.imod, "**=": operator.ipow, "<<=": operator.ilshift,
    ">>=": operator.irshift, "|=": operator.ior, "^=": operator.ixor, "&=": operator.iand,
    "@=": operator.imatmul,
}


class CandidateTransformer(RestrictingNodeTransformer):
    """RestrictedPython's transformer, accepting a few safe constructs it rejects by default.

    Guards that would only repeat what the bytecode does are not emitted (see the module
    notes); the names inside those constructs are still checked, as everywhere.
    """

    def guard_iter(self, node: ast.For | ast.comprehension) -> ast.AST:
        # ``for x in seq`` / ``for a, b in pairs`` stay as written (no _getiter_, no unpack guard)
        return self.node_contents_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> ast.AST:
        if isinstance(node.ctx, ast.Load):  # a[i] reads stay plain; writes and deletes keep _write_
            return self.node_contents_visit(node)
        return super().visit_Subscript(node)

    def visit_Assign(self, node: ast.Assign) -> ast.AST:
        return self.node_contents_visit(node)  # ``a, b = pair`` unpacks as Python does

    def visit_With(self, node: ast.With) -> ast.AST:
        return self.node_contents_visit(node)  # ``with f() as (a, b)`` likewise

    def visit_Nonlocal(self, node: ast.Nonlocal) -> ast.AST:
        # Rebinding a closure variable reaches nothing new; names are still checked.
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        if isinstance(node.target, ast.Name):
            # ``x: int = 1`` / a class body's ``name: str`` (NamedTuple, dataclass, TypedDict fields):
            # kept, so the annotation is recorded; it is an expression checked like any other.
            self.check_name(node, node.target.id)
            node.annotation = self.visit(node.annotation)
            if node.value is not None:
                node.value = self.visit(node.value)
            return node
        # ``self.x: int = 1``: the annotation of an attribute target is never stored; assign only
        if node.value is None:
            return _located(ast.Pass(), node)
        return self.visit(_located(ast.Assign(targets=[node.target], value=node.value), node))

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        target = node.target
        op = ast.Constant(IOPERATOR_TO_STR[type(node.op)])
        if isinstance(target, ast.Subscript):
            # counts[x] += 1  ->  _inplace_item_(counts, x, "+=", 1), through the write guard
            key = target.slice
            if isinstance(key, ast.Slice):
                key = ast.Call(ast.Name("slice", ast.Load()),
                               [key.lower or ast.Constant(None), key.upper or ast.Constant(None),
                                key.step or ast.Constant(None)], [])
            call = ast.Call(ast.Name("_inplace_item_", ast.Load()),
                            [self.visit(target.value), self.visit(key), op, self.visit(node.value)], [])
            return _located(ast.Expr(call), node)
        if isinstance(target, ast.Attribute):
            if target.attr.startswith("_"):
                self.error(node, f'"{target.attr}" is an invalid attribute name because it starts with "_".')
                return node
            call = ast.Call(ast.Name("_inplace_attr_", ast.Load()),
                            [self.visit(target.value), ast.Constant(target.attr), op, self.visit(node.value)], [])
            return _located(ast.Expr(call), node)
        # n += 1 on a plain name: ordinary bytecode (RestrictedPython's _inplacevar_ would do the same)
        return self.node_contents_visit(node)

    def visit_Call(self, node: ast.Call) -> Any:
        if isinstance(node.func, ast.Name) and node.func.id == "eval":
            # Our eval compiles its argument under this same policy (see restricted_eval).
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                self.error(node, "eval() with * or ** arguments is not allowed.")
                return node
            node.args = [self.visit(a) for a in node.args]
            node.keywords = [self.visit(k) for k in node.keywords]
            node.func = _located(ast.Name("_restricted_eval_", ast.Load()), node.func)
            return node
        return super().visit_Call(node)


def compile_candidate(source: str, filename: str = CANDIDATE_FILENAME, mode: str = "exec") -> types.CodeType:
    """Compile under the policy; violations raise SyntaxError listing every refused construct."""
    try:
        with warnings.catch_warnings():  # "Prints, but never reads 'printed'" is noise here
            warnings.simplefilter("ignore", SyntaxWarning)
            return compile_restricted(source, filename, mode, policy=CandidateTransformer)
    except SyntaxError as exc:
        if exc.args and isinstance(exc.args[0], tuple):  # RestrictedPython's tuple of refusals
            raise SyntaxError("; ".join(map(str, exc.args[0]))) from None
        raise


class Policy:
    """Guards and builtins for one run. Tracks the classes the candidate creates (they may be written to)."""

    def __init__(self, extra_imports: list[str] | tuple[str, ...] = (), stdout: Any = None) -> None:
        self.allowed_imports = ALLOWED_IMPORTS | frozenset(extra_imports)
        self.stdout = stdout
        #: what the policy refused during the run, in order (the harness reports them)
        self.refusals: list[str] = []
        self.candidate_classes: set[type] = set()
        self.candidate_globals: dict[str, Any] | None = None
        self._writable_types = self._mutable_builtins()

    @staticmethod
    def _mutable_builtins() -> frozenset:
        import array
        import collections

        return frozenset({list, dict, bytearray, collections.deque, collections.defaultdict,
                          collections.OrderedDict, collections.Counter, array.array})

    def refuse(self, kind: type[BaseException], message: str) -> BaseException:
        """Record a refusal and return the exception to raise for it."""
        self.refusals.append(message)
        return kind(message)

    # -- attribute access ------------------------------------------------
    def _module_allowed(self, module: types.ModuleType) -> bool:
        name = getattr(module, "__name__", None)
        return isinstance(name, str) and name in self.allowed_imports and sys.modules.get(name) is module

    def getattr(self, obj: Any, name: Any, default: Any = _MISSING) -> Any:
        if type(name) is not str:
            raise TypeError("attribute name must be a string")
        if name.startswith("_"):
            raise self.refuse(AttributeError, f'"{name}" is an invalid attribute name because it starts with "_"')
        if name in INSPECT_ATTRIBUTES:
            raise self.refuse(AttributeError, f'"{name}" is a restricted name, forbidden in the sandbox')
        if name in _FORMAT_METHODS and (isinstance(obj, str) or obj is str):
            return self._safe_format_method(obj, name)
        if type(obj) is types.ModuleType and name in DENIED_MEMBERS.get(obj.__name__, ()):
            raise self.refuse(PolicyViolation, f"{obj.__name__}.{name} is not available in the sandbox")
        value = getattr(obj, name) if default is _MISSING else getattr(obj, name, default)
        return self.module_value(value) if isinstance(value, types.ModuleType) else value

    def module_value(self, value: types.ModuleType) -> types.ModuleType:
        """A module read from an attribute: handed out only if it is itself allowed."""
        if not self._module_allowed(value):
            raise self.refuse(PolicyViolation,
                              f"module {getattr(value, '__name__', '?')!r} reached through an attribute is refused")
        return value

    def _safe_format_method(self, obj: Any, name: str) -> Any:
        # str.format walks "{0.attr}" fields with plain getattr; ours walks them through the guard.
        formatter = _GuardedFormatter(self)
        if obj is str:  # str.format(template, ...) called on the type
            if name == "format":
                return lambda template, *args, **kwargs: formatter.vformat(str(template), args, kwargs)
            return lambda template, mapping: formatter.vformat(str(template), (), mapping)
        if name == "format":
            return lambda *args, **kwargs: formatter.vformat(obj, args, kwargs)
        return lambda mapping: formatter.vformat(obj, (), mapping)

    def hasattr(self, obj: Any, name: Any) -> bool:
        try:
            self.getattr(obj, name)
        except (AttributeError, PolicyViolation):
            return False
        return True

    # -- imports -------------------------------------------------------------
    def import_module(self, name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0):
        if level != 0:
            raise self.refuse(ImportError, "relative imports are not allowed in the sandbox")
        if type(name) is not str:
            raise ImportError("module name must be a string")
        top = name.partition(".")[0]
        # ``import a.b`` binds ``a``, so ``a`` must be allowed as well as ``a.b``.
        if name not in self.allowed_imports or (not fromlist and top not in self.allowed_imports):
            raise self.refuse(ImportError, f"import of {name!r} is not allowed in the sandbox")
        module = __import__(name, {}, {}, fromlist or (), 0)
        for member in fromlist or ():
            if type(member) is not str or member.startswith("_") or member == "*":
                raise self.refuse(ImportError, f"cannot import {member!r} from {name!r} in the sandbox")
            if member in DENIED_MEMBERS.get(name, ()):
                raise self.refuse(ImportError, f"{name}.{member} is not available in the sandbox")
            value = getattr(module, member, None)
            if value is None and f"{name}.{member}" in self.allowed_imports:
                __import__(f"{name}.{member}")
                value = getattr(module, member, None)
            if isinstance(value, types.ModuleType) and not self._module_allowed(value):
                raise self.refuse(ImportError, f"module {name}.{member} is not allowed in the sandbox")
        return module

    # -- writes ----------------------------------------------------------------
    def _writable(self, obj: Any) -> bool:
        kind = type(obj)
        if kind in self._writable_types or kind in self.candidate_classes:
            return True
        if isinstance(obj, type) and obj in self.candidate_classes:
            return True
        if kind is types.FunctionType and self.candidate_globals is not None:
            return obj.__globals__ is self.candidate_globals
        return False

    def write_guard(self, obj: Any) -> Any:
        if not self._writable(obj):
            raise self.refuse(PolicyViolation, f"cannot modify an object of type {type(obj).__name__} in the sandbox")
        return obj

    def setattr(self, obj: Any, name: Any, value: Any) -> None:
        if type(name) is not str or name.startswith("_"):
            raise self.refuse(PolicyViolation, f"cannot set attribute {name!r} in the sandbox")
        setattr(self.write_guard(obj), name, value)

    def delattr(self, obj: Any, name: Any) -> None:
        if type(name) is not str or name.startswith("_"):
            raise self.refuse(PolicyViolation, f"cannot delete attribute {name!r} in the sandbox")
        delattr(self.write_guard(obj), name)

    def inplace_item(self, obj: Any, key: Any, op: str, value: Any) -> None:
        self.write_guard(obj)[key] = _inplace(op, obj[key], value)

    def inplace_attr(self, obj: Any, name: str, op: str, value: Any) -> None:
        self.setattr(obj, name, _inplace(op, self.getattr(obj, name), value))

    # -- classes, type, eval, print ---------------------------------------------
    def build_class(self, name: str, bases: tuple, namespace: dict, **kwargs: Any) -> type:
        # Pick the most derived metaclass of the bases, as class statements do (NamedTuple, ABC, Enum).
        meta: type = type
        for base in bases:
            base_meta = type(base)
            if issubclass(base_meta, meta):
                meta = base_meta
        cls = meta(name, bases, namespace, **kwargs)
        self.candidate_classes.add(cls)
        return cls

    def type(self, obj: Any, *rest: Any) -> type:
        if rest:
            raise self.refuse(PolicyViolation, "type() with three arguments is not available in the sandbox")
        return type(obj)

    def restricted_eval(self, source: Any, globals: Any = None, locals: Any = None) -> Any:
        if type(source) is not str:
            raise self.refuse(PolicyViolation, "eval() in the sandbox accepts only a string")
        code = compile_candidate(source, EVAL_FILENAME, "eval")
        if globals is None and locals is None:
            # Like eval(), see the caller's names -- but only when the caller is candidate code.
            # Library code can call a candidate-supplied ``eval`` back (``heapq.nlargest(...,
            # key=eval)``), and that frame's globals hold the real builtins.
            caller = sys._getframe(1)
            if caller.f_globals is self.candidate_globals:
                return eval(code, caller.f_globals, caller.f_locals)
        env = dict(self.candidate_globals or {})
        # Names starting with "_" are the guards themselves: never let the caller replace them.
        for mapping in (globals, locals):
            if mapping is not None:
                env.update({k: v for k, v in dict(mapping).items() if type(k) is str and not k.startswith("_")})
        return eval(code, env)

    def _refused_builtin(self, name: str) -> Any:
        """Stands in for a builtin the policy withholds (``open``, ``exec``, ``globals``...): using it
        is a recorded refusal, not a NameError the run would be blamed for."""
        def refused(*args: Any, **kwargs: Any) -> Any:
            raise self.refuse(PolicyViolation, f"the builtin {name}() is not available under the restricted policy")

        return refused

    def printer(self, _getattr_: Any = None) -> "_Printer":
        return _Printer(self)

    # -- the namespaces -------------------------------------------------------------
    def builtins(self) -> dict[str, Any]:
        names = {name: self._refused_builtin(name) for name in vars(builtins) if not name.startswith("_")}
        names.update(_STATIC_BUILTINS)
        names.update({
            "getattr": self.getattr, "hasattr": self.hasattr, "setattr": self.setattr,
            "delattr": self.delattr, "type": self.type, "eval": self.restricted_eval,
            "__import__": self.import_module, "__build_class__": builtins.__build_class__,
        })
        return names

    def candidate_namespace(self, namespace: dict[str, Any], stdout: Any = None) -> dict[str, Any]:
        """Fill the candidate's module namespace with the restricted builtins and the guards."""
        self.stdout = stdout
        namespace.update({
            "__builtins__": self.builtins(),
            "__metaclass__": self.build_class,
            "_getattr_": self.getattr,
            "_write_": self.write_guard,
            "_inplace_item_": self.inplace_item,
            "_inplace_attr_": self.inplace_attr,
            "_apply_": lambda func, *args, **kwargs: func(*args, **kwargs),
            "_print_": self.printer,
            "_restricted_eval_": self.restricted_eval,
        })
        self.candidate_globals = namespace
        return namespace


class _GuardedFormatter(string.Formatter):
    """``str.format`` semantics with attribute fields resolved through the policy's getattr."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy

    def get_field(self, field_name: str, args: Any, kwargs: Any) -> Any:
        first, rest = _string.formatter_field_name_split(field_name)
        obj = self.get_value(first, args, kwargs)
        for is_attribute, key in rest:
            obj = self._policy.getattr(obj, key) if is_attribute else obj[key]
        return obj, first


class _Printer:
    """RestrictedPython's ``print`` target: writes to the run's real stdout (captured by the worker)."""

    _MAX_KEPT = 65536

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._kept: list[str] = []
        self._size = 0

    def write(self, text: str) -> None:
        stream = self._policy.stdout or sys.stdout
        stream.write(text)
        if self._size < self._MAX_KEPT:  # ``printed`` returns what was printed, within reason
            self._kept.append(text)
            self._size += len(text)

    def __call__(self) -> str:
        return "".join(self._kept)

    def flush(self) -> None:
        (self._policy.stdout or sys.stdout).flush()

    def _call_print(self, *objects: Any, **kwargs: Any) -> None:
        if kwargs.get("file") is None:
            kwargs["file"] = self
        else:
            self._policy.getattr(kwargs["file"], "write")
        print(*objects, **kwargs)
