"""Whether an expression that converts an address with ``2**63``/``2**64`` constants is right.

The expression is evaluated on plain Python ints at the boundary values (``2**63 - 1``,
``2**63``, ``2**64 - 1`` and addresses seen on real devices) and compared with the two readings
of the same 64 bits: the unsigned address and its two's-complement int64. Only integer
arithmetic is evaluated; nothing is ever read through an address.

The expression's operands are what :func:`operands` finds in it; a helper function written as
an ``if`` that changes its one parameter is read as the expression it returns
(:func:`as_expression`).
"""

from __future__ import annotations

import ast
import enum
import operator
from collections.abc import Callable, Iterator, Mapping

from ptrport.addresses import (
    ADDRESS_CLASSES,
    ADDRESS_LIMIT,
    BOUNDARIES,
    HIGH_HALF,
    PAGE_SIZE,
    to_signed,
    to_unsigned,
)

SIGN_CONSTANTS = frozenset(
    {HIGH_HALF, HIGH_HALF - 1, ADDRESS_LIMIT, ADDRESS_LIMIT - 1, -HIGH_HALF, -ADDRESS_LIMIT}
)
"""Constants that mark an expression as a sign reinterpretation."""

SAMPLES = tuple(
    sorted(
        {1, PAGE_SIZE, *BOUNDARIES}
        | {address for kind in ADDRESS_CLASSES.values() for address in kind.observed}
    )
)
"""Addresses each candidate is evaluated at: small offsets, the boundaries of every encoding
(``2**63 - 1``, ``2**63``, ``2**64 - 1`` among them), and addresses seen on real devices."""


def as_signed(value: int) -> int:
    """The int64 reading of any int's low 64 bits."""
    return to_signed(to_unsigned(value))


class Reading(enum.Enum):
    """What an expression computes from the 64 bits it is given."""

    UNSIGNED = "the unsigned address"
    SIGNED = "its int64 bits"
    WRONG = "neither"


class Verdict:
    """A reading, with the first sample where a wrong one went astray."""

    def __init__(self, reading: Reading, sample: int = 0, got: int = 0) -> None:
        self.reading = reading
        self.sample = sample
        self.got = got


class _Unsupported(Exception):
    pass


_BINARY: Mapping[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.BitAnd: operator.and_,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
}
_COMPARE: Mapping[type[ast.cmpop], Callable[[int, int], bool]] = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_LARGEST_SHIFT = 130


class _Evaluator:
    def __init__(self, is_operand: Callable[[ast.expr], bool], constants: Mapping[str, int]):
        self.is_operand = is_operand
        self.constants = constants

    def value(self, node: ast.expr, x: int) -> int:
        if self.is_operand(node):
            return x
        if isinstance(node, ast.Constant):
            if type(node.value) is int:
                return node.value
            if type(node.value) is bool:
                return int(node.value)
            raise _Unsupported
        if isinstance(node, ast.Name) and node.id in self.constants:
            return self.constants[node.id]
        if isinstance(node, ast.BinOp):
            return self._binary(node, x)
        if isinstance(node, ast.UnaryOp):
            operand = self.value(node.operand, x)
            if isinstance(node.op, ast.USub):
                return -operand
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(node.op, ast.Invert):
                return ~operand
            return int(not operand)
        if isinstance(node, ast.IfExp):
            return self.value(node.body if self.value(node.test, x) else node.orelse, x)
        if isinstance(node, ast.Compare):
            left = self.value(node.left, x)
            for op, right_node in zip(node.ops, node.comparators, strict=True):
                right = self.value(right_node, x)
                compare = _COMPARE.get(type(op))
                if compare is None:
                    raise _Unsupported
                if not compare(left, right):
                    return 0
                left = right
            return 1
        if isinstance(node, ast.BoolOp):
            values = (self.value(item, x) for item in node.values)
            if isinstance(node.op, ast.And):
                return int(all(values))
            return int(any(values))
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("min", "max", "int", "abs")
            and not node.keywords
            and node.args
        ):
            args = [self.value(arg, x) for arg in node.args]
            if node.func.id == "min":
                return min(args)
            if node.func.id == "max":
                return max(args)
            if len(args) != 1:
                raise _Unsupported
            return abs(args[0]) if node.func.id == "abs" else args[0]
        raise _Unsupported

    def _binary(self, node: ast.BinOp, x: int) -> int:
        left = self.value(node.left, x)
        right = self.value(node.right, x)
        if isinstance(node.op, ast.Pow):
            if not 0 <= right <= _LARGEST_SHIFT or abs(left) > 16:
                raise _Unsupported
            return int(left**right)
        if isinstance(node.op, ast.LShift | ast.RShift):
            if not 0 <= right <= _LARGEST_SHIFT or abs(left) >= 1 << 80:
                raise _Unsupported
            return left << right if isinstance(node.op, ast.LShift) else left >> right
        binary = _BINARY.get(type(node.op))
        if binary is None:
            raise _Unsupported
        return binary(left, right)


def uses_sign_constants(
    node: ast.expr, is_operand: Callable[[ast.expr], bool], constants: Mapping[str, int]
) -> bool:
    """Whether ``node`` holds a constant subexpression equal to ``2**63``, ``2**64`` or one less
    (or their negatives), as a reinterpretation does."""
    evaluator = _Evaluator(lambda _: False, constants)
    pending = [node]
    while pending:
        item = pending.pop()
        if is_operand(item):
            continue
        if isinstance(item, ast.Constant | ast.Name | ast.BinOp | ast.UnaryOp):
            try:
                if evaluator.value(item, 0) in SIGN_CONSTANTS:
                    return True
            except (_Unsupported, ArithmeticError):
                pass
        pending.extend(child for child in ast.iter_child_nodes(item) if isinstance(child, ast.expr))
    return False


def classify(
    node: ast.expr,
    is_operand: Callable[[ast.expr], bool],
    constants: Mapping[str, int],
    *,
    signed_input: bool,
) -> Verdict | None:
    """What ``node`` computes from the operand (``is_operand`` picks its occurrences), which is an
    address (``signed_input`` false) or int64 bits read back (true); ``None`` where it uses
    something other than integer arithmetic."""
    evaluator = _Evaluator(is_operand, constants)
    results: list[tuple[int, int]] = []
    for sample in SAMPLES:
        given = as_signed(sample) if signed_input else sample
        try:
            results.append((given, evaluator.value(node, given)))
        except (_Unsupported, ArithmeticError, RecursionError):
            return None
    if all(got == to_unsigned(given) for given, got in results):
        return Verdict(Reading.UNSIGNED)
    if all(got == as_signed(given) for given, got in results):
        return Verdict(Reading.SIGNED)
    wrong = [(given, got) for given, got in results if got not in (given, as_signed(given))]
    given, got = min(wrong or results, key=lambda pair: abs(to_unsigned(pair[0]) - HIGH_HALF))
    return Verdict(Reading.WRONG, given, got)


def evaluate_constant(node: ast.expr, constants: Mapping[str, int]) -> int | None:
    """The int a constant expression (``1 << 63``, ``MASK - 1``) stands for, or ``None``."""
    try:
        return _Evaluator(lambda _: False, constants).value(node, 0)
    except (_Unsupported, ArithmeticError, RecursionError):
        return None


def operands(node: ast.expr, constants: Mapping[str, int]) -> Iterator[ast.expr]:
    """The operands of an integer expression: what is not arithmetic or a constant."""
    if isinstance(node, ast.BinOp):
        yield from operands(node.left, constants)
        yield from operands(node.right, constants)
    elif isinstance(node, ast.UnaryOp):
        yield from operands(node.operand, constants)
    elif isinstance(node, ast.IfExp):
        for part in (node.test, node.body, node.orelse):
            yield from operands(part, constants)
    elif isinstance(node, ast.BoolOp):
        for part in node.values:
            yield from operands(part, constants)
    elif isinstance(node, ast.Compare):
        for part in (node.left, *node.comparators):
            yield from operands(part, constants)
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in ("min", "max", "abs", "int")
    ):
        for part in node.args:
            yield from operands(part, constants)
    elif isinstance(node, ast.Constant) or (isinstance(node, ast.Name) and node.id in constants):
        return
    else:
        yield node


def as_expression(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt] | None:
    """A function of one parameter written as ``if x >= 2**63: x -= 2**64`` then ``return x``
    (or with two returns): its body as the one ``return`` of a conditional expression, which
    :func:`classify` can read; ``None`` for any other body."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    parameters = function.args.posonlyargs + function.args.args
    if not body or not isinstance(body[0], ast.If) or len(parameters) != 1:
        return None
    branch = body[0]
    test = branch.test
    if len(branch.body) != 1:
        return None
    inner = branch.body[0]
    if isinstance(inner, ast.Return) and inner.value is not None:
        if len(body) == 1 and len(branch.orelse) == 1:
            otherwise = branch.orelse[0]
        elif len(body) == 2 and not branch.orelse:
            otherwise = body[1]
        else:
            return None
        if not (isinstance(otherwise, ast.Return) and otherwise.value is not None):
            return None
        expression = ast.IfExp(test=test, body=inner.value, orelse=otherwise.value)
        ast.copy_location(expression, inner.value)
        return [ast.copy_location(ast.Return(value=expression), branch)]
    if len(body) != 2 or branch.orelse or not isinstance(body[1], ast.Return):
        return None
    returned = body[1].value
    if not isinstance(returned, ast.Name):
        return None
    name = returned.id
    if (
        isinstance(inner, ast.AugAssign)
        and isinstance(inner.target, ast.Name)
        and inner.target.id == name
    ):
        changed: ast.expr = ast.BinOp(
            left=ast.Name(id=name, ctx=ast.Load()), op=inner.op, right=inner.value
        )
    elif (
        isinstance(inner, ast.Assign)
        and len(inner.targets) == 1
        and isinstance(inner.targets[0], ast.Name)
        and inner.targets[0].id == name
    ):
        changed = inner.value
    else:
        return None
    ast.copy_location(changed, inner)
    ast.fix_missing_locations(changed)
    expression = ast.IfExp(test=test, body=changed, orelse=ast.Name(id=name, ctx=ast.Load()))
    ast.copy_location(expression, inner)
    ast.fix_missing_locations(expression)
    return [ast.copy_location(ast.Return(value=expression), branch)]
