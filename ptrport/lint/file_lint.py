"""One file linted alone (:func:`lint_file`): its findings before ignore comments, its Triton
kernels and launches, what was not followed, and what the run's index rounds read of it (the
names of other modules it looked up, the shapes it exports, its classes' members). A file
without an address source of its own is only searched as text, unless the index says that what
it imports gives one."""

from __future__ import annotations

import ast
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

from ptrport.lint.flow import ModuleFlow
from ptrport.lint.native import Schema, parsed_without_source, schemas_in
from ptrport.lint.rules import Finding
from ptrport.lint.sources import defined_functions, holds_trigger, imported_names, names_storage
from ptrport.lint.suppressions import Ignore, ignores
from ptrport.lint.tree_index import ModuleFile, Passed, Shape, TreeIndex
from ptrport.lint.values import Kernel, Launch, Site, Value
from ptrport.lint.workers import fewer_collections

Span = tuple[int, int, int, int]
"""Line, column, end line, end column: 1-based, in characters."""
_TOO_DEEP = "nested too deeply to follow (past Python's recursion limit)"


@dataclass(frozen=True)
class Unparsed:
    path: str
    line: int
    column: int
    reason: str


@dataclass
class FileResult:
    path: str
    findings: list[tuple[Finding, int]] = field(default_factory=list)
    """Each with the line its statement starts on, where an ignore comment also counts."""
    kernels: list[Kernel] = field(default_factory=list)
    launches: list[tuple[Launch, Span, int]] = field(default_factory=list)
    """Each with where its argument is and the line its statement starts on."""
    ignores: dict[int, Ignore] = field(default_factory=dict)
    unparsed: list[Unparsed] = field(default_factory=list)
    """The file, where it could not be read or parsed; else the statements not followed."""
    consulted: frozenset[str] = frozenset()
    """The names imported from other modules that it looked up."""
    unknown_storage: bool = False
    """Whether it stores an address into storage whose dtype it cannot see (which what it
    looked up may decide)."""
    unknown_stored: bool = False
    """Whether it stores what it cannot see into storage that cannot hold addresses."""
    exports: list[Shape] = field(default_factory=list)
    """The shapes of its classes and functions that hold addresses."""
    members: dict[str, Value] = field(default_factory=dict)
    """Its classes' methods and properties (``@name``) that give addresses, and what."""
    plain_members: frozenset[str] = frozenset()
    """Its classes' methods and properties that do not."""
    defined: str = ""
    """Where it was not parsed: the functions (methods among them) it defines, by name, each
    followed by a space (none of them gives an address, as a method or as a property)."""
    consulted_members: frozenset[str] = frozenset()
    """The methods it called and the properties it read on what it could not follow."""
    foreign_reads: frozenset[str] | None = None
    """The attributes it read and the methods it called on what no class of its own is (what
    it could not follow, an instance of a class of another module); ``None`` where it was not
    parsed."""
    members_by_definition: dict[str, frozenset[str]] = field(default_factory=dict)
    """Of those, the ones each top-level function and class consulted."""
    schemas: dict[str, Schema] = field(default_factory=dict)
    """The ``torch.ops`` operators whose schemas it defines (read from its text)."""
    native_ops: frozenset[str] = frozenset()
    """The ``torch.ops`` operators it passed an address to."""
    passes: dict[str, tuple[Passed, ...]] = field(default_factory=dict)
    """What it passes, holding addresses, to what it does not define
    (:attr:`TreeIndex.arguments`)."""
    methods: frozenset[str] = frozenset()
    """The methods its classes define (where it was parsed; else :attr:`defined` has them)."""
    unread: bool = False
    """Whether it was not parsed (no address source of its own); :attr:`consulted` is then
    what it imports by name from other modules, and :attr:`unknown_stored` whether its text
    names a dtype or storage that could not hold an address."""


def parse_module(source: str, path: str) -> ast.Module | Unparsed:
    """``source`` parsed, or where and why it could not be."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            return ast.parse(source, filename=path)
    except SyntaxError as exc:
        return Unparsed(path, exc.lineno or 1, exc.offset or 1, exc.msg)
    except ValueError as exc:
        return Unparsed(path, 1, 1, str(exc))
    except (RecursionError, MemoryError):
        return Unparsed(path, 1, 1, _TOO_DEEP)


def lint_source(
    source: str,
    path: str,
    *,
    module: ModuleFile | None = None,
    index: TreeIndex | None = None,
) -> FileResult:
    """One file's findings (before ignore comments), kernels and launches; ``module`` names it
    in the tree whose ``index`` holds what it imports from the other modules."""
    result = FileResult(path, ignores=ignores(source), schemas=schemas_in(source))
    if not holds_trigger(source) and not parsed_without_source(source):
        # No address source of its own: read only if it imports what gives one in the tree.
        imported = imported_names(source, module) if module is not None else frozenset()
        if index is None or not (
            imported & index.shapes.keys() or _receives(source, module, index)
        ):
            result.defined = defined_functions(source)
            result.consulted = imported
            result.unread = True
            result.unknown_stored = names_storage(source)
            return result
    tree = parse_module(source, path)
    if isinstance(tree, Unparsed):
        result.unparsed.append(tree)
        return result
    if result.schemas:
        # Its own operators' schemas, where the tree's (the same, or another's) are not known.
        index = index or TreeIndex()
        index = replace(index, schemas={**result.schemas, **index.schemas})
    try:
        flow = ModuleFlow(tree, module, index).run()
        result.consulted = frozenset(flow.consulted)
        result.unknown_storage = flow.unknown_storage
        result.unknown_stored = flow.unknown_stored
        result.exports = flow.address_shapes()
        result.members, result.plain_members = flow.members()
        result.consulted_members = frozenset(flow.consulted_members)
        result.foreign_reads = frozenset(flow.foreign_reads)
        result.native_ops = frozenset(flow.native_ops)
        result.passes = flow.exported_passes()
        result.methods = frozenset(m for info in flow.classes.values() for m in info.methods)
        result.members_by_definition = {
            name: frozenset(keys) for name, keys in flow.members_by_definition.items()
        }
    except RecursionError:
        # Outside any one statement (a class body's assignment): the file is not followed.
        result.unparsed.append(Unparsed(path, 1, 1, _TOO_DEEP))
        return result
    lines = source.splitlines()
    for statement in flow.passed_over:
        line, column, _, _ = _span(statement, lines)
        result.unparsed.append(Unparsed(path, line, column, _TOO_DEEP))
    for site in flow.sites.values():
        result.findings.append(_finding(site, path, lines))
    result.kernels = flow.kernels
    for located in flow.launches.values():
        span = _span(located.node, lines)
        result.launches.append((located.launch, span, _start(located.statement)))
    return result


def _receives(source: str, module: ModuleFile | None, index: TreeIndex) -> bool:
    """Whether the tree passes addresses to a function or method the file defines."""
    if not index.arguments or module is None:
        return False
    prefix = module.name + "."
    defined = set(defined_functions(source).split())
    return any(
        key[1:] in defined
        if key.startswith(".")
        else key.startswith(prefix) and key[len(prefix) :] in defined
        for key in index.arguments
    )


def lint_file(
    path: Path, *, module: ModuleFile | None = None, index: TreeIndex | None = None
) -> FileResult:
    name = path.as_posix()
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FileResult(name, unparsed=[Unparsed(name, 1, 1, f"cannot read: {exc}")])
    return lint_source(source, name, module=module, index=index)


def lint_modules(modules: list[ModuleFile], index: TreeIndex) -> list[FileResult]:
    """Each of ``modules`` linted with ``index`` (the work of a run's processes)."""
    with fewer_collections():
        return [lint_file(Path(m.path), module=m, index=index) for m in modules]


def _column(lines: list[str], line: int, offset: int) -> int:
    """ast's byte offset on ``line`` as a 1-based character column."""
    if 0 < line <= len(lines):
        text = lines[line - 1]
        if not text.isascii():
            return len(text.encode("utf-8")[:offset].decode("utf-8", errors="ignore")) + 1
    return offset + 1


def _span(node: ast.AST, lines: list[str]) -> Span:
    line = getattr(node, "lineno", 1)
    end_line = getattr(node, "end_lineno", None) or line
    column = _column(lines, line, getattr(node, "col_offset", 0))
    end_column = _column(lines, end_line, getattr(node, "end_col_offset", None) or 0)
    if end_line == line and end_column <= column:
        end_column = column + 1
    return line, column, end_line, end_column


def _start(statement: ast.stmt | None) -> int:
    return statement.lineno if statement is not None else 0


def _finding(site: Site, path: str, lines: list[str]) -> tuple[Finding, int]:
    line, column, end_line, end_column = _span(site.node, lines)
    finding = Finding(path, line, column, end_line, end_column, site.rule, site.message, site.fix)
    return finding, _start(site.statement)
