"""Triton: the module's ``@triton.jit`` kernels, with their parameters' annotated dtypes, and
the launches ``kernel[grid](...)`` that pass plain int addresses, to be matched with the
kernels once every file's are known."""

from __future__ import annotations

import ast
from collections.abc import Callable

from ptrport.lint.flow.interface import Flow
from ptrport.lint.values import NOTHING, Frame, Function, Holds, Kernel, Launch, LaunchSite, Value


def add_kernel(flow: Flow, function: Function) -> None:
    if not any(_is_jit(d, flow.qualify) for d in function.decorator_list):
        return
    arguments = function.args.posonlyargs + function.args.args
    parameters = tuple(
        (arg.arg, flow.dtype(arg.annotation) if arg.annotation else None) for arg in arguments
    )
    flow.kernels.append(Kernel(function.name, function.lineno, parameters))


def launch(flow: Flow, func: ast.Subscript, node: ast.Call, frame: Frame) -> Value:
    """``kernel[grid](...)``: plain int addresses passed, for the kernel to be looked up
    once every file's kernels are known."""
    kernel = func.value
    flow.value(func.slice, frame)
    name = (
        kernel.id
        if isinstance(kernel, ast.Name)
        else kernel.attr
        if isinstance(kernel, ast.Attribute)
        else None
    )
    arguments: list[tuple[int | None, str | None, ast.expr]] = [
        (index, None, arg) for index, arg in enumerate(node.args)
    ]
    arguments += [(None, kw.arg, kw.value) for kw in node.keywords if kw.arg]
    for position, keyword, argument in arguments:
        value = flow.value(argument, frame)
        holds = value.holds
        if name is None or value.dtype is not None or holds not in (Holds.ADDRESS, Holds.BITS):
            continue
        if isinstance(argument, ast.Starred):
            continue
        key = (argument.lineno, argument.col_offset, name)
        launch = Launch(name, position, keyword, holds, value.origin)
        flow.launches.setdefault(key, LaunchSite(launch, argument, frame.statement))
    return NOTHING


def _is_jit(decorator: ast.expr, qualify: Callable[[ast.expr], str | None]) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = qualify(target) or ""
    return name.startswith("triton") and name.endswith(".jit")
