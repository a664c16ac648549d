"""Calls that hand an address to native code as a signed 64-bit integer: a ``torch.ops``
operator's ``int`` parameter (``int64_t``: what the tree's schema of the operator says, else
every int), and the library functions of :data:`~ptrport.lint.native.SIGNED_PARAMETERS`."""

from __future__ import annotations

import ast

from ptrport.lint import rules
from ptrport.lint.flow.interface import Flow
from ptrport.lint.native import (
    SIGNED_PARAMETERS,
    int_annotation,
    names_address,
    names_host,
    names_memory,
    op_name,
    signed,
)
from ptrport.lint.values import NOTHING, Frame, Holds, Value, carried, list_of


def native_call(flow: Flow, name: str, node: ast.Call, frame: Frame) -> Value | None:
    """``torch.ops.ns.op(...)`` (or ``.default(...)``), a function taking an address as
    ``int64_t``; ``None`` for any other call."""
    if not name.startswith("torch."):
        return None
    known = SIGNED_PARAMETERS.get(name)
    op = op_name(name) if known is None else None
    if known is None and op is None:
        return None
    arguments, keywords = flow.arguments(node, frame)
    if known is not None:
        position, parameter = known
        if len(node.args) > position and not _starred_before(node, position):
            given = [(arguments[position], parameter, "")]
            _passed(flow, node, given, name, rules.SIGNED_LIBRARY, frame)
        return NOTHING
    assert op is not None
    namespace, operator = op
    callee = f"torch.ops.{namespace}.{operator}"
    schema = flow.index.schemas.get(operator)
    if any(carried(value) is Holds.ADDRESS for value in (*arguments, *keywords.values())):
        flow.native_ops.add(operator)
    passed: list[tuple[Value, str, str]] = []
    for position, argument in enumerate(node.args):
        if isinstance(argument, ast.Starred):
            break
        if schema is None:
            passed.append((arguments[position], f"argument {position + 1}", ""))
        elif position < len(schema):
            kind, parameter = schema[position]
            passed.append((arguments[position], parameter, kind))
    named_kinds = {parameter: kind for kind, parameter in schema or ()}
    for keyword in node.keywords:
        if keyword.arg is not None and (schema is None or keyword.arg in named_kinds):
            passed.append((keywords[keyword.arg], keyword.arg, named_kinds.get(keyword.arg, "")))
    why = rules.SIGNED_BY_SCHEMA if schema is not None else rules.SIGNED_TORCH_OPS
    _passed(flow, node, passed, callee, why, frame)
    return NOTHING


def _passed(
    flow: Flow,
    node: ast.Call,
    passed: list[tuple[Value, str, str]],
    callee: str,
    why: str,
    frame: Frame,
) -> None:
    """The arguments of one call passed as ``int64_t``: a finding (on the call) where any is an
    address (or addresses) as Python ints, not their int64 bits and not a tensor."""
    addresses = [
        (value, parameter, kind)
        for value, parameter, kind in passed
        if carried(value) is Holds.ADDRESS and value.dtype is None and (not kind or signed(kind))
    ]
    if addresses:
        message = rules.signed_parameters(addresses, callee, why)
        flow.report("signed-storage", node, frame, message, fix=rules.SIGNED_PARAMETER_FIX)


def named(target: ast.expr, line: int) -> Value:
    """What an unfollowed call's result, bound to ``target``, is by its name: an address
    where the name says so (``raddr``, ``(base_ptr, size)``), else nothing known."""
    if isinstance(target, ast.Name):
        if not names_address(target.id):
            return NOTHING
        address = _by_name(target.id, line)
        return list_of(address) if target.id.lower().endswith("s") else address
    if isinstance(target, ast.Tuple | ast.List) and not any(
        isinstance(item, ast.Starred) for item in target.elts
    ):
        items = tuple(named(item, line) for item in target.elts)
        return Value(items=items) if any(item != NOTHING for item in items) else NOTHING
    return NOTHING


def named_parameter(parameter: ast.arg, function: ast.FunctionDef | ast.AsyncFunctionDef) -> Value:
    """A parameter annotated as an int (or a list of ints) and named for memory (``reg_buffer:
    int``, ``fake_ipc_ptrs: list[int]``): its address (addresses), unless its function says it
    handles host memory (:func:`~ptrport.lint.native.names_host`); else nothing known."""
    if parameter.annotation is None or not names_memory(parameter.arg):
        return NOTHING
    if names_host(function.name):
        return NOTHING
    kind = int_annotation(parameter.annotation)
    if kind is None:
        return NOTHING
    address = _by_name(parameter.arg, parameter.lineno)
    return list_of(address) if kind == "list" else address


def _by_name(name: str, line: int) -> Value:
    return Value(holds=Holds.ADDRESS, origin=f"`{name}` (line {line}, named as an address)")


def _starred_before(node: ast.Call, position: int) -> bool:
    return any(isinstance(argument, ast.Starred) for argument in node.args[: position + 1])
