"""Running statements: one handler per kind of statement, found by the node's type in
:data:`EXECUTORS`. Both branches of an ``if`` (every case of a ``match``, every handler of a
``try``) are run and joined; a loop body twice."""

from __future__ import annotations

import ast

from ptrport.lint.flow import arithmetic
from ptrport.lint.flow.classes import instance_annotated
from ptrport.lint.flow.interface import Executor, Flow
from ptrport.lint.flow.native_calls import named
from ptrport.lint.native import names_address
from ptrport.lint.values import NOTHING, Frame, Value, element_of, join_names


def _assign(flow: Flow, statement: ast.Assign, frame: Frame) -> None:
    value = flow.value(statement.value, frame)
    unfollowed = value is NOTHING and isinstance(statement.value, ast.Call)
    for target in statement.targets:
        if unfollowed and (not isinstance(target, ast.Name) or names_address(target.id)):
            # What a call not followed gives: an address where the name it is bound to says so
            # (until the tree says what the call gives: the file is analysed again then).
            value = named(target, statement.lineno)
            flow.unknown_stored = flow.unknown_stored or value is not NOTHING
        flow.bind(target, value, frame, statement)


def _annotated_assign(flow: Flow, statement: ast.AnnAssign, frame: Frame) -> None:
    if statement.value is not None:
        value = flow.value(statement.value, frame)
        if value == NOTHING:
            value = instance_annotated(flow, statement.annotation) or NOTHING
        flow.bind(statement.target, value, frame, statement)


def _augmented_assign(flow: Flow, statement: ast.AugAssign, frame: Frame) -> None:
    combined = ast.BinOp(left=statement.target, op=statement.op, right=statement.value)
    ast.copy_location(combined, statement)
    flow.bind(statement.target, flow.value(combined, frame), frame, statement)


def _expression_statement(flow: Flow, statement: ast.Expr, frame: Frame) -> None:
    flow.value(statement.value, frame)


def _return(flow: Flow, statement: ast.Return, frame: Frame) -> None:
    if statement.value is not None:
        frame.returns.append(flow.value(statement.value, frame))


def _if(flow: Flow, statement: ast.If, frame: Frame) -> None:
    arithmetic.condition(flow, statement.test, frame)
    _branches(flow, [statement.body, statement.orelse], frame)


def _for(flow: Flow, statement: ast.For | ast.AsyncFor, frame: Frame) -> None:
    element = element_of(flow.value(statement.iter, frame))
    for _ in range(2):
        flow.bind(statement.target, element, frame, statement)
        flow.block(statement.body, frame)
    flow.block(statement.orelse, frame)


def _while(flow: Flow, statement: ast.While, frame: Frame) -> None:
    for _ in range(2):
        arithmetic.condition(flow, statement.test, frame)
        flow.block(statement.body, frame)
    flow.block(statement.orelse, frame)


def _with(flow: Flow, statement: ast.With | ast.AsyncWith, frame: Frame) -> None:
    for item in statement.items:
        flow.value(item.context_expr, frame)
        if item.optional_vars is not None:
            flow.bind(item.optional_vars, NOTHING, frame, statement)
    flow.block(statement.body, frame)


def _try(flow: Flow, statement: ast.Try | ast.TryStar, frame: Frame) -> None:
    flow.block(statement.body, frame)
    for handler in statement.handlers:
        flow.block(handler.body, frame)
    flow.block(statement.orelse, frame)
    flow.block(statement.finalbody, frame)


def _assert(flow: Flow, statement: ast.Assert, frame: Frame) -> None:
    arithmetic.condition(flow, statement.test, frame)


def _match(flow: Flow, statement: ast.Match, frame: Frame) -> None:
    flow.value(statement.subject, frame)
    _branches(flow, [case.body for case in statement.cases], frame)


def _branches(flow: Flow, blocks: list[list[ast.stmt]], frame: Frame) -> None:
    before = dict(frame.env)
    before_attributes = dict(frame.self_attributes)
    ends: list[tuple[dict[str, Value], dict[str, Value]]] = []
    for block in blocks:
        frame.env = dict(before)
        frame.self_attributes = dict(before_attributes)
        flow.block(block, frame)
        ends.append((frame.env, frame.self_attributes))
    frame.env = join_names([names for names, _ in ends])
    frame.self_attributes = join_names([attributes for _, attributes in ends])


EXECUTORS: dict[type[ast.stmt], Executor] = {
    ast.Assign: _assign,
    ast.AnnAssign: _annotated_assign,
    ast.AugAssign: _augmented_assign,
    ast.Expr: _expression_statement,
    ast.Return: _return,
    ast.If: _if,
    ast.For: _for,
    ast.AsyncFor: _for,
    ast.While: _while,
    ast.With: _with,
    ast.AsyncWith: _with,
    ast.Try: _try,
    ast.TryStar: _try,
    ast.Assert: _assert,
    ast.Match: _match,
}
"""The handler that runs each kind of statement; the kinds not here (imports, ``pass``,
definitions, which :func:`ptrport.lint.flow.definitions.collect` reads) change nothing
followed."""
