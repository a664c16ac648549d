"""The modules of the linted tree as each other sees them: every file's dotted name
(:class:`ModuleNames`), and the :class:`TreeIndex` of what the classes and functions one module
imports from another are (their shapes), built once per run from the modules that define them
(:mod:`ptrport.lint.index_rounds` says when)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from ptrport.lint.library import SYMMETRIC_MEMORY
from ptrport.lint.native import Schema
from ptrport.lint.values import NOTHING, Holds, Value, carried, parts, rebuilt


@dataclass(frozen=True)
class ModuleFile:
    """A file of the run with its dotted name: its path under the directory linted
    (``pkg.buffers`` for ``pkg/buffers.py`` in a run over the directory holding ``pkg``)."""

    path: str
    name: str

    @property
    def package(self) -> bool:
        return self.path.endswith("__init__.py")


def absolute(importer: ModuleFile, level: int, module: str) -> str | None:
    """The module that ``from {'.' * level}{module} import ...`` in ``importer`` names."""
    if level == 0:
        return module or None
    parts = importer.name.split(".") if importer.name else []
    if not importer.package:
        parts = parts[:-1]
    if level - 1 > len(parts):
        return None
    base = parts[: len(parts) - (level - 1)]
    if module:
        base.extend(module.split("."))
    return ".".join(base) or None


@dataclass
class ModuleNames:
    """The dotted name of each file of the run, and the file of each dotted name: the one of
    that name, else the only one whose name ends the name asked for (so ``pkg.buffers`` is
    found in a run over the directory ``pkg`` itself, named ``buffers`` there)."""

    files: dict[str, ModuleFile]
    """By path."""
    by_name: dict[str, str | None] = field(default_factory=dict)
    """The path of each name; ``None`` where several files have it."""
    by_last: dict[str, list[str]] = field(default_factory=dict)
    """The names ending in each last part."""
    found: dict[str, str | None] = field(default_factory=dict)
    """The file of each other name asked for (:meth:`path_of`)."""

    @classmethod
    def of(cls, roots: Sequence[Path], paths: Sequence[Path]) -> ModuleNames:
        """The names of ``paths``, found under the directories of ``roots`` (a file named by
        itself is named by its stem)."""
        # As text: pathlib's relative_to, for each of a large tree's files, took as long as
        # finding them.
        prefixes = [_prefix(root.as_posix()) for root in roots if root.is_dir()]
        files: dict[str, ModuleFile] = {}
        for path in paths:
            posix = path.as_posix()
            under = next(
                (
                    posix[len(prefix) :]
                    for prefix in prefixes
                    if posix.startswith(prefix) and (prefix or not path.is_absolute())
                ),
                path.name,
            )
            parts = under.split("/")
            parts[-1] = parts[-1].removesuffix(".py")
            if parts[-1] == "__init__":
                parts.pop()
            files[posix] = ModuleFile(posix, ".".join(parts))
        names = cls(files)
        for module in files.values():
            if module.name in names.by_name:
                names.by_name[module.name] = None
            elif module.name:
                names.by_name[module.name] = module.path
                names.by_last.setdefault(module.name.rpartition(".")[2], []).append(module.name)
        return names

    def path_of(self, module: str) -> str | None:
        """The file of the module ``module`` (as a file of the run imports it), if one."""
        if module in self.by_name:
            return self.by_name[module]
        if module not in self.found:
            self.found[module] = self._ending(module)
        return self.found[module]

    def _ending(self, module: str) -> str | None:
        ending = [
            name
            for name in self.by_last.get(module.rpartition(".")[2], ())
            if module.endswith("." + name)
        ]
        longest = max(ending, key=len, default=None)
        if longest is None or sum(len(name) == len(longest) for name in ending) > 1:
            return None
        return self.by_name[longest]


def _prefix(directory: str) -> str:
    """How the paths under ``directory`` begin (as :meth:`Path.as_posix` writes both; under
    ``.``, every relative path)."""
    if directory == ".":
        return ""
    return directory if directory.endswith("/") else directory + "/"


@dataclass(frozen=True)
class ClassShape:
    """A class as the other modules see it: its constructor's fields (a dataclass's or a
    NamedTuple's, else ``None``), what its attributes hold and what its methods return, each as
    the module defining it found them, with its classes named by their qualified names."""

    name: str
    fields: tuple[str, ...] | None
    attributes: dict[str, Value]
    returns: dict[str, Value]
    properties: frozenset[str] = frozenset()
    """The methods of :attr:`returns` that are properties (read, not called)."""

    @property
    def empty(self) -> bool:
        """Whether nothing is known of it that a module using it would not know."""
        return self.fields is None and not self.attributes and not self.returns

    def giving_addresses(self) -> set[str]:
        """The attributes and methods through which it gives addresses."""
        values = (*self.attributes.items(), *self.returns.items())
        return {name for name, value in values if holds_address(value)}


@dataclass(frozen=True)
class FunctionShape:
    """A function as the other modules see it: what it returns, run with no argument known."""

    name: str
    returns: Value

    @property
    def empty(self) -> bool:
        return self.returns == NOTHING

    def giving_addresses(self) -> set[str]:
        return {self.name.rpartition(".")[2]} if holds_address(self.returns) else set()


Shape = ClassShape | FunctionShape

Passed = tuple[tuple[Value, ...], tuple[tuple[str, Value], ...]]
"""A call's arguments that hold addresses: by position, and by keyword (sorted)."""
CALLS = 8
"""How many calls of one function with different arguments are kept: each is run apart (its
arguments together, as that call passes them)."""


def with_passed(calls: tuple[Passed, ...], more: Iterable[Passed]) -> tuple[Passed, ...]:
    """``calls`` with the calls of ``more`` that differ from each (at most :data:`CALLS`)."""
    found = list(calls)
    for passed in more:
        if passed not in found and len(found) < CALLS:
            found.append(passed)
    return tuple(found)


PROPERTY = "@"
"""Before a member's name: a property (read, not called)."""


@dataclass
class TreeIndex:
    """The classes and functions of the tree that its modules import from each other, by each
    qualified name they are imported under (and their own); and the members that give
    addresses wherever the tree defines them."""

    shapes: dict[str, Shape] = field(default_factory=dict)
    arguments: dict[str, tuple[Passed, ...]] = field(default_factory=dict)
    """What the tree's modules pass to the functions of others that hold addresses: by the
    function's qualified name (``pkg.tables.store``), or by a method's name after a dot
    (``.register``) where one class of the tree alone defines it."""
    schemas: dict[str, Schema] = field(default_factory=dict)
    """The schemas of the ``torch.ops`` operators the tree defines, by operator name."""
    members: dict[str, Value] = field(default_factory=dict)
    """The methods (and properties, ``@name``) that every class of the tree defining one of
    that name gives addresses from: what a call (a read) on what is not followed gives."""


def holds_address(value: Value) -> bool:
    """Whether ``value`` holds an address (or its int64 bits) or a handle whose attributes are
    addresses (torch's symmetric memory), itself or in its elements."""
    return carried(value) in (Holds.ADDRESS, Holds.BITS) or SYMMETRIC_MEMORY in classes_named(value)


_LINE = re.compile(r"\bline (\d+)")


def exported(value: Value, module: ModuleFile, local: frozenset[str]) -> Value:
    """``value`` as another module sees it: classes of ``module`` (``local``) by their qualified
    names, and the lines where it came from and was made with the path they are in."""
    where = f"{module.path}:"

    return replace(
        rebuilt(value, lambda inner: exported(inner, module, local)),
        instance=_qualified(value.instance, module, local),
        denotes_class=_qualified(value.denotes_class, module, local),
        origin=_LINE.sub(lambda m: where + m.group(1), value.origin),
        made=_LINE.sub(lambda m: where + m.group(1), value.made),
    )


def _qualified(name: str | None, module: ModuleFile, local: frozenset[str]) -> str | None:
    return f"{module.name}.{name}" if name in local and module.name else name


def classes_named(value: Value) -> Iterator[str]:
    """The classes ``value`` is, or an instance of, itself or in its elements."""
    for name in (value.instance, value.denotes_class):
        if name is not None:
            yield name
    for inner in parts(value):
        if inner is not None:
            yield from classes_named(inner)
