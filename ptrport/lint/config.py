"""``[tool.ptrport.lint]`` in a project's pyproject.toml: the paths ``ptrport lint`` reads, the
globs it leaves out, the rules it reports and its baseline. The table is the one in the first
pyproject.toml holding it, from the current directory upwards; paths in it are relative to its
directory. Each command-line option replaces the key of the same name."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ptrport.errors import HarnessError, shown
from ptrport.lint.checker import LintRun
from ptrport.lint.rules import RULES
from ptrport.lint.sources import python_files

PYPROJECT = "pyproject.toml"
TABLE = "[tool.ptrport.lint]"
LIST_KEYS = ("paths", "exclude", "select", "ignore")
"""The keys of the table whose values are lists of strings."""
KEYS = (*LIST_KEYS, "baseline")
"""Every key of the table: ``baseline`` is a string."""


def relative_to_cwd(path: Path) -> Path:
    """``path`` as a path from the current directory, as the user would type it."""
    try:
        return Path(os.path.relpath(path))
    except ValueError:  # another drive
        return path


@dataclass(frozen=True)
class Exclude:
    """A glob matched against a file's path from ``root``, the path of each directory on the way
    (``tests/data``, ``src/*_pb2.py``), and each name in it (``vendor``, ``generated_*.py``);
    for a file outside ``root``, against the path as given."""

    root: Path
    """Absolute."""
    glob: str

    def matches(self, path: Path) -> bool:
        try:
            parts = Path(os.path.abspath(path)).relative_to(self.root).parts
        except ValueError:  # outside the root: the path as given
            parts = path.parts
        below = ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]
        return any(fnmatch.fnmatch(candidate, self.glob) for candidate in (*parts, *below))


def excludes(globs: Iterable[str], root: Path) -> list[Exclude]:
    base = Path(os.path.abspath(root))
    return [Exclude(base, glob.removeprefix("./").rstrip("/") or ".") for glob in globs]


def rule_names(names: Iterable[str], where: str) -> frozenset[str]:
    """The rules named, each name checked; ``where`` says where they were given."""
    chosen = frozenset(name.strip() for name in names if name.strip())
    for name in sorted(chosen):
        if name not in RULES:
            known = ", ".join(RULES)
            raise HarnessError(f"{where}: unknown rule {name!r} (the rules: {known})")
    return chosen


@dataclass(frozen=True)
class ProjectConfig:
    """The table as read; an absent key is ``None``."""

    file: Path
    paths: list[Path] | None = None
    exclude: list[Exclude] | None = None
    select: frozenset[str] | None = None
    ignore: frozenset[str] | None = None
    baseline: Path | None = None

    def where(self, key: str) -> str:
        return f"{self.file}: {TABLE} {key}"


def find_config(start: Path) -> ProjectConfig | None:
    """The table of the first pyproject.toml from ``start`` upwards that has one."""
    for directory in (start, *start.parents):
        candidate = directory / PYPROJECT
        if candidate.is_file():
            config = read_config(relative_to_cwd(candidate), required=False)
            if config is not None:
                return config
    return None


def read_config(file: Path, *, required: bool = True) -> ProjectConfig | None:
    """The table in ``file``; ``None`` where it has none and none is ``required``."""
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise HarnessError(f"{file}: cannot read: {getattr(exc, 'strerror', exc)}") from None
    if "ptrport" not in text and not required:
        return None
    import tomllib  # Here: with datetime, a tenth of the startup of a run that reads none.

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"{file}: not valid TOML: {exc}") from None
    keys = ("tool", "ptrport", "lint")
    table: dict[str, object] = document
    for depth, key in enumerate(keys, start=1):
        value = table.get(key)
        if value is None:
            if required:
                raise HarnessError(f"{file}: no {TABLE} table")
            return None
        if not isinstance(value, dict):
            raise HarnessError(f"{file}: {'.'.join(keys[:depth])}: expected a table")
        table = value
    return _parsed(file, table)


def _parsed(file: Path, table: dict[str, object]) -> ProjectConfig:
    config = ProjectConfig(file)
    for key in table:
        if key not in KEYS:
            raise HarnessError(f"{config.where(key)}: unknown key (the keys: {', '.join(KEYS)})")
    lists = {key: _strings(table[key], config.where(key)) for key in LIST_KEYS if key in table}
    directory = file.parent
    paths = [relative_to_cwd(directory / path) for path in lists.get("paths", [])]
    for path in paths:
        if not path.exists():
            raise HarnessError(f"{config.where('paths')}: {path}: no such file or directory")
    rules = {
        key: rule_names(lists[key], config.where(key))
        for key in ("select", "ignore")
        if key in lists
    }
    baseline = table.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise HarnessError(f"{config.where('baseline')}: expected a string, got {shown(baseline)}")
    return ProjectConfig(
        file,
        paths=paths if "paths" in lists else None,
        exclude=excludes(lists["exclude"], directory) if "exclude" in lists else None,
        select=rules.get("select"),
        ignore=rules.get("ignore"),
        baseline=relative_to_cwd(directory / baseline) if baseline is not None else None,
    )


def _strings(value: object, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise HarnessError(f"{where}: expected a list of strings, got {shown(value)}")
    return list(value)


@dataclass(frozen=True)
class LintOptions:
    """What a run reads and reports: the configuration with the command line applied."""

    paths: list[Path]
    exclude: list[Exclude]
    rules: frozenset[str]
    """Selected and not ignored."""
    baseline: Path | None

    def python_files(self) -> list[Path]:
        """The files under the paths, less those an exclude glob matches (a file named on the
        command line too)."""
        return [
            path
            for path in python_files(self.paths)
            if not any(exclude.matches(path) for exclude in self.exclude)
        ]

    def selected(self, run: LintRun) -> LintRun:
        """``run`` with the findings of the rules left out removed."""
        return replace(run, findings=[f for f in run.findings if f.rule in self.rules])


def lint_options(
    config: ProjectConfig | None,
    *,
    paths: Sequence[Path],
    exclude: Sequence[str] | None,
    select: Sequence[str] | None,
    ignore: Sequence[str] | None,
    baseline: Path | None,
) -> LintOptions:
    """The options of a run: each one given on the command line (``None``, or no paths: not
    given) replaces its key in ``config``. Rule names may be comma-separated."""
    chosen = config or ProjectConfig(Path(PYPROJECT))
    selected = chosen.select if select is None else _option_rules(select, "--select")
    ignored = chosen.ignore if ignore is None else _option_rules(ignore, "--ignore")
    rules = (frozenset(RULES) if selected is None else selected) - (ignored or frozenset())
    if not rules:
        given = select is not None or ignore is not None
        where = "--select, --ignore" if given else f"{chosen.file}: {TABLE} select, ignore"
        raise HarnessError(f"{where}: no rule left to report")
    return LintOptions(
        paths=list(paths) or chosen.paths or [Path(".")],
        exclude=(chosen.exclude or []) if exclude is None else excludes(exclude, Path.cwd()),
        rules=rules,
        baseline=baseline or chosen.baseline,
    )


def _option_rules(values: Sequence[str], option: str) -> frozenset[str]:
    return rule_names((name for value in values for name in value.split(",")), option)
