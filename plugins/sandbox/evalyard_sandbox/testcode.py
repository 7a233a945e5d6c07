"""Compile the suite's test code (trusted) with two small rewrites that make its verdict honest.

1. The operands of every comparison pass through the plain-data check (see ``plain.py``):
   ``assert f(x) == y`` becomes ``assert __evalyard_plain__(f(x)) == __evalyard_plain__(y)``
   -- except for ``is``/``is not`` (identity cannot be scripted) and the container of
   ``in``/``not in`` (a candidate's own container class answers membership itself; the
   item looked for must still be plain).
2. Every ``assert`` counts itself when it runs -- ``assert t, m`` becomes
   ``assert (__evalyard_tick__() or t), m`` (the tick returns None, so the test's truth
   is unchanged) -- so the harness can tell "the tests ran and their assertions held"
   from "no assertion ever ran".

The rewrite edits the tree in place in one pass and positions each new node itself:
HumanEval test files are long lists of literals, and a NodeTransformer plus
``fix_missing_locations`` over them cost more than compiling them. The pass is its own
loop rather than ``ast.walk``: it never queues literals or load/store markers (which hold
nothing to rewrite), and it dispatches on the exact node type; the bytecode is the same
as a NodeTransformer's.
"""

from __future__ import annotations

import ast
from types import CodeType

TESTS_FILENAME = "<tests>"
PLAIN_NAME = "__evalyard_plain__"
TICK_NAME = "__evalyard_tick__"


class CompiledTests:
    """(A plain class, not a dataclass: the sandbox worker does not import ``dataclasses``.)"""

    __slots__ = ("code", "source", "assert_statements", "calls_check")

    def __init__(self, code: CodeType, source: str, assert_statements: int, calls_check: bool) -> None:
        self.code = code
        #: the test source as given (split into lines only when a traceback quotes it)
        self.source = source
        #: assert statements in the source (0: the tests verify by other means, e.g. raising)
        self.assert_statements = assert_statements
        #: a top-level ``check(...)`` call exists (HumanEval suites often omit it)
        self.calls_check = calls_check


#: nodes with no child that could hold a comparison or an assert: never queued
_LEAVES = (ast.Constant, ast.expr_context)
_IDENTITY = (ast.Is, ast.IsNot)
_MEMBERSHIP = (ast.In, ast.NotIn)


def _at(node: ast.AST, where: ast.AST) -> ast.AST:
    """``node`` placed where ``where`` is (``ast.copy_location`` without its per-field checks)."""
    node.lineno, node.col_offset = where.lineno, where.col_offset
    node.end_lineno, node.end_col_offset = where.end_lineno, where.end_col_offset
    return node


def _call(name: str, args: list[ast.expr], where: ast.AST) -> ast.Call:
    return _at(ast.Call(_at(ast.Name(name, ast.Load()), where), args, []), where)


def _calls_check(tree: ast.Module) -> bool:
    for statement in tree.body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            func = statement.value.func
            if isinstance(func, ast.Name) and func.id == "check":
                return True
    return False


def _guard_operands(node: ast.Compare) -> None:
    """Wrap each operand that a comparison's verdict rests on (operand i is left of ops[i], right of ops[i-1])."""
    operands = [node.left, *node.comparators]
    ops = node.ops
    for i, operand in enumerate(operands):
        as_left = i < len(ops) and not isinstance(ops[i], _IDENTITY)
        as_right = i > 0 and not isinstance(ops[i - 1], _IDENTITY + _MEMBERSHIP)
        if as_left or as_right:
            operands[i] = _call(PLAIN_NAME, [operand], operand)
    node.left, node.comparators = operands[0], operands[1:]


def compile_tests(source: str, *, guard_comparisons: bool) -> CompiledTests:
    """Parse, rewrite and compile; a SyntaxError here is the suite's fault, not the candidate's."""
    tree = ast.parse(source, TESTS_FILENAME, "exec")
    asserts = 0
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        # children first, so the operands a rewrite wraps are still visited (as in ast.walk)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                todo.extend([v for v in value if isinstance(v, ast.AST) and not isinstance(v, _LEAVES)])
            elif isinstance(value, ast.AST) and not isinstance(value, _LEAVES):
                todo.append(value)
        kind = type(node)
        if kind is ast.Compare:
            if guard_comparisons:
                _guard_operands(node)
        elif kind is ast.Assert:
            asserts += 1
            tick = _call(TICK_NAME, [], node.test)
            node.test = _at(ast.BoolOp(ast.Or(), [tick, node.test]), node.test)
    code = compile(tree, TESTS_FILENAME, "exec", dont_inherit=True)
    return CompiledTests(code, source, asserts, _calls_check(tree))
