"""The module's classes as the flow follows them: what an attribute holds (set anywhere in
the class or its bases, or annotated with a class of the tree), what a method's first
parameter is, and the calls that make instances (``Cls(...)``, a dataclass's or NamedTuple's
fields) or call methods, of classes of the module or of other modules of the tree."""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import replace

from ptrport.lint.flow import method_calls, syntax
from ptrport.lint.flow.interface import Flow
from ptrport.lint.tree_index import ClassShape
from ptrport.lint.values import NOTHING, ClassInfo, Frame, Function, Value, join

_FORWARD = re.compile(r"\s*(?:Optional\[\s*)?(?P<name>[\w.]+)\s*(?:\]|\|\s*None)?\s*")
"""A forward reference to a class: ``"Buffers"``, ``"Optional[pkg.Buffers]"``,
``"Buffers | None"``."""


def first_parameter(info: ClassInfo, method: Function, receiver: Value | None) -> Value | None:
    """What a method's first parameter is: the class for a classmethod, nothing for a
    staticmethod, else the instance (``receiver``, or any instance of the class)."""
    if syntax.decorated(method, "staticmethod"):
        return None
    if syntax.decorated(method, "classmethod"):
        return Value(denotes_class=info.name)
    if receiver is not None and receiver.denotes_class is not None:
        return None
    return receiver or Value(instance=info.name)


def lineage(flow: Flow, owner: ClassInfo) -> list[ClassInfo]:
    """The class, then its bases defined in this module, breadth first, each once."""
    found = flow.lineages.get(owner.name)
    if found is None:
        found = []
        seen: set[str] = set()
        pending = [owner]
        while pending:
            info = pending.pop(0)
            if info.name not in seen:
                seen.add(info.name)
                found.append(info)
                pending.extend(flow.classes[b] for b in info.bases if b in flow.classes)
        flow.lineages[owner.name] = found
    return found


def lookup(flow: Flow, owner: ClassInfo, attribute: str, frame: Frame | None) -> Value | None:
    """What ``owner``'s attribute holds: as set (in this run, in any method, in any
    construction seen), else an instance of the class it is annotated with."""
    if frame is not None and frame.owner is owner and attribute in frame.self_attributes:
        return frame.self_attributes[attribute]
    found = None
    annotation = None
    for info in lineage(flow, owner):
        if found is None:
            found = info.attributes.get(attribute)
        if annotation is None:
            annotation = info.annotations.get(attribute)
    if annotation is not None and (found is None or found == NOTHING):
        found = instance_annotated(flow, annotation) or found
    if flow.collecting:
        flow.reads.append((owner.name, attribute, found))
    return found


def instance_annotated(flow: Flow, annotation: ast.expr | None) -> Value | None:
    """An instance of the class of the tree ``annotation`` names (``Buffers``,
    ``Optional[Buffers]``, ``"Buffers | None"``), if it names one."""
    if annotation is None:
        return None
    if annotation not in flow.annotated_classes:
        flow.annotated_classes[annotation] = _annotated_class(flow, annotation)
    name = flow.annotated_classes[annotation]
    return Value(instance=name) if name is not None else None


def _annotated_class(flow: Flow, annotation: ast.expr) -> str | None:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        # A forward reference: a dotted name, maybe Optional[...] or ``| None``.
        written = _FORWARD.fullmatch(annotation.value)
        if written is None:
            return None
        name: ast.expr = ast.Name(written["name"].split(".")[0])
        for attribute in written["name"].split(".")[1:]:
            name = ast.Attribute(name, attribute)
        return _annotated_class(flow, name)
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = (annotation.left, annotation.right)
        named = [c for c in (_annotated_class(flow, side) for side in sides) if c is not None]
        return named[0] if len(named) == 1 else None
    if isinstance(annotation, ast.Subscript) and syntax.last_name(annotation.value) == "Optional":
        return _annotated_class(flow, annotation.slice)
    if isinstance(annotation, ast.Name) and annotation.id in flow.classes:
        return annotation.id
    qualified = flow.qualify(annotation)
    if qualified is None:
        return None
    flow.consulted.add(qualified)
    return qualified if isinstance(flow.index.shapes.get(qualified), ClassShape) else None


def find_method(flow: Flow, owner: ClassInfo, name: str) -> tuple[ClassInfo, Function] | None:
    return next(
        ((info, info.methods[name]) for info in lineage(flow, owner) if name in info.methods),
        None,
    )


def contribute(owner: ClassInfo, name: str, value: Value) -> None:
    """What ``owner``'s attribute is known to hold, once ``value`` is set on it somewhere."""
    old = owner.attributes.get(name)
    joined = join(old, value)
    if old is not None and old.dtype == value.dtype and None in (old.holds, value.holds):
        # Storage holds addresses once they are written into it anywhere, even where it is
        # made again.
        known = value if value.holds is not None else old
        joined = replace(joined, holds=known.holds, origin=known.origin)
    owner.attributes[name] = joined


def class_call(flow: Flow, name: str, node: ast.Call, frame: Frame) -> Value:
    """``Cls(...)``, ``cls(...)``: an instance of a class of the module or of the tree."""
    arguments, keywords = flow.arguments(node, frame)
    if name in flow.classes:
        return _instance(flow, flow.classes[name], node, arguments, keywords, frame)
    shape = flow.index.shapes.get(name)
    if not isinstance(shape, ClassShape):
        return flow.made_with_dtype(node, frame)
    if shape.fields is None:
        # Its __init__ is not run here: given ``dtype=``, it is taken to make storage.
        made = flow.made_with_dtype(node, frame)
        return made if made != NOTHING else Value(instance=shape.name)
    keys = bound_fields(shape.fields, node, arguments, keywords)
    return Value(instance=shape.name, keys=keys or None)


def tree_method_call(
    flow: Flow, shape: ClassShape, func: ast.Attribute, node: ast.Call, frame: Frame
) -> Value:
    """A method of a class of another module of the tree: what it returns run for its
    class (its factories' instances); given ``dtype=``, storage made where not known."""
    flow.record_pass("." + func.attr, flow.arguments(node, frame))
    returned = shape.returns.get(func.attr, NOTHING)
    return returned if returned != NOTHING else flow.made_with_dtype(node, frame)


def class_method_call(
    flow: Flow, owner: ClassInfo, receiver: Value, func: ast.Attribute, node: ast.Call, frame: Frame
) -> Value:
    """A method of a class of the module, run with these arguments (or, where the class has
    no such method, what its attribute of that name is called as)."""
    found = find_method(flow, owner, func.attr)
    if found is not None:
        info, method = found
        arguments, keywords = flow.arguments(node, frame)
        first = first_parameter(owner, method, receiver)
        return flow.run_function(method, info, arguments, keywords, first, frame.depth)[0]
    if lookup(flow, owner, func.attr, frame) is None:
        return flow.unknown_call(node, frame)
    return method_calls.method_call(flow, func, node, frame, receiver)


def _instance(
    flow: Flow,
    info: ClassInfo,
    node: ast.Call,
    arguments: list[Value],
    keywords: dict[str, Value],
    frame: Frame,
) -> Value:
    """``Cls(...)``: an instance, with what its ``__init__`` sets on ``self`` given these
    arguments."""
    instance = Value(instance=info.name)
    if not any(v != NOTHING for v in (*arguments, *keywords.values())):
        return instance
    if info.fields is not None:
        attributes = bound_fields(info.fields, node, arguments, keywords)
    else:
        found = find_method(flow, info, "__init__")
        if found is None:
            return instance
        _, attributes = flow.run_function(
            found[1], found[0], arguments, keywords, instance, frame.depth
        )
    if flow.collecting:
        # What this construction sets is what the class holds (where all agree).
        for name, value in attributes:
            contribute(info, name, value)
    return Value(instance=info.name, keys=attributes) if attributes else instance


def bound_fields(
    fields: Sequence[str], node: ast.Call, arguments: list[Value], keywords: dict[str, Value]
) -> tuple[tuple[str, Value], ...]:
    """What a dataclass's or NamedTuple's constructor call sets each field to, where known
    (by position only before any ``*args``)."""
    bound: dict[str, Value] = {}
    if not any(isinstance(argument, ast.Starred) for argument in node.args):
        bound.update(zip(fields, arguments, strict=False))
    bound.update((name, value) for name, value in keywords.items() if name in fields)
    return tuple((name, value) for name, value in bound.items() if value != NOTHING)
