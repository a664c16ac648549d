"""Evaluating names, attributes, subscripts, containers and comprehensions: what each is
(:class:`~ptrport.lint.values.Value`), one handler per kind of node in :data:`EVALUATORS`.
Arithmetic and comparisons are :mod:`~ptrport.lint.flow.arithmetic`'s, calls
:mod:`~ptrport.lint.flow.calls`'."""

from __future__ import annotations

import ast
from dataclasses import replace

from ptrport.lint import dtypes
from ptrport.lint.flow import arithmetic, syntax
from ptrport.lint.flow.classes import find_method, lookup
from ptrport.lint.flow.interface import Evaluator, Flow
from ptrport.lint.library import (
    ARRAY_INTERFACES,
    SYMMETRIC_MEMORY,
    SYMMETRIC_MEMORY_ADDRESSES,
    VIEW_ATTRIBUTES,
)
from ptrport.lint.tree_index import PROPERTY, ClassShape
from ptrport.lint.values import (
    NOTHING,
    ClassInfo,
    Frame,
    Holds,
    Value,
    element_of,
    join_all,
    list_of,
)


def _name(flow: Flow, node: ast.Name, frame: Frame) -> Value:
    found = frame.env.get(node.id)
    if found is None:
        found = flow.module_env.get(node.id)
    if found is None:
        if node.id in flow.classes:
            return Value(denotes_class=node.id)
        dtype = flow.dtype(node)
        if dtype is not None:
            return Value(denotes=dtype)
        qualified = flow.imports.get(node.id)
        if qualified is not None:
            flow.consulted.add(qualified)
            if isinstance(flow.index.shapes.get(qualified), ClassShape):
                return Value(denotes_class=qualified)
        return NOTHING
    return found


def _tuple(flow: Flow, node: ast.Tuple, frame: Frame) -> Value:
    return Value(items=tuple(flow.item(e, frame) for e in node.elts))


def _list(flow: Flow, node: ast.List | ast.Set, frame: Frame) -> Value:
    return list_of(join_all(flow.item(item, frame) for item in node.elts))


def _dict(flow: Flow, node: ast.Dict, frame: Frame) -> Value:
    keys = []
    for key, item in zip(node.keys, node.values, strict=True):
        value = flow.value(item, frame)
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            keys.append((key.value, value))
    return Value(keys=tuple(keys)) if keys else NOTHING


def _inner_frame(frame: Frame) -> Frame:
    """A frame for an expression's own names (a comprehension's, a lambda's), seeing the
    names around it."""
    return replace(frame, env=dict(frame.env), returns=[])


def _comprehension(
    flow: Flow, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, frame: Frame
) -> Value:
    inner = _inner_frame(frame)
    for generator in node.generators:
        element = element_of(flow.value(generator.iter, inner))
        flow.bind(generator.target, element, inner, frame.statement or ast.Pass())
        for condition in generator.ifs:
            arithmetic.condition(flow, condition, inner)
    if isinstance(node, ast.DictComp):
        flow.value(node.key, inner)
        flow.value(node.value, inner)
        return NOTHING
    element = flow.value(node.elt, inner)
    return list_of(element)


def _named(flow: Flow, node: ast.NamedExpr, frame: Frame) -> Value:
    value = flow.value(node.value, frame)
    frame.env[node.target.id] = value
    return value


def _inner(flow: Flow, node: ast.Starred | ast.Await, frame: Frame) -> Value:
    return flow.value(node.value, frame)


def _joined_string(flow: Flow, node: ast.JoinedStr, frame: Frame) -> Value:
    for part in node.values:
        flow.value(part, frame)
    return NOTHING


def _formatted(flow: Flow, node: ast.FormattedValue, frame: Frame) -> Value:
    flow.value(node.value, frame)
    return NOTHING


def _attribute(flow: Flow, node: ast.Attribute, frame: Frame) -> Value:
    if node.attr in dtypes.NAMES:
        dtype = flow.library_dtype(node)
        if dtype is not None:
            return Value(denotes=dtype)
    if node.attr in ARRAY_INTERFACES:
        flow.value(node.value, frame)
        address = Value(holds=Holds.ADDRESS, origin=flow.source(node))
        return Value(keys=(("data", Value(items=(address, NOTHING))),))
    if (
        node.attr == "data"
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "ctypes"
    ):
        # A NumPy array's ``arr.ctypes.data``: the address of its data.
        flow.value(node.value, frame)
        return Value(holds=Holds.ADDRESS, origin=flow.source(node))
    if (
        isinstance(node.value, ast.Name)
        and node.value.id == frame.self_name
        and frame.owner is not None
    ):
        found = lookup(flow, frame.owner, node.attr, frame)
        receiver = frame.env.get(node.value.id)
        return found or _property(flow, frame.owner, node.attr, receiver, frame)
    base = flow.value(node.value, frame)
    own = dict(base.keys or ()) if base.instance is not None else {}
    if node.attr in own:
        return own[node.attr]
    owner = base.instance or base.denotes_class
    if owner in flow.classes:
        info = flow.classes[owner]
        found = lookup(flow, info, node.attr, None)
        return found or _property(flow, info, node.attr, base, frame)
    if owner is not None or base == NOTHING:
        flow.foreign_reads.add(node.attr)
    if owner == SYMMETRIC_MEMORY and node.attr in SYMMETRIC_MEMORY_ADDRESSES:
        address = Value(holds=Holds.ADDRESS, origin=flow.source(node))
        return list_of(address) if SYMMETRIC_MEMORY_ADDRESSES[node.attr] else address
    shape = flow.index.shapes.get(owner or "")
    if isinstance(shape, ClassShape):
        found = shape.attributes.get(node.attr)
        if found is None and node.attr in shape.properties:
            found = shape.returns.get(node.attr)
        return found or NOTHING
    if base.dtype is not None:
        if base.dtype.library == "ctypes" and node.attr == "value":
            return Value(holds=base.holds, origin=base.origin)
        if node.attr in VIEW_ATTRIBUTES:
            return base
    if base == NOTHING:
        # Of what is not followed: what the tree's properties of that name all give.
        key = PROPERTY + node.attr
        flow.consult_member(key, frame)
        return flow.index.members.get(key, NOTHING)
    return NOTHING


def _property(
    flow: Flow, owner: ClassInfo, name: str, receiver: Value | None, frame: Frame
) -> Value:
    """``x.name`` where ``name`` is a ``@property`` of ``x``'s class: what it returns for
    ``x``; else nothing known."""
    found = find_method(flow, owner, name)
    if found is None or not syntax.is_property(found[1]):
        return NOTHING
    info, method = found
    first = receiver if receiver is not None and receiver.instance is not None else None
    return flow.run_function(
        method, info, [], {}, first or Value(instance=owner.name), frame.depth
    )[0]


def _subscript(flow: Flow, node: ast.Subscript, frame: Frame) -> Value:
    base = flow.value(node.value, frame)
    index = node.slice
    flow.value(index, frame)
    if base.keys is not None and isinstance(index, ast.Constant):
        return dict(base.keys).get(str(index.value), NOTHING)
    if base.keys is not None and base.instance is None:
        # A dict written out, looked up by a key the code computes: any of its values.
        return join_all(value for _, value in base.keys)
    if base.items is not None:
        if isinstance(index, ast.Constant) and isinstance(index.value, int):
            if -len(base.items) <= index.value < len(base.items):
                return base.items[index.value]
            return NOTHING
        if isinstance(index, ast.Slice):
            return Value(element=element_of(base))
        return element_of(base)
    if base.element is not None:
        return base if isinstance(index, ast.Slice) else base.element
    if base.dtype is not None:
        whole = isinstance(index, ast.Slice) or (
            isinstance(index, ast.Tuple) and any(isinstance(e, ast.Slice) for e in index.elts)
        )
        return (
            base
            if whole or not isinstance(index, ast.Constant | ast.Name)
            else replace(base, scalar=True)
        )
    return NOTHING


def _lambda(flow: Flow, node: ast.Lambda, frame: Frame) -> Value:
    """A lambda: its body is followed with its parameters unknown, for what it finds."""
    inner = _inner_frame(frame)
    arguments = node.args
    for parameter in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
        inner.env[parameter.arg] = NOTHING
    flow.value(node.body, inner)
    return NOTHING


EVALUATORS: dict[type[ast.expr], Evaluator] = {
    ast.Name: _name,
    ast.Attribute: _attribute,
    ast.Subscript: _subscript,
    ast.Tuple: _tuple,
    ast.List: _list,
    ast.Set: _list,
    ast.Dict: _dict,
    ast.ListComp: _comprehension,
    ast.SetComp: _comprehension,
    ast.GeneratorExp: _comprehension,
    ast.DictComp: _comprehension,
    ast.NamedExpr: _named,
    ast.Lambda: _lambda,
    ast.Starred: _inner,
    ast.Await: _inner,
    ast.JoinedStr: _joined_string,
    ast.FormattedValue: _formatted,
}
"""The handler that evaluates each kind of expression here."""
