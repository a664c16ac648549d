"""Calls of methods of what is no instance of a class of the module, by the method's name:
of lists and ints (``ptrs.append(p)``, ``p.to_bytes(8)``), and of tensors and arrays
(``t.fill_(p)``, ``.view(dtype)``, ``.numpy()``, ``.tolist()``)."""

from __future__ import annotations

import ast
from dataclasses import replace

from ptrport.lint import dtypes, rules
from ptrport.lint.dtypes import Dtype, Width
from ptrport.lint.flow import syntax
from ptrport.lint.flow.interface import Flow, MethodCall
from ptrport.lint.library import BYTES, CONVERTING, GROWING, SAME_STORAGE, STORING
from ptrport.lint.values import (
    NOTHING,
    Frame,
    Holds,
    Value,
    bits_kept,
    element_of,
    join,
    list_of,
    read_back,
)


def method_call(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, receiver: Value
) -> Value:
    """``x.method(...)`` where ``x`` is no instance of a class of the module."""
    method = func.attr
    dtype = receiver.dtype
    if dtype is None and method in PLAIN_METHODS:
        return PLAIN_METHODS[method](flow, func, node, frame, receiver)
    if receiver.element is not None or receiver.items is not None:
        return _container_method(flow, func, node, frame, receiver)
    if dtype is None and method in CONVERTING:
        # Of a tensor or an array not followed here (a parameter): the dtype it is given.
        return _conversion(flow, func, node, frame, receiver)
    follow = STORAGE_METHODS.get(method)
    if dtype is None and method in STORING:
        arguments, _ = flow.arguments(node, frame)
        if arguments:
            flow.store(node, receiver, arguments[-1], frame, func.value)
        return NOTHING
    if receiver == NOTHING:
        # Of what is not followed: what the tree's methods of that name all give, else
        # (a factory passed in) storage where given ``dtype=``.
        flow.consult_member(method, frame)
        given = flow.arguments(node, frame)
        flow.record_pass("." + method, given)
        member = flow.index.members.get(method)
        if member is not None:
            return member
        return flow.made_with_dtype(node, frame)
    if follow is None or dtype is None or dtype.library not in ("torch", "numpy"):
        flow.arguments(node, frame)
        return NOTHING
    return follow(flow, func, node, frame, receiver)


def _grow(flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, current: Value) -> Value:
    """``ptrs.append(p)`` (or ``extend``, ``insert``, ``add``): the list now holds ``p``."""
    arguments, _ = flow.arguments(node, frame)
    if not arguments:
        return NOTHING
    added = arguments[-1]
    if func.attr == "extend":
        added = element_of(added)
    grown = Value(element=join(current.element, added))
    outer = func.value.value if isinstance(func.value, ast.Subscript) else None
    if isinstance(outer, ast.Name | ast.Attribute) and frame.statement is not None:
        # ``rows[i].append(p)``: a list (or dict) of lists, one of which now holds ``p``.
        grown = Value(element=join(flow.value(outer, frame).element, grown))
        func = ast.Attribute(value=outer, attr=func.attr)
    if isinstance(func.value, ast.Name | ast.Attribute) and frame.statement is not None:
        if isinstance(func.value, ast.Attribute) and not (
            isinstance(func.value.value, ast.Name) and func.value.value.id == frame.self_name
        ):
            return NOTHING
        flow.bind(func.value, grown, frame, frame.statement)
    return NOTHING


def _to_bytes(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, number: Value
) -> Value:
    """``p.to_bytes(8, ...)``: bytes holding the address, unless they are signed."""
    flow.arguments(node, frame)
    if number.holds not in (Holds.ADDRESS, Holds.BITS):
        return NOTHING
    if number.holds is Holds.ADDRESS and syntax.signed_keyword(node):
        message = rules.converted(number, "to_bytes(..., signed=True)", Width.SIGNED64)
        flow.report("signed-storage", node, frame, message)
        return NOTHING
    return Value(holds=number.holds, dtype=BYTES, origin=number.origin)


def _container_method(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, container: Value
) -> Value:
    flow.arguments(node, frame)
    if func.attr == "copy":
        return container
    if func.attr == "pop":
        return element_of(container)
    return NOTHING


def _storing(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value
) -> Value:
    """``t.fill_(p)``, ``t.copy_(src)``: the last argument written into the storage."""
    arguments, _ = flow.arguments(node, frame)
    if arguments:
        flow.store(node, storage, arguments[-1], frame, func.value)
    return storage


def _conversion(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, source: Value
) -> Value:
    """``.view(dtype)``, ``.to(dtype)``, ``.astype(dtype)``, ``.type(dtype)``."""
    target = flow.dtype_argument(node, frame, 0)
    flow.arguments(node, frame)
    if source.dtype is None:
        if target is None or target.library not in ("torch", "numpy"):
            return NOTHING
        return Value(dtype=target, made=f"line {node.lineno}")
    if target is None:
        return NOTHING if flow.has_dtype(node, None) else source
    return _convert(flow, node, source, target, frame, func.attr)


def _numpy_view(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, tensor: Value
) -> Value:
    """``t.numpy()``: the same storage, as an array (which remembers that it views a
    tensor)."""
    flow.arguments(node, frame)
    assert tensor.dtype is not None
    viewed = tensor.viewed or ("torch" if tensor.dtype.library == "torch" else "")
    return replace(tensor, dtype=dtypes.in_library(tensor.dtype, "numpy"), viewed=viewed)


def _tolist(flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value) -> Value:
    flow.arguments(node, frame)
    return list_of(read_back(replace(storage, scalar=True)))


def _item_of(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value
) -> Value:
    flow.arguments(node, frame)
    return read_back(storage)


def _same_storage(
    flow: Flow, func: ast.Attribute, node: ast.Call, frame: Frame, storage: Value
) -> Value:
    flow.arguments(node, frame)
    return storage


def _convert(
    flow: Flow, node: ast.Call, source: Value, target: Dtype, frame: Frame, how: str
) -> Value:
    """``.view(dtype)`` / ``.to(dtype)`` / ``.astype(dtype)`` of typed storage."""
    library = source.dtype.library if source.dtype else target.library
    target = dtypes.in_library(target, library) or target
    made = f"line {node.lineno}"
    holds = source.holds
    if holds in (Holds.ADDRESS, Holds.BITS):
        kept = bits_kept(target)
        if kept is not None:
            return Value(
                holds=kept, dtype=target, scalar=source.scalar, origin=source.origin, made=made
            )
        if target.unsafe and how != "view":
            rule = rules.WIDTH_RULES[target.width][0]
            message = rules.converted(source, f".{how}({target.name})", target.width)
            flow.report(rule, node, frame, message, dtype=target)
    return Value(dtype=target, scalar=source.scalar, made=made)


PLAIN_METHODS: dict[str, MethodCall] = {
    **dict.fromkeys(GROWING, _grow),
    "to_bytes": _to_bytes,
}
"""The handler that follows each method of what is not typed storage (a list, an int)."""

STORAGE_METHODS: dict[str, MethodCall] = {
    **dict.fromkeys(STORING, _storing),
    **dict.fromkeys(CONVERTING, _conversion),
    "numpy": _numpy_view,
    "tolist": _tolist,
    "item": _item_of,
    **dict.fromkeys(SAME_STORAGE, _same_storage),
}
"""The handler that follows each method of a tensor or an array."""
