"""``ptrport lint PATH...``: every Python file under the paths, analysed file by file (in
parallel on a large tree), Triton launches matched with kernels from any file, ignore comments
applied."""

from __future__ import annotations

import ast
import gc
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.lint.dtypes import Width
from ptrport.lint.flow import ModuleFlow
from ptrport.lint.rules import RULES, Finding, fix_for, passed
from ptrport.lint.suppressions import Ignore, ignores
from ptrport.lint.values import Holds, Kernel, Launch, Site

TRIGGERS = ("data_ptr", "addressof", "__cuda_array_interface__", "triton")
"""A file holding none of these has no address source and no Triton kernel (whose decorator is
``triton.jit`` through an import that names triton): it is not parsed."""
SKIPPED_DIRECTORIES = frozenset(
    {"__pycache__", "node_modules", "site-packages", "build", "dist", ".git", ".tox", ".nox"}
)
Span = tuple[int, int, int, int]
"""Line, column, end line, end column: 1-based, in characters."""
_PARALLEL_FROM = 200
"""Files in a run from which it is split across processes."""
_TOO_DEEP = "nested too deeply to follow (past Python's recursion limit)"
_COLLECT_EVERY = 50_000
"""Allocations between two runs of the cyclic garbage collector while files are linted."""


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


@dataclass
class LintRun:
    """What a run found: findings (accepted ones with their reason), files read, what was not
    checked (a file that could not be read or parsed, a statement nested too deeply to follow),
    and ignore comments naming rules that do not exist."""

    findings: list[Finding]
    files: int
    unparsed: list[Unparsed]
    unknown_rules: list[tuple[str, int, str]]

    @property
    def reported(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.suppressed is None]

    @property
    def accepted(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.suppressed is not None]


def python_files(paths: Sequence[Path]) -> list[Path]:
    """The files to lint: each file named, and the ``*.py`` files under each directory (not in
    hidden directories, caches, build outputs or virtual environments)."""
    found: list[Path] = []
    for path in paths:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            found.extend(_walk(path))
        else:
            raise HarnessError(f"{path}: no such file or directory")
    return found


def _walk(root: Path) -> Iterator[Path]:
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.startswith(".")
            and name not in SKIPPED_DIRECTORIES
            and not (Path(directory, name) / "pyvenv.cfg").exists()
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(directory, name)


def lint_source(source: str, path: str) -> FileResult:
    """One file's findings (before ignore comments), kernels and launches."""
    result = FileResult(path, ignores=ignores(source))
    if not any(trigger in source for trigger in TRIGGERS):
        return result
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(source, filename=path)
    except SyntaxError as exc:
        result.unparsed.append(Unparsed(path, exc.lineno or 1, exc.offset or 1, exc.msg))
        return result
    except ValueError as exc:
        result.unparsed.append(Unparsed(path, 1, 1, str(exc)))
        return result
    except (RecursionError, MemoryError):
        result.unparsed.append(Unparsed(path, 1, 1, _TOO_DEEP))
        return result
    try:
        flow = ModuleFlow(tree).run()
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


def lint_file(path: Path) -> FileResult:
    name = path.as_posix()
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FileResult(name, unparsed=[Unparsed(name, 1, 1, f"cannot read: {exc}")])
    return lint_source(source, name)


def _files(paths: list[Path]) -> list[FileResult]:
    with _fewer_collections():
        return [lint_file(path) for path in paths]


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """A parsed module is thousands of objects that live until its file is done and hold no
    cycles: the cyclic collector, run every 700 allocations, spends a sixth of the time looking
    at them. Every 50,000 it costs little (benchmarks/lint_tree.py)."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], _COLLECT_EVERY), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


def lint_paths(paths: Sequence[Path], *, jobs: int | None = None) -> LintRun:
    """Lint every Python file under ``paths`` with ``jobs`` processes (default: one per CPU for
    a large tree, this process for a small one)."""
    files = python_files(paths)
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    if workers > 1 and len(files) >= _PARALLEL_FROM:
        chunks = [files[start::workers] for start in range(workers)]
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = [result for part in pool.map(_files, chunks) for result in part]
    else:
        results = _files(files)
    return _combine(results, len(files))


def _combine(results: Iterable[FileResult], count: int) -> LintRun:
    results = sorted(results, key=lambda r: r.path)
    kernels: dict[str, list[tuple[str, Kernel]]] = {}
    for result in results:
        for kernel in result.kernels:
            kernels.setdefault(kernel.name, []).append((result.path, kernel))
    findings: list[Finding] = []
    unknown: list[tuple[str, int, str]] = []
    for result in results:
        found = list(result.findings)
        for launch, span, statement in result.launches:
            finding = _launch_finding(launch, kernels, result.path, span)
            if finding is not None:
                found.append((finding, statement))
        for finding, statement in found:
            findings.append(_apply_ignores(finding, statement, result.ignores))
        for ignore in result.ignores.values():
            unknown.extend((result.path, ignore.line, rule) for rule in ignore.rules - set(RULES))
    unparsed = [unparsed for result in results for unparsed in result.unparsed]
    return LintRun(sorted(findings, key=Finding.sort_key), count, unparsed, unknown)


def _apply_ignores(finding: Finding, statement: int, found: dict[int, Ignore]) -> Finding:
    for line in (finding.line, statement):
        ignore = found.get(line)
        if ignore is not None and finding.rule in ignore.rules:
            return replace(finding, suppressed=ignore.reason or "accepted")
    return finding


def _launch_finding(
    launch: Launch,
    kernels: dict[str, list[tuple[str, Kernel]]],
    path: str,
    span: Span,
) -> Finding | None:
    """An address passed to a kernel parameter annotated int64 or narrower: the kernel is the
    one of that name in the same file, else the only one of that name anywhere."""
    candidates = kernels.get(launch.kernel, [])
    local = [item for item in candidates if item[0] == path]
    chosen = local or candidates
    if len(chosen) != 1:
        return None
    kernel_path, kernel = chosen[0]
    names = [name for name, _ in kernel.parameters]
    if launch.keyword is not None:
        if launch.keyword not in names:
            return None
        index = names.index(launch.keyword)
    else:
        assert launch.position is not None
        index = launch.position
    if index >= len(kernel.parameters):
        return None
    parameter, dtype = kernel.parameters[index]
    if dtype is None or not dtype.unsafe:
        return None
    if dtype.width is Width.SIGNED64 and launch.holds is Holds.BITS:
        return None
    message = passed(launch, parameter, kernel, kernel_path, dtype)
    return Finding(
        path, *span, "triton-signed-param", message, fix_for("triton-signed-param", dtype)
    )


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
