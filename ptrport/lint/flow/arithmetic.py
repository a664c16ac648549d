"""Arithmetic on addresses: sums, masks and shifts keep an address; an expression with
2**63/2**64 constants is read as a conversion to or from int64 bits (``bad-bitcast`` where it is
wrong, :mod:`ptrport.lint.reinterpret`); a NumPy address meeting a signed array is rounded to
float64 (``mixed-sign-numpy``); a comparison of int64 bits with an address is
``signed-compare``. A bit of an address read in a test (:func:`condition`) is no conversion."""

from __future__ import annotations

import ast
import itertools

from ptrport.lint import dtypes, reinterpret, rules
from ptrport.lint.dtypes import Width
from ptrport.lint.flow.interface import Evaluator, Flow
from ptrport.lint.values import NOTHING, Frame, Holds, Value, carried, element_of, join, join_all


def _arithmetic(flow: Flow, node: ast.expr, frame: Frame) -> Value:
    reading = _reinterpretation(flow, node, frame)
    if reading is not None:
        return reading
    if isinstance(node, ast.BinOp):
        return _binary(flow, node, frame)
    if isinstance(node, ast.UnaryOp):
        flow.value(node.operand, frame)
        return NOTHING
    if isinstance(node, ast.IfExp):
        condition(flow, node.test, frame)
        body, orelse = flow.value(node.body, frame), flow.value(node.orelse, frame)
        _undoes_unsigned(flow, node, body, orelse, frame)
        return join(body, orelse)
    assert isinstance(node, ast.BoolOp)
    return join_all(flow.value(item, frame) for item in node.values)


def _undoes_unsigned(flow: Flow, node: ast.IfExp, body: Value, orelse: Value, frame: Frame) -> None:
    """``torch.int64 if dtype == torch.uint64 else dtype``: a patch (a wrapper, a lambda) that
    gives signed storage where the code it wraps asks for unsigned."""
    test = node.test
    if not isinstance(test, ast.Compare) or len(test.ops) != 1:
        return
    if not isinstance(test.ops[0], ast.Eq | ast.Is | ast.NotEq | ast.IsNot):
        return
    # The test names an unsigned dtype (``torch.uint64``): read as a name, not evaluated again.
    named = (flow.library_dtype(side) for side in (test.left, test.comparators[0]))
    asked = next((d for d in named if d is not None and d.width is Width.UNSIGNED64), None)
    if asked is None:
        return
    chosen = body if isinstance(test.ops[0], ast.Eq | ast.Is) else orelse
    signed = chosen.denotes
    if signed is None or signed.width is not Width.SIGNED64:
        return
    message = rules.unsigned_undone(flow.text(node, 64), signed, asked)
    flow.report("signed-storage", node, frame, message, fix=rules.unsigned_kept(asked))


def condition(flow: Flow, node: ast.expr, frame: Frame) -> None:
    """A test (of ``if``, ``while``, ``assert``, a conditional expression, ``bool()``). A
    bit of an address read there (``p & (1 << 63)``, ``p >> 63``, either compared with a
    constant) is no reinterpretation of it; what the bit is read from is still followed."""
    if isinstance(node, ast.BoolOp):
        for value in node.values:
            condition(flow, value, frame)
        return
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        condition(flow, node.operand, frame)
        return
    sides = [node.left, *node.comparators] if isinstance(node, ast.Compare) else [node]
    if not any(isinstance(side, ast.BinOp) for side in sides):
        flow.value(node, frame)
        return
    read = [_bits_read(flow, side) for side in sides]
    if any(read) and all(
        bits is not None or _constant(flow, side) is not None
        for bits, side in zip(read, sides, strict=True)
    ):
        for bits in read:
            if bits is not None:
                flow.value(bits, frame)
    else:
        flow.value(node, frame)


def _bits_read(flow: Flow, node: ast.expr) -> ast.expr | None:
    """What ``x & MASK`` or ``x >> N`` (``MASK``, ``N`` constant) reads bits of: ``x``."""
    if not isinstance(node, ast.BinOp):
        return None
    if isinstance(node.op, ast.BitAnd):
        if _constant(flow, node.right) is not None:
            return node.left
        if _constant(flow, node.left) is not None:
            return node.right
    elif isinstance(node.op, ast.RShift) and _constant(flow, node.right) is not None:
        return node.left
    return None


def _constant(flow: Flow, node: ast.expr) -> int | None:
    return reinterpret.evaluate_constant(node, flow.constants)


def _may_reinterpret(flow: Flow, node: ast.AST) -> bool:
    """Whether ``node`` holds a constant that could make 2**63 or 2**64: the cheap test
    before the evaluation (each node of the module looked at once)."""
    known = flow.sign_constants.get(node)
    if known is None:
        if isinstance(node, ast.Constant):
            known = type(node.value) is int and (
                node.value in (62, 63, 64) or abs(node.value) >= 1 << 62
            )
        elif isinstance(node, ast.Name):
            known = node.id in flow.constants and abs(flow.constants[node.id]) >= 1 << 62
        else:
            known = False
            for child in ast.iter_child_nodes(node):
                # Every child is looked at, so that each is known for the next question.
                known = _may_reinterpret(flow, child) or known
        flow.sign_constants[node] = known
    return known


def _reinterpretation(flow: Flow, node: ast.expr, frame: Frame) -> Value | None:
    """An integer expression converting an address (or int64 bits) with 2**63/2**64
    constants: what it computes, and a ``bad-bitcast`` finding when that is wrong."""
    if not _may_reinterpret(flow, node):
        return None
    leaves = list(reinterpret.operands(node, flow.constants))
    if not leaves:
        return None
    operands: list[tuple[ast.expr, Value]] = []
    for leaf in leaves:
        value = flow.value(leaf, frame)
        holds = value.holds
        if value.dtype is not None or value.element is not None:
            return None
        if holds in (Holds.ADDRESS, Holds.BITS, Holds.READ_BACK):
            operands.append((leaf, value))
        elif not (isinstance(leaf, ast.Name) and leaf.id in flow.constants):
            return None
    if not operands:
        return None
    dumps = {ast.dump(leaf) for leaf, _ in operands}
    holds_set = {value.holds for _, value in operands}
    if len(dumps) != 1 or len(holds_set) != 1:
        return None
    operand_value = operands[0][1]

    signed_input = operand_value.holds is not Holds.ADDRESS
    verdict = _verdict(flow, node, frozenset(leaf for leaf, _ in operands), signed_input)
    if verdict is None:
        return None
    if verdict.reading is reinterpret.Reading.UNSIGNED:
        return Value(holds=Holds.ADDRESS, origin=operand_value.origin)
    if verdict.reading is reinterpret.Reading.SIGNED:
        return Value(holds=Holds.BITS, origin=operand_value.origin)
    text = flow.text(node, 60)
    message = rules.reinterpreted(text, operand_value, verdict, signed_input=signed_input)
    flow.report("bad-bitcast", node, frame, message)
    return NOTHING


def _verdict(
    flow: Flow, node: ast.expr, operands: frozenset[ast.expr], signed_input: bool
) -> reinterpret.Verdict | None:
    """What ``node`` computes from the operand at ``operands`` (decided once per module: a
    helper run for each call sees the same expression)."""
    key = (node, operands, signed_input)
    if key not in flow.verdicts:
        verdict = None
        if reinterpret.uses_sign_constants(node, operands.__contains__, flow.constants):
            verdict = reinterpret.classify(
                node, operands.__contains__, flow.constants, signed_input=signed_input
            )
        flow.verdicts[key] = verdict
    return flow.verdicts[key]


def _binary(flow: Flow, node: ast.BinOp, frame: Frame) -> Value:
    left = flow.value(node.left, frame)
    right = flow.value(node.right, frame)
    mixed = _mixed_sign(left, right) or _mixed_sign(right, left)
    if mixed is not None:
        address, signed = mixed
        assert address.dtype is not None and signed.dtype is not None
        text = flow.text(node, 60)
        message = rules.mixed_sign(address, address.dtype, signed.dtype, text)
        flow.report("mixed-sign-numpy", node, frame, message)
        # Still the address, rounded: what it is stored into holds addresses.
        return Value(
            holds=Holds.ADDRESS,
            dtype=dtypes.library_dtype("numpy", "float64"),
            origin=address.origin,
        )
    if left.element is not None or right.element is not None or left.items or right.items:
        if isinstance(node.op, ast.Add):
            return Value(element=join(element_of(left), element_of(right)))
        if isinstance(node.op, ast.Mult):
            container = left if left.element is not None or left.items else right
            return Value(element=element_of(container))
        return NOTHING
    typed = left.dtype or right.dtype
    left_holds, right_holds = left.holds, right.holds
    holds: Holds | None = None
    if isinstance(node.op, ast.Add):
        if left_holds and not right_holds:
            holds = left_holds
        elif right_holds and not left_holds:
            holds = right_holds
    elif isinstance(node.op, ast.Sub):
        holds = left_holds if left_holds and not right_holds else None
    elif isinstance(node.op, ast.BitOr):
        holds = left_holds or right_holds
    elif isinstance(node.op, ast.BitAnd):
        holds = _masked(flow, node, left, right)
    origin = left.origin or right.origin
    if typed is not None:
        dtype = typed if (left.dtype or typed) == (right.dtype or typed) else None
        scalar = (left.scalar or left.dtype is None) and (right.scalar or right.dtype is None)
        if dtype is None:
            return NOTHING
        given = left if left.holds is holds else right
        if holds is Holds.ADDRESS and given.dtype is None and dtype.width is Width.SIGNED64:
            # A Python int address meeting int64 values is converted to int64 here: what
            # the result is stored into is where the address must fit.
            return Value(holds=holds, origin=origin)
        return Value(holds=holds, dtype=dtype, scalar=scalar, origin=origin)
    return Value(holds=holds, origin=origin) if holds else NOTHING


def _masked(flow: Flow, node: ast.BinOp, left: Value, right: Value) -> Holds | None:
    """``p & mask``: still an address when the mask keeps the high bits (alignment), not
    when it keeps only the low ones (an offset in a page)."""
    for value, other in ((left, node.right), (right, node.left)):
        if value.holds is None:
            continue
        mask = reinterpret.evaluate_constant(other, flow.constants)
        if mask is not None and (mask < 0 or mask >= 1 << 32):
            return value.holds
    return None


def _mixed_sign(address: Value, other: Value) -> tuple[Value, Value] | None:
    dtype, signed = address.dtype, other.dtype
    if dtype is None or signed is None:
        return None
    if dtype.library != "numpy" or signed.library != "numpy":
        return None
    if dtype.width is not Width.UNSIGNED64 or address.holds is not Holds.ADDRESS:
        return None
    return (address, other) if signed.signed_integer else None


def _compare(flow: Flow, node: ast.Compare, frame: Frame) -> Value:
    """A comparison, which is no address: a ``signed-compare`` finding where values read
    back from int64 storage meet unsigned addresses."""
    values = [flow.value(node.left, frame)]
    values.extend(flow.value(item, frame) for item in node.comparators)
    for (a, b), op in zip(itertools.pairwise(values), node.ops, strict=True):
        if isinstance(op, ast.Is | ast.IsNot):
            continue
        for signed, unsigned in ((a, b), (b, a)):
            if _signed_side(signed) and _unsigned_side(unsigned):
                flow.report("signed-compare", node, frame, rules.compared(signed, unsigned))
                return NOTHING
    return NOTHING


def _signed_side(value: Value) -> bool:
    holds = carried(value)
    if holds is Holds.READ_BACK:
        return True
    return value.dtype is not None and value.dtype.width is Width.SIGNED64 and holds is Holds.BITS


def _unsigned_side(value: Value) -> bool:
    if carried(value) is not Holds.ADDRESS:
        return False
    return value.dtype is None or value.dtype.width is Width.UNSIGNED64


EVALUATORS: dict[type[ast.expr], Evaluator] = {
    ast.BinOp: _arithmetic,
    ast.UnaryOp: _arithmetic,
    ast.IfExp: _arithmetic,
    ast.BoolOp: _arithmetic,
    ast.Compare: _compare,
}
"""The handler that evaluates each kind of arithmetic expression."""
