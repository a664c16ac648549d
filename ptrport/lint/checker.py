"""``ptrport lint PATH...``: every Python file under the paths, analysed file by file (in
parallel on a large tree), Triton launches matched with kernels from any file, ignore comments
applied.

What a module imports from another module of the tree, and the members the tree's classes
give, are looked up in the run's :class:`~ptrport.lint.tree_index.TreeIndex`, built only where
it can change a finding. A run goes in steps, each split across the processes:

1. every file is analysed alone (:func:`_lint`): it says which names of other modules it
   looked up, whether it stores an address into storage whose dtype it cannot see, and
   whether it stores what it cannot see into storage that cannot hold an address; it gives
   the shapes of its classes and functions that hold addresses, and its classes' members;
2. the modules defining the names looked up by files of the first kind are analysed for
   their shapes (:func:`_shape`), which make the index with those holding addresses;
3. the files whose lookups the index answers (and the files without an address source of
   their own that import one) are analysed again with it (:func:`_index`); steps 2 and 3
   repeat with what that gave, at most :data:`_ROUNDS` times.
"""

from __future__ import annotations

import ast
import gc
import os
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TypeVar

from ptrport.errors import HarnessError
from ptrport.lint.dtypes import Width
from ptrport.lint.flow import ModuleFlow
from ptrport.lint.rules import RULES, Finding, fix_for, passed
from ptrport.lint.suppressions import Ignore, ignores
from ptrport.lint.tree_index import (
    PROPERTY,
    ClassShape,
    ModuleFile,
    ModuleNames,
    Shape,
    TreeIndex,
    absolute,
)
from ptrport.lint.values import Holds, Kernel, Launch, Site, Value, join, rebuilt

TRIGGERS = (
    "data_ptr",
    "triton",
    "rendezvous",
    "c_void_p",
    "addressof",
    ".multicast_ptr",
    "IpcOpen",
    "OpenMemHandle",
    ".buffer_ptrs",
    "array_interface__",
    "ctypes.data",
    ".signal_pad_ptrs",
    "ipc_open",
    "open_ipc",
    "open_mem_handle",
)
"""A file holding none of these has no address source and no Triton kernel (whose decorator is
``triton.jit`` through an import that names triton): it is not parsed. Symmetric memory's
addresses are attributes of its handles (a parameter named ``buffer_ptrs`` is none). The most
frequent come first: a file holding one is found with fewer searches."""
_BESIDE = {"c_void_p": "cast"}
"""A trigger that gives an address only beside this word: ``ctypes.cast(x, c_void_p).value``
(a ``c_void_p`` parameter or argument type alone gives none)."""
STORAGE_WORDS = ("dtype", "Tensor(", "arange", "dataclass", "NamedTuple", *TRIGGERS)
"""A class or function of another module whose text holds none of these makes no storage of a
known dtype, gives no address and binds no fields: it is not indexed."""
_TOP_LEVEL = re.compile(r"^(?:@|class\s|def\s|async\s+def\s)", re.MULTILINE)
SKIPPED_DIRECTORIES = frozenset(
    {"__pycache__", "node_modules", "site-packages", "build", "dist", ".git", ".tox", ".nox"}
)
_T = TypeVar("_T")
_I = TypeVar("_I")
Span = tuple[int, int, int, int]
"""Line, column, end line, end column: 1-based, in characters."""
_PARALLEL_FROM = 200
"""Files in a run from which it is split across processes."""
_TOO_DEEP = "nested too deeply to follow (past Python's recursion limit)"
_COLLECT_EVERY = 50_000
"""Allocations between two runs of the cyclic garbage collector while files are linted."""
_FROM_IMPORT = re.compile(r"from[ \t]+(\.*)([\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n;]*)")
"""``from .module import a, b as c``: its dots, its module and what it imports."""
_COMMENT = re.compile(r"#[^\n]*")
_STORING_WORDS = (
    "dtype",
    "int64",
    "int32",
    "long",
    "array(",
    "struct",
    "Tensor(",
    "float(",
    "c_int",
)
"""Words without which a file stores nothing where an address could not be held (read in a
file that is not parsed: it needs parsing only where what it imports gives addresses)."""
_DEFINED = re.compile(r"def[ \t]+(\w+)")
"""A function defined (a method among them), by its name: a file that is not parsed is only
searched for them (which takes a tenth of matching methods alone)."""
_ROUNDS = 4
"""At most this many analyses again with what the last one found (a method of one module
returned by a helper of another, stored in a third, takes three)."""


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
    unread: bool = False
    """Whether it was not parsed (no address source of its own); :attr:`consulted` is then
    what it imports by name from other modules, and :attr:`unknown_stored` whether its text
    names a dtype or storage that could not hold an address."""


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
            and not os.path.exists(os.path.join(directory, name, "pyvenv.cfg"))
        )
        # One path parsed for the directory: parsing each file's whole path took longer than
        # walking the tree.
        parent = Path(directory)
        for name in sorted(files):
            if name.endswith(".py"):
                yield parent / name


def _triggered(source: str) -> bool:
    # Each word is one search of the text: most files hold none, and pay for every word.
    return any(t in source and _BESIDE.get(t, t) in source for t in TRIGGERS)


def _parse(source: str, path: str) -> ast.Module | Unparsed:
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
    result = FileResult(path, ignores=ignores(source))
    if not _triggered(source):
        # No address source of its own: read only if it imports what gives one in the tree.
        imported = _imported(source, module) if module is not None else frozenset()
        if index is None or not imported & index.shapes.keys():
            # One string: a set of every name defined in every file costs more to send back.
            result.defined = "".join(name + " " for name in _DEFINED.findall(source))
            result.consulted = imported
            result.unread = True
            result.unknown_stored = any(word in source for word in _STORING_WORDS)
            return result
    tree = _parse(source, path)
    if isinstance(tree, Unparsed):
        result.unparsed.append(tree)
        return result
    try:
        flow = ModuleFlow(tree, module, index).run()
        result.consulted = frozenset(flow.consulted)
        result.unknown_storage = flow.unknown_storage
        result.unknown_stored = flow.unknown_stored
        result.exports = flow.address_shapes()
        result.members, result.plain_members = flow.members()
        result.consulted_members = frozenset(flow.consulted_members)
        result.foreign_reads = frozenset(flow.foreign_reads)
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


def _imported(source: str, module: ModuleFile) -> frozenset[str]:
    """What ``from ... import ...`` statements of ``source`` import, by qualified name (read
    from its text: the file is not parsed)."""
    found = set()
    for dots, name, names in _FROM_IMPORT.findall(source):
        imported_from = absolute(module, len(dots), name)
        if imported_from is None:
            continue
        if "#" in names:
            names = _COMMENT.sub("", names)
        for part in names.strip("()").split(","):
            words = part.split()
            if words and words[0] != "*" and words[0].isidentifier():
                found.add(f"{imported_from}.{words[0]}")
    return frozenset(found)


def lint_file(
    path: Path, *, module: ModuleFile | None = None, index: TreeIndex | None = None
) -> FileResult:
    name = path.as_posix()
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return FileResult(name, unparsed=[Unparsed(name, 1, 1, f"cannot read: {exc}")])
    return lint_source(source, name, module=module, index=index)


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _shape(
    tasks: list[tuple[ModuleFile, tuple[str, ...]]],
) -> list[tuple[tuple[str, tuple[str, ...]], dict[str, Shape]]]:
    """What each module's names (asked for by the others) are, for those whose definition
    makes storage or holds an address (read from its text before the module is parsed)."""
    with _fewer_collections():
        return [((module.path, asked), _shapes_of(module, asked)) for module, asked in tasks]


def _shapes_of(module: ModuleFile, asked: tuple[str, ...]) -> dict[str, Shape]:
    source = _read(module.path) or ""
    names = [name for name in asked if _makes_storage(source, name)]
    tree = _parse(source, module.path) if names else None
    if not isinstance(tree, ast.Module):
        return {}
    try:
        return ModuleFlow(tree, module).shapes(names)
    except RecursionError:
        return {}


def _makes_storage(source: str, name: str) -> bool:
    """Whether the top-level class or function ``name`` of ``source`` mentions a dtype, a
    typed tensor, an address source or fields (its text, decorators included, up to the next
    top-level definition)."""
    start = re.search(rf"^(?:@.*\n)*(?:class|def|async def)\s+{name}\b", source, re.MULTILINE)
    if start is None:
        return False
    end = _TOP_LEVEL.search(source, start.end())
    text = source[start.start() : end.start() if end else len(source)]
    return any(word in text for word in STORAGE_WORDS)


def _lint(modules: list[ModuleFile], index: TreeIndex) -> list[FileResult]:
    with _fewer_collections():
        return [lint_file(Path(m.path), module=m, index=index) for m in modules]


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


def lint_paths(
    paths: Sequence[Path], *, jobs: int | None = None, files: Sequence[Path] | None = None
) -> LintRun:
    """Lint ``files`` (default: every Python file under ``paths``) with ``jobs`` processes
    (default: one per CPU for a large tree, this process for a small one). The modules are
    named from ``paths``: a directory given is the root that their imports are resolved from."""
    files = python_files(paths) if files is None else list(files)
    names = ModuleNames.of(paths, files)
    modules = [names.files[path.as_posix()] for path in files]
    workers = jobs if jobs is not None else (os.cpu_count() or 1)
    with _Workers(workers if len(files) >= _PARALLEL_FROM else 1) as pool:
        results = pool.map(_lint, modules, TreeIndex())
        index = TreeIndex()
        found = _Found()
        # What a module gives may rest on what another gives (a helper returning what a
        # method of a third module returns): each round follows one more such step.
        for _ in range(_ROUNDS):
            index, again = _index(pool, results, names, index, found)
            if not again:
                break
            relinted = pool.map(_lint, again, index, path=lambda module: module.path)
            redone = {r.path: r for r in relinted}
            results = [redone.get(result.path, result) for result in results]
    return _combine(results, len(files))


def _index(
    pool: _Workers,
    results: list[FileResult],
    names: ModuleNames,
    previous: TreeIndex,
    found: _Found,
) -> tuple[TreeIndex, list[ModuleFile]]:
    """The index of what the files looked up in other modules, where it may change their
    findings, and the files to analyse again with it (those for which it differs from the
    ``previous`` one they were analysed with; ``found`` keeps what earlier rounds read):

    - a file storing an address into storage whose dtype it cannot see: every name it looked
      up, as its module's shape (:func:`_shape`; a class without fields, where the file read
      one of its attributes or methods on what no class of its own is, :func:`_reaches`);
    - a file storing what it cannot see into storage that cannot hold an address: the names
      it looked up that hold addresses (as their own modules found), where it may reach what
      gives them (:meth:`_Found.names`);
    - a file calling a method (reading a property) on what it cannot see: the tree's members
      of that name, where all give addresses (:func:`_members`);
    - a file not parsed (no address source of its own) that may store and imports what gives
      addresses: parsed, with the index.
    """
    holding = {
        (result.path, shape.name.rpartition(".")[2]): shape
        for result in results
        for shape in result.exports
    }
    index = TreeIndex(members=_members(results))
    by_path = {result.path: result for result in results}
    uses: dict[str, set[str]] = {}
    wanted: dict[str, dict[str, set[str]]] = {}
    asking: dict[str, set[str]] = {}
    for result in results:
        used = uses.setdefault(result.path, set())
        if not (result.unknown_stored or result.unknown_storage):
            continue
        for key, provider, name in found.lookups(result, names):
            if provider == result.path:
                continue
            shape = holding.get((provider, name))
            if shape is not None and result.unknown_stored and found.may_reach(result, shape):
                index.shapes[key] = shape
                used.add(key)
            elif result.unknown_storage:
                wanted.setdefault(provider, {}).setdefault(name, set()).add(key)
                asking.setdefault(key, set()).add(result.path)
    tasks = [(names.files[path], tuple(sorted(asked))) for path, asked in sorted(wanted.items())]
    # A module's shapes rest on its text alone: those of an earlier round are kept.
    new = [task for task in tasks if (task[0].path, task[1]) not in found.shapes]
    found.shapes.update(pool.map(_shape, new, path=lambda task: task[0].path))
    for path, shapes in ((m.path, found.shapes[(m.path, asked)]) for m, asked in tasks):
        for name, shape in shapes.items():
            index.shapes[shape.name] = shape
            for key in wanted[path].get(name, ()):
                index.shapes[key] = shape
                if not shape.empty:
                    for asker in asking[key]:
                        if _reaches(by_path[asker], shape):
                            uses[asker].add(key)
    # A member changes what a file finds where it stores what it could not see, and what it
    # gives where a file that does (or, not read, may) looks up what consulted it, or looks up
    # what looks it up.
    changed = {
        member
        for member in index.members.keys() | previous.members.keys()
        if index.members.get(member) != previous.members.get(member)
    }
    looked_up = _needed(results, names, found) if changed else set()
    # Each shape compared once (a deep comparison), not once per file that uses it.
    used = set().union(*uses.values())
    differ = {key for key in used if index.shapes.get(key) != previous.shapes.get(key)}
    again = {
        result.path
        for result in results
        if not differ.isdisjoint(uses[result.path])
        or (result.unknown_stored and not changed.isdisjoint(result.consulted_members))
        or any(
            (result.path, definition) in looked_up and not changed.isdisjoint(members)
            for definition, members in result.members_by_definition.items()
        )
    }
    return index, [names.files[path] for path in sorted(again)]


def _reaches(result: FileResult, shape: Shape) -> bool:
    """Whether what ``shape`` says of a class or function of another module may change what
    the file of ``result`` finds: a function's; a class's, where it binds fields or where the
    file read one of its attributes or called one of its methods on what no class of its own
    is (:attr:`FileResult.foreign_reads`)."""
    if not isinstance(shape, ClassShape) or shape.fields is not None:
        return True
    if result.foreign_reads is None:
        return True
    return not result.foreign_reads.isdisjoint(shape.attributes.keys() | shape.returns.keys())


def _needed(results: list[FileResult], names: ModuleNames, found: _Found) -> set[tuple[str, str]]:
    """The (file, name) pairs looked up, directly or through other modules of the tree, by the
    files that store what they could not see (or, not read, may store anything and import from
    a module that may give addresses)."""
    by_path = {result.path: result for result in results}
    giving = {r.path for r in results if r.consulted_members or r.exports}
    pending = [
        r.path
        for r in results
        if r.unknown_stored
        and (not r.unread or any(p in giving for _, p, _ in found.lookups(r, names)))
    ]
    seen = set(pending)
    needed: set[tuple[str, str]] = set()
    while pending:
        result = by_path.get(pending.pop())
        for _, provider, name in found.lookups(result, names) if result is not None else ():
            needed.add((provider, name))
            if provider not in seen:
                seen.add(provider)
                pending.append(provider)
    return needed


def _members(results: list[FileResult]) -> dict[str, Value]:
    """The methods and properties that give addresses in every module defining one of their
    name (each module's own, joined)."""
    plain = frozenset().union(*(result.plain_members for result in results))
    # Each name followed by a space, so that " name " finds a name defined.
    defined = " " + "".join(result.defined for result in results)
    giving: dict[str, Value] = {}
    modules: dict[str, int] = {}
    for result in results:
        for key, value in result.members.items():
            if key not in plain and f" {key.removeprefix(PROPERTY)} " not in defined:
                giving[key] = join(giving.get(key), value)
                modules[key] = modules.get(key, 0) + 1
    # Defined in several modules: a message names the member, and one of its sources.
    return {
        key: value if modules[key] == 1 else _sourced(value, _member_source(key, modules[key]))
        for key, value in giving.items()
    }


def _member_source(key: str, modules: int) -> str:
    name = key.removeprefix(PROPERTY)
    shown = f"`.{name}`" if name != key else f"`.{key}()`"
    return f"{shown}, which {modules} modules of the tree define (one: {{}})"


def _sourced(value: Value, source: str) -> Value:
    """``value`` with each origin it names put in ``source``."""
    return replace(
        rebuilt(value, lambda inner: _sourced(inner, source)),
        origin=source.format(_AT.sub(r" at \1", value.origin)) if value.origin else "",
    )


_AT = re.compile(r" \((\S+:\d+)\)$")
"""Where an origin came from, as its message ends: "`t.data_ptr()` (pkg/a.py:12)"."""
Lookup = tuple[str, str, str]
"""A name looked up in a module of the tree: as imported, the file of its module, its name."""
_ELSEWHERE = ("", "", "")
"""What :meth:`_Found.lookups` keeps of a name of a module not of the tree."""


@dataclass
class _Found:
    """What the rounds of a run have read of the tree's files: what rests on a file's text
    (which does not change), and what its analysis looked up (until it is analysed again)."""

    shapes: dict[tuple[str, tuple[str, ...]], dict[str, Shape]] = field(default_factory=dict)
    """Each module's shapes of the names asked for."""
    texts: dict[str, str] = field(default_factory=dict)
    """The text of each file read here."""
    mentions: dict[tuple[str, str], bool] = field(default_factory=dict)
    """Whether a file's text has a name, as a word."""
    looked_up: dict[str, tuple[FileResult, list[Lookup]]] = field(default_factory=dict)
    """What each file's result looked up."""
    keys: dict[str, Lookup] = field(default_factory=dict)
    """Each qualified name looked up, as a :data:`Lookup` (the same for every file;
    :data:`_ELSEWHERE` where its module is not of the tree)."""

    def lookups(self, result: FileResult, names: ModuleNames) -> list[Lookup]:
        """What ``result`` looked up in the modules of the tree: each qualified name with the
        file of its module and its name there (kept until the file is analysed again)."""
        kept = self.looked_up.get(result.path)
        if kept is None or kept[0] is not result:
            found = []
            for key in result.consulted:
                lookup = self.keys.get(key)
                if lookup is None:
                    module, _, name = key.rpartition(".")
                    path = names.path_of(module) if module else None
                    lookup = self.keys[key] = (key, path, name) if path else _ELSEWHERE
                if lookup is not _ELSEWHERE:
                    found.append(lookup)
            kept = self.looked_up[result.path] = (result, found)
        return kept[1]

    def may_reach(self, result: FileResult, shape: Shape) -> bool:
        """Whether the file of ``result`` may reach what ``shape`` gives addresses through: a
        function it names; a class's attribute or method it read or called on what no class of
        its own is (:attr:`FileResult.foreign_reads`; in a file not parsed: one it names)."""
        giving = shape.giving_addresses()
        if isinstance(shape, ClassShape) and result.foreign_reads is not None:
            return not giving.isdisjoint(result.foreign_reads)
        return any(self._mentions(result.path, name) for name in giving)

    def _mentions(self, path: str, name: str) -> bool:
        if (path, name) not in self.mentions:
            if path not in self.texts:
                self.texts[path] = _read(path) or ""
            text = self.texts[path]
            named = name in text and re.search(rf"\b{name}\b", text) is not None
            self.mentions[(path, name)] = named
        return self.mentions[(path, name)]


class _Workers:
    """Work split across ``count`` processes (kept for the whole run), or done here for one."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.pool = ProcessPoolExecutor(max_workers=count) if count > 1 else None

    def __enter__(self) -> _Workers:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.pool is not None:
            self.pool.shutdown()

    def map(
        self,
        work: Callable[..., list[_T]],
        items: list[_I],
        *shared: object,
        path: Callable[[_I], str] | None = None,
    ) -> list[_T]:
        """``work(chunk, *shared)`` over ``items`` in ``count`` chunks, the results in one list
        (in the order of ``items`` unless ``path`` names each item's file: then the chunks
        take the largest files first, each to the chunk with the fewest bytes so far)."""
        if self.pool is None or not items:
            return work(items, *shared)
        if path is None:
            chunks = [items[start :: self.count] for start in range(self.count)]
        else:
            chunks = _balanced(items, path, self.count)
        parts = self.pool.map(work, chunks, *([value] * len(chunks) for value in shared))
        return [result for part in parts for result in part]


def _balanced(items: list[_I], path: Callable[[_I], str], count: int) -> list[list[_I]]:
    """``items`` in ``count`` chunks of about as many bytes of their files: a few files
    analysed again (a round, of a large file or two) would otherwise keep one process busy
    while the others wait."""
    sizes = {id(item): _size(path(item)) for item in items}
    chunks: list[list[_I]] = [[] for _ in range(count)]
    loads = [0] * count
    for item in sorted(items, key=lambda item: -sizes[id(item)]):
        lightest = loads.index(min(loads))
        chunks[lightest].append(item)
        loads[lightest] += sizes[id(item)]
    return [chunk for chunk in chunks if chunk]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


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
