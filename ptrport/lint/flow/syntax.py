"""What the syntax of a module says, read without following any value: the statements nested
in others, the names a function returns, its decorators, a dataclass's constructor fields, the
storage an expression writes into. Used by every part of :mod:`ptrport.lint.flow`."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from ptrport.lint.library import VIEW_ATTRIBUTES, VIEWING_CALLS
from ptrport.lint.values import Function


def statements_in(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement, nested ones (in functions, classes, branches, loops) included; cheaper
    than :func:`ast.walk`, which visits every expression too."""
    for statement in body:
        yield statement
        for inner in inner_bodies(statement):
            yield from statements_in(inner)


_BLOCKS: dict[type[ast.stmt], tuple[str, ...]] = {
    ast.FunctionDef: ("body",),
    ast.AsyncFunctionDef: ("body",),
    ast.ClassDef: ("body",),
    ast.If: ("body", "orelse"),
    ast.For: ("body", "orelse"),
    ast.AsyncFor: ("body", "orelse"),
    ast.While: ("body", "orelse"),
    ast.With: ("body",),
    ast.AsyncWith: ("body",),
    ast.Try: ("body", "orelse", "finalbody"),
    ast.TryStar: ("body", "orelse", "finalbody"),
    ast.Match: (),
}
"""The statements that hold others, with the fields holding their blocks (besides exception
handlers and match cases)."""


def inner_bodies(statement: ast.stmt) -> list[list[ast.stmt]]:
    """The blocks nested in ``statement``: its body, else and finally blocks, and the bodies of
    its exception handlers and match cases."""
    names = _BLOCKS.get(type(statement))
    if names is None:
        return []
    found: list[list[ast.stmt]] = [getattr(statement, name) for name in names]
    if isinstance(statement, ast.Try | ast.TryStar):
        found.extend(handler.body for handler in statement.handlers)
    elif isinstance(statement, ast.Match):
        found.extend(case.body for case in statement.cases)
    return found


def storage_expression(node: ast.expr) -> ast.expr:
    """The storage itself, without the views and slices it is reached through:
    ``self.src_ptrs`` of ``self.src_ptrs.np[:n]``."""
    while True:
        if isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Attribute) and node.attr in VIEW_ATTRIBUTES
        ):
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in VIEWING_CALLS
        ):
            node = node.func.value
        else:
            return node


def returned_names(body: list[ast.stmt]) -> frozenset[str] | None:
    """The names a function's ``return`` statements name, at any depth (not in functions
    defined in it); ``None`` where it yields."""
    found: set[str] = set()
    pending = list(body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        if isinstance(statement, ast.Return) and statement.value is not None:
            found.update(n.id for n in ast.walk(statement.value) if isinstance(n, ast.Name))
        elif isinstance(statement, ast.Expr) and isinstance(
            statement.value, ast.Yield | ast.YieldFrom
        ):
            return None
        for inner in inner_bodies(statement):
            pending.extend(inner)
    return frozenset(found)


def root_name(node: ast.expr) -> str:
    """The name ``a.b[i].c`` starts from (``a``); ``""`` for none."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
        node = node.value
    return node.id if isinstance(node, ast.Name) else ""


def is_property(function: Function) -> bool:
    """Whether ``function`` is decorated ``@property`` (or ``@functools.cached_property``)."""
    return any(last_name(d) in ("property", "cached_property") for d in function.decorator_list)


def is_abstract(function: Function) -> bool:
    """Whether ``function``'s body only documents, passes or raises (it gives nothing)."""
    return all(
        isinstance(statement, ast.Pass | ast.Raise)
        or (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant))
        for statement in function.body
    )


def decorated(function: Function, decorator: str) -> bool:
    """Whether ``function`` is decorated ``@staticmethod`` or ``@classmethod`` (``decorator``)."""
    return any(isinstance(d, ast.Name) and d.id == decorator for d in function.decorator_list)


def is_dataclass(decorator: ast.expr, qualify: Callable[[ast.expr], str | None]) -> bool:
    """``@dataclass``, ``@dataclasses.dataclass(frozen=True)``, pydantic's ``dataclass``."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or ""
    return name == "dataclasses.dataclass" or name.endswith("dataclasses.dataclass")


def in_constructor(item: ast.AnnAssign) -> bool:
    """Whether a dataclass's annotated attribute is a parameter of its constructor: not a
    ``ClassVar``, not ``field(init=False)``."""
    annotation = item.annotation
    if isinstance(annotation, ast.Subscript):
        annotation = annotation.value
    if isinstance(annotation, ast.Name | ast.Attribute) and last_name(annotation) == "ClassVar":
        return False
    value = item.value
    return not (
        isinstance(value, ast.Call)
        and last_name(value.func) == "field"
        and any(
            kw.arg == "init" and isinstance(kw.value, ast.Constant) and kw.value.value is False
            for kw in value.keywords
        )
    )


def last_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def signed_keyword(node: ast.Call) -> bool:
    """Whether the call says ``signed=True`` (``int.from_bytes``, ``int.to_bytes``)."""
    return any(
        kw.arg == "signed" and isinstance(kw.value, ast.Constant) and kw.value.value is True
        for kw in node.keywords
    )
