"""``ptrport lint PATH...``: every Python file under the paths, analysed file by file (in
parallel on a large tree, :mod:`~ptrport.lint.workers`), then again where what other modules of
the tree give may change what a file finds (:mod:`~ptrport.lint.index_rounds`); Triton launches
matched with kernels from any file, ignore comments applied.

A run goes in steps, the first two split across the processes:

1. every file is analysed alone (:func:`~ptrport.lint.file_lint.lint_file`): it says which
   names of other modules it looked up, whether it stores an address into storage whose dtype
   it cannot see, and whether it stores what it cannot see into storage that cannot hold an
   address; it gives the shapes of its classes and functions that hold addresses, and its
   classes' members (a file without an address source of its own is only searched as text,
   :mod:`~ptrport.lint.sources`);
2. the index rounds (:func:`~ptrport.lint.index_rounds.analyse_again`) read what those files
   looked up and analyse again the files whose findings it may change;
3. the findings of every file are put together here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ptrport.lint.dtypes import Width
from ptrport.lint.file_lint import FileResult, Span, Unparsed, lint_modules
from ptrport.lint.index_rounds import analyse_again
from ptrport.lint.rules import RULES, Finding, fix_for, passed
from ptrport.lint.sources import python_files
from ptrport.lint.suppressions import Ignore
from ptrport.lint.tree_index import ModuleNames, TreeIndex
from ptrport.lint.values import Holds, Kernel, Launch
from ptrport.lint.workers import WorkerPool, process_count


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


def lint_paths(
    paths: Sequence[Path], *, jobs: int | None = None, files: Sequence[Path] | None = None
) -> LintRun:
    """Lint ``files`` (default: every Python file under ``paths``) with ``jobs`` processes
    (default: one per CPU for a large tree, this process for a small one). The modules are
    named from ``paths``: a directory given is the root that their imports are resolved from."""
    files = python_files(paths) if files is None else list(files)
    names = ModuleNames.of(paths, files)
    modules = [names.files[path.as_posix()] for path in files]
    with WorkerPool(process_count(len(files), jobs)) as pool:
        results = pool.map(lint_modules, modules, TreeIndex())
        results = analyse_again(pool, results, names)
    return _combine(results, len(files))


def _combine(results: Iterable[FileResult], count: int) -> LintRun:
    """The run of ``count`` files from each file's result: its launches matched with the
    kernels of every file, its ignore comments applied."""
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
