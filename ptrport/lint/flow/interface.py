"""What the handlers of :mod:`ptrport.lint.flow` see of the analysis they serve: the
:class:`Flow` protocol, which :class:`~ptrport.lint.flow.module_flow.ModuleFlow` provides, and
the shapes of the handlers kept in its dispatch tables.

A handler is a plain function taking the flow first. The tables hold those functions, not
methods bound to one analysis: bound methods would tie each analysis into a reference cycle,
its tree kept alive until the cyclic collector runs. This module imports no handler and no
analysis, so that each can name the other's interface without an import cycle."""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from ptrport.lint import reinterpret
from ptrport.lint.dtypes import Dtype
from ptrport.lint.tree_index import ModuleFile, Passed, TreeIndex
from ptrport.lint.values import ClassInfo, Frame, Function, Kernel, LaunchSite, Site, Value


class Arguments(NamedTuple):
    """A call's arguments: by position (a starred one as what its elements are), by keyword."""

    positional: list[Value]
    keywords: dict[str, Value]


class Flow(Protocol):
    """One module's analysis as its handlers use it: what the module defines and imports, what
    has been found, the caches shared by the handlers, and the core's operations (evaluate an
    expression, run a block or a function, bind, store, report)."""

    # What the module is and defines.
    tree: ast.Module
    module: ModuleFile
    index: TreeIndex
    imports: dict[str, str]
    functions: dict[str, Function]
    all_functions: list[Function]
    """Every function of the module, nested ones and methods included."""
    classes: dict[str, ClassInfo]
    module_env: dict[str, Value]
    constants: dict[str, int]

    # What has been found.
    kernels: list[Kernel]
    launches: dict[tuple[int, int, str], LaunchSite]
    sites: dict[tuple[int, int, str], Site]
    consulted: set[str]
    foreign_reads: set[str]
    native_ops: set[str]
    unknown_stored: bool
    """Whether what is not known here is stored where an address could not be held (the file
    is analysed again once the tree says more)."""
    passes: dict[str, tuple[Passed, ...]]
    """What this module passes, holding addresses, to what it does not define: by the
    function's qualified name, or by a method's name after a dot (:attr:`TreeIndex.arguments`)."""
    """The ``torch.ops`` operators passed an address (whose schemas the tree may define)."""

    # While the classes' parts are run for what the classes hold.
    collecting: bool
    reads: list[tuple[str, str, Value | None]]
    """The attributes read (owner, name, value seen), while :attr:`collecting`."""

    # Caches, each filled once per module.
    lineages: dict[str, list[ClassInfo]]
    annotated_classes: dict[ast.expr, str | None]
    sign_constants: dict[ast.AST, bool]
    verdicts: dict[tuple[ast.expr, frozenset[ast.expr], bool], reinterpret.Verdict | None]

    def value(self, node: ast.expr, frame: Frame) -> Value: ...

    def item(self, node: ast.expr, frame: Frame) -> Value: ...

    def block(self, statements: Sequence[ast.stmt], frame: Frame) -> None: ...

    def bind(self, target: ast.expr, value: Value, frame: Frame, statement: ast.stmt) -> None: ...

    def set_attribute(self, frame: Frame, name: str, value: Value) -> None: ...

    def store(
        self, node: ast.AST, storage: Value, value: Value, frame: Frame, where: ast.expr
    ) -> None: ...

    def unknown_into(self, dtype: Dtype | None, value: Value) -> None: ...

    def report(
        self,
        rule: str,
        node: ast.AST,
        frame: Frame,
        message: str,
        *,
        dtype: Dtype | None = None,
        fix: str | None = None,
    ) -> None: ...

    def qualify(self, node: ast.expr) -> str | None: ...

    def dtype(self, node: ast.expr, frame: Frame | None = None) -> Dtype | None: ...

    def library_dtype(self, node: ast.expr) -> Dtype | None: ...

    def source(self, node: ast.expr) -> str: ...

    def text(self, node: ast.AST, limit: int = 48) -> str: ...

    def consult_member(self, key: str, frame: Frame) -> None: ...

    def record_pass(self, key: str, given: Arguments) -> None: ...

    def arguments(self, node: ast.Call, frame: Frame) -> Arguments: ...

    def dtype_argument(
        self, node: ast.Call, frame: Frame, position: int | None
    ) -> Dtype | None: ...

    def has_dtype(self, node: ast.Call, position: int | None) -> bool: ...

    def unknown_call(self, node: ast.Call, frame: Frame) -> Value: ...

    def made_with_dtype(self, node: ast.Call, frame: Frame) -> Value: ...

    def run_function(
        self,
        function: Function,
        owner: ClassInfo | None,
        arguments: list[Value],
        keywords: dict[str, Value],
        instance: Value | None,
        depth: int,
        *,
        generic: bool = False,
    ) -> tuple[Value, tuple[tuple[str, Value], ...]]: ...


Executor = Callable[[Flow, Any, Frame], None]
"""A handler running one kind of statement."""
Evaluator = Callable[[Flow, Any, Frame], Value]
"""A handler evaluating one kind of expression."""
LibraryCall = Callable[[Flow, str, ast.Call, Frame, Arguments], Value]
"""A handler following a call of a library: its qualified name, the call, its arguments."""
BuiltinCall = Callable[[Flow, ast.Call, Frame, list[Value]], Value]
"""A handler following a call of a builtin: the call, its arguments by position."""
MethodCall = Callable[[Flow, ast.Attribute, ast.Call, Frame, Value], Value]
"""A handler following a call of a method: ``x.method``, the call, what ``x`` is."""
