"""The rounds of a lint run after every file has been analysed alone (:func:`analyse_again`):
what a module imports from another module of the tree, and the members the tree's classes
give, go into the run's :class:`~ptrport.lint.tree_index.TreeIndex` only where they can change
a finding, and the files they may change are analysed again with it.

Each round, split across the run's processes:

1. the modules defining the names looked up by files storing an address where they cannot see
   the dtype are analysed for their shapes (:func:`_shape`), which make the index with those
   holding addresses that the files' own analyses found;
2. the files whose lookups the index answers (and the files without an address source of
   their own that import one), and those defining what the others pass addresses to, are
   analysed again with it (:func:`_index` says which).

Rounds repeat with what the last gave, at most :data:`_ROUNDS` times.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field, replace

from ptrport.lint.file_lint import FileResult, lint_modules, parse_module
from ptrport.lint.flow import ModuleFlow
from ptrport.lint.native import Schema
from ptrport.lint.sources import definition_stores, makes_storage, read_source
from ptrport.lint.tree_index import (
    PROPERTY,
    ClassShape,
    ModuleFile,
    ModuleNames,
    Passed,
    Shape,
    TreeIndex,
    with_passed,
)
from ptrport.lint.values import Value, join, rebuilt
from ptrport.lint.workers import WorkerPool, fewer_collections

_ROUNDS = 4
"""At most this many analyses again with what the last one found (a method of one module
returned by a helper of another, stored in a third, takes three)."""
_AT = re.compile(r" \((\S+:\d+)\)$")
"""Where an origin came from, as its message ends: "`t.data_ptr()` (pkg/a.py:12)"."""
Lookup = tuple[str, str, str]
"""A name looked up in a module of the tree: as imported, the file of its module, its name."""
_ELSEWHERE = ("", "", "")
"""What :meth:`_Found.lookups` keeps of a name of a module not of the tree."""


def analyse_again(
    pool: WorkerPool, results: list[FileResult], names: ModuleNames
) -> list[FileResult]:
    """``results`` (of the files of ``names`` analysed alone), with those that what other
    modules of the tree give may change replaced by their analysis with the index, round by
    round."""
    index = TreeIndex()
    found = _Found()
    # What a module gives may rest on what another gives (a helper returning what a
    # method of a third module returns): each round follows one more such step.
    for _ in range(_ROUNDS):
        index, again = _index(pool, results, names, index, found)
        if not again:
            break
        relinted = pool.map(lint_modules, again, index, path=lambda module: module.path)
        redone = {r.path: r for r in relinted}
        results = [redone.get(result.path, result) for result in results]
    return results


def _shape(
    tasks: list[tuple[ModuleFile, tuple[str, ...]]],
) -> list[tuple[tuple[str, tuple[str, ...]], dict[str, Shape]]]:
    """What each module's names (asked for by the others) are, for those whose definition
    makes storage or holds an address (read from its text before the module is parsed)."""
    with fewer_collections():
        return [((module.path, asked), _shapes_of(module, asked)) for module, asked in tasks]


def _shapes_of(module: ModuleFile, asked: tuple[str, ...]) -> dict[str, Shape]:
    source = read_source(module.path) or ""
    names = [name for name in asked if makes_storage(source, name)]
    tree = parse_module(source, module.path) if names else None
    if not isinstance(tree, ast.Module):
        return {}
    try:
        return ModuleFlow(tree, module).shapes(names)
    except RecursionError:
        return {}


@dataclass
class _Asked:
    """What the files of a round looked up in other modules that may change their findings."""

    uses: dict[str, set[str]] = field(default_factory=dict)
    """The keys of the index that may change each file's findings."""
    wanted: dict[str, dict[str, set[str]]] = field(default_factory=dict)
    """The names whose shapes are to be read, by the file of their module, each with the
    qualified names it was looked up as."""
    asking: dict[str, set[str]] = field(default_factory=dict)
    """The files that looked up each qualified name of :attr:`wanted`."""


def _index(
    pool: WorkerPool,
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
      gives them (:meth:`_Found.may_reach`);
    - a file calling a method (reading a property) on what it cannot see: the tree's members
      of that name, where all give addresses (:func:`_members`);
    - a file not parsed (no address source of its own) that may store and imports what gives
      addresses: parsed, with the index;
    - a file defining a function or method that other files now pass other addresses to
      (:attr:`TreeIndex.arguments`), where it may store what it cannot see and the definition
      names storage; a file passing an address to a ``torch.ops`` operator whose schema the
      tree defines (:attr:`TreeIndex.schemas`).
    """
    arguments, receivers = _arguments(results, names, found)
    index = TreeIndex(members=_members(results), schemas=_schemas(results), arguments=arguments)
    asked = _look_up(results, names, found, index)
    read = _read_shapes(pool, asked.wanted, names, found)
    _add_read_shapes(read, results, asked, index)
    again = _to_analyse_again(results, names, found, index, previous, asked.uses)
    # The files defining what is now passed other addresses than before, where they may
    # store what they cannot see.
    storing = {result.path for result in results if result.unknown_stored}
    passed_anew = {
        receivers[key]
        for key in index.arguments.keys() | previous.arguments.keys()
        if index.arguments.get(key) != previous.arguments.get(key)
        and receivers.get(key) in storing
        and definition_stores(found.text(receivers[key]), key.rpartition(".")[2])
    }
    paths = {module.path for module in again}
    again += [names.files[path] for path in sorted(passed_anew - paths)]
    return index, again


def _look_up(
    results: list[FileResult], names: ModuleNames, found: _Found, index: TreeIndex
) -> _Asked:
    """What the files that store what they cannot see looked up in other modules: in
    ``index``, the shapes holding addresses that those modules' own analyses found, where the
    file may reach what gives them; asked of the modules, the rest of what the files storing
    into storage of a dtype they cannot see looked up."""
    holding = _address_shapes(results)
    asked = _Asked()
    for result in results:
        used = asked.uses.setdefault(result.path, set())
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
                asked.wanted.setdefault(provider, {}).setdefault(name, set()).add(key)
                asked.asking.setdefault(key, set()).add(result.path)
    return asked


def _address_shapes(results: list[FileResult]) -> dict[tuple[str, str], Shape]:
    """The shapes of the classes and functions holding addresses that each file's analysis
    found, by its file and their name in it."""
    return {
        (result.path, shape.name.rpartition(".")[2]): shape
        for result in results
        for shape in result.exports
    }


def _read_shapes(
    pool: WorkerPool,
    wanted: dict[str, dict[str, set[str]]],
    names: ModuleNames,
    found: _Found,
) -> list[tuple[str, dict[str, Shape]]]:
    """The file of each module of ``wanted`` with its shapes of the names asked for: read
    (:func:`_shape`) where no earlier round has."""
    tasks = [(names.files[path], tuple(sorted(asked))) for path, asked in sorted(wanted.items())]
    # A module's shapes rest on its text alone: those of an earlier round are kept.
    new = [task for task in tasks if (task[0].path, task[1]) not in found.shapes]
    found.shapes.update(pool.map(_shape, new, path=lambda task: task[0].path))
    return [(m.path, found.shapes[(m.path, asked)]) for m, asked in tasks]


def _add_read_shapes(
    read: list[tuple[str, dict[str, Shape]]],
    results: list[FileResult],
    asked: _Asked,
    index: TreeIndex,
) -> None:
    """The shapes ``read`` put in ``index``, by their own name and by each name they were
    looked up as; used by the files that looked them up, where it may change what they find
    (:func:`_reaches`)."""
    by_path = {result.path: result for result in results}
    for path, shapes in read:
        for name, shape in shapes.items():
            index.shapes[shape.name] = shape
            for key in asked.wanted[path].get(name, ()):
                index.shapes[key] = shape
                if not shape.empty:
                    for asker in asked.asking[key]:
                        if _reaches(by_path[asker], shape):
                            asked.uses[asker].add(key)


def _to_analyse_again(
    results: list[FileResult],
    names: ModuleNames,
    found: _Found,
    index: TreeIndex,
    previous: TreeIndex,
    uses: dict[str, set[str]],
) -> list[ModuleFile]:
    """The files whose findings may differ with ``index`` from those with ``previous``: a key
    they use differs; or a member that changed is one they consulted on what they could not
    see, where they store it, or one consulted by what a file that does looks up."""
    # A member changes what a file finds where it stores what it could not see, and what it
    # gives where a file that does (or, not read, may) looks up what consulted it, or looks up
    # what looks it up.
    changed = _changed_members(index, previous)
    looked_up = _needed(results, names, found) if changed else set()
    # Each shape compared once (a deep comparison), not once per file that uses it.
    used = set().union(*uses.values())
    differ = {key for key in used if index.shapes.get(key) != previous.shapes.get(key)}
    again = {
        result.path
        for result in results
        if not differ.isdisjoint(uses[result.path])
        or any(index.schemas.get(op) != previous.schemas.get(op) for op in result.native_ops)
        or (result.unknown_stored and not changed.isdisjoint(result.consulted_members))
        or any(
            (result.path, definition) in looked_up and not changed.isdisjoint(members)
            for definition, members in result.members_by_definition.items()
        )
    }
    return [names.files[path] for path in sorted(again)]


def _changed_members(index: TreeIndex, previous: TreeIndex) -> set[str]:
    """The members that give addresses in one of ``index`` and ``previous`` and not (or not
    the same) in the other."""
    return {
        member
        for member in index.members.keys() | previous.members.keys()
        if index.members.get(member) != previous.members.get(member)
    }


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


def _arguments(
    results: list[FileResult], names: ModuleNames, found: _Found
) -> tuple[dict[str, tuple[Passed, ...]], dict[str, str]]:
    """What the files pass, holding addresses, to the functions and methods of other files of
    the tree (:attr:`TreeIndex.arguments`), and the file defining each: a function by its
    qualified name; a method by its name, where one file alone defines it."""
    if found.defining is None:
        # What a file defines rests on its text: read from the first round's results.
        found.defining = {}
        for result in results:
            for name in set(result.defined.split()) if result.unread else result.methods:
                found.defining.setdefault(name, []).append(result.path)
    defining = found.defining
    arguments: dict[str, tuple[Passed, ...]] = {}
    receivers: dict[str, str] = {}
    for result in results:
        for key, passed in result.passes.items():
            if key.startswith("."):
                paths = defining.get(key[1:], [])
                path = paths[0] if len(paths) == 1 else None
            else:
                module, _, function = key.rpartition(".")
                path = names.path_of(module) if module else None
                # By the name it has in its own module (its module named from the run's roots).
                key = f"{names.files[path].name}.{function}" if path is not None else key
            if path is None or path == result.path:
                continue
            arguments[key] = with_passed(arguments.get(key, ()), passed)
            receivers[key] = path
    return arguments, receivers


def _schemas(results: list[FileResult]) -> dict[str, Schema]:
    """The schemas of the ``torch.ops`` operators the tree defines (where two files define one
    of the same name, the first's)."""
    schemas: dict[str, Schema] = {}
    for result in results:
        for op, schema in result.schemas.items():
            schemas.setdefault(op, schema)
    return schemas


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
    defining: dict[str, list[str]] | None = None
    """The files defining each function (a method among them) of the tree, by its name."""
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

    def text(self, path: str) -> str:
        """The text of the file at ``path`` (read once)."""
        if path not in self.texts:
            self.texts[path] = read_source(path) or ""
        return self.texts[path]

    def _mentions(self, path: str, name: str) -> bool:
        if (path, name) not in self.mentions:
            text = self.text(path)
            named = name in text and re.search(rf"\b{name}\b", text) is not None
            self.mentions[(path, name)] = named
        return self.mentions[(path, name)]
