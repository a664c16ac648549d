"""What a module defines, read before anything runs: its imports, constants, functions,
classes (with a dataclass's or NamedTuple's constructor fields, and the module's functions that
make their instances) and Triton kernels."""

from __future__ import annotations

import ast

from ptrport.lint import reinterpret
from ptrport.lint.flow import launches, syntax
from ptrport.lint.flow.interface import Flow
from ptrport.lint.tree_index import absolute
from ptrport.lint.values import ClassInfo, Function


def collect(flow: Flow) -> None:
    """Reads what the module defines into ``flow``: its module constants, imports (at any
    depth), functions, classes, Triton kernels, and the factories of its classes."""
    for statement in flow.tree.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            constant = reinterpret.evaluate_constant(statement.value, flow.constants)
            if constant is not None:
                flow.constants[statement.targets[0].id] = constant
    for node in syntax.statements_in(flow.tree.body):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            flow.all_functions.append(node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    flow.imports[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    flow.imports[top] = top
        elif isinstance(node, ast.ImportFrom):
            module = absolute(flow.module, node.level, node.module or "")
            for alias in node.names if module else ():
                flow.imports[alias.asname or alias.name] = f"{module}.{alias.name}"
    for statement in flow.tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
            flow.functions[statement.name] = statement
            launches.add_kernel(flow, statement)
        elif isinstance(statement, ast.ClassDef):
            flow.classes[statement.name] = _class_info(statement)
    for info in flow.classes.values():
        info.fields = _fields(flow, info)
    for function in flow.functions.values() if flow.classes else ():
        made = _made_class(flow, function)
        if made is not None:
            made.factories.append(function)


def _class_info(statement: ast.ClassDef) -> ClassInfo:
    methods = {
        item.name: item
        for item in statement.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    bases = [base.id for base in statement.bases if isinstance(base, ast.Name)]
    info = ClassInfo(statement.name, statement, bases, methods)
    for item in statement.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            info.annotations[item.target.id] = item.annotation
    return info


def _fields(flow: Flow, info: ClassInfo) -> list[str] | None:
    """What the constructor of a dataclass (without an ``__init__`` of its own) or of a
    NamedTuple takes, in order: its annotated attributes, after its bases' (for a
    dataclass)."""
    named_tuple = any(_is(flow, base, "typing.NamedTuple") for base in info.node.bases)
    dataclass = any(syntax.is_dataclass(d, flow.qualify) for d in info.node.decorator_list)
    if not (named_tuple or dataclass) or "__init__" in info.methods:
        return None
    fields: list[str] = []
    if dataclass:
        for base in info.bases:
            inherited = flow.classes[base].fields if base in flow.classes else None
            fields.extend(name for name in inherited or () if name not in fields)
    for item in info.node.body:
        if (
            isinstance(item, ast.AnnAssign)
            and isinstance(item.target, ast.Name)
            and item.target.id not in fields
            and syntax.in_constructor(item)
        ):
            fields.append(item.target.id)
    return fields


def _made_class(flow: Flow, function: Function) -> ClassInfo | None:
    """The class of the module a function returns a new instance of (``return Cls(...)``
    in its body), if any."""
    for statement in function.body:
        if (
            isinstance(statement, ast.Return)
            and isinstance(statement.value, ast.Call)
            and isinstance(statement.value.func, ast.Name)
            and statement.value.func.id in flow.classes
        ):
            return flow.classes[statement.value.func.id]
    return None


def _is(flow: Flow, node: ast.expr, name: str) -> bool:
    """Whether ``node`` names ``name`` (``typing.NamedTuple``) through this module's
    imports."""
    return flow.qualify(node) == name
