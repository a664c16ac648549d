"""The files a lint run reads, and what their text says before any is parsed: whether it holds
an address source or a Triton kernel at all (the triggers), what it imports by name, which
functions it defines, and whether a top-level definition may make storage."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from pathlib import Path

from ptrport.errors import HarnessError
from ptrport.lint.library import CONSTRUCTORS, FACTORIES, FILLED, PACKING
from ptrport.lint.tree_index import ModuleFile, absolute

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
    *sorted(
        {name.rsplit(".", 1)[-1] + "(" for name in (*CONSTRUCTORS, *FACTORIES, *FILLED, *PACKING)}
    ),
)
"""Words without which a file stores nothing where an address could not be held (read in a
file that is not parsed: it needs parsing only where what it imports gives addresses). Each
call of the library that makes or fills storage is among them (``tensor(`` for
``torch.tensor(addresses)``, which makes int64 with no dtype named)."""
_DEFINED = re.compile(r"def[ \t]+(\w+)")
"""A function defined (a method among them), by its name: a file that is not parsed is only
searched for them (which takes a tenth of matching methods alone)."""


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


def read_source(path: str) -> str | None:
    """The text of the file at ``path``; ``None`` where it cannot be read as UTF-8."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def holds_trigger(source: str) -> bool:
    """Whether ``source`` holds one of the :data:`TRIGGERS` (beside its word, where it needs
    one): only then is it parsed for what it finds alone."""
    # Each word is one search of the text: most files hold none, and pay for every word.
    return any(t in source and _BESIDE.get(t, t) in source for t in TRIGGERS)


def imported_names(source: str, module: ModuleFile) -> frozenset[str]:
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


def defined_functions(source: str) -> str:
    """The functions (methods among them) ``source`` defines, by name, each followed by a space."""
    # One string: a set of every name defined in every file costs more to send back.
    return "".join(name + " " for name in _DEFINED.findall(source))


def names_storage(source: str) -> bool:
    """Whether ``source`` names a dtype or a storage that could not hold an address."""
    return any(word in source for word in _STORING_WORDS)


def definition_stores(source: str, name: str) -> bool:
    """Whether the top-level class or function holding the function (or method) ``name`` of
    ``source`` mentions a dtype, a typed tensor, an address source or a ``torch.ops``
    operator: what it is passed may reach storage there (a method's class: what one method
    keeps, another may store)."""
    found = re.search(rf"^[ \t]*(?:async[ \t]+)?def[ \t]+{name}\b", source, re.MULTILINE)
    if found is None:
        return False
    start = 0
    for top in _TOP_LEVEL.finditer(source, 0, found.start() + 1):
        start = top.start()
    text = _definition(source, start, found.end())
    return "torch.ops" in text or any(word in text for word in STORAGE_WORDS)


def makes_storage(source: str, name: str) -> bool:
    """Whether the top-level class or function ``name`` of ``source`` mentions a dtype, a
    typed tensor, an address source or fields (its text, decorators included, up to the next
    top-level definition)."""
    start = re.search(rf"^(?:@.*\n)*(?:class|def|async def)\s+{name}\b", source, re.MULTILINE)
    if start is None:
        return False
    text = _definition(source, start.start(), start.end())
    return any(word in text for word in STORAGE_WORDS)


def _definition(source: str, start: int, after: int) -> str:
    """The text of the top-level definition starting at ``start``: up to the next top-level
    definition after ``after``."""
    end = _TOP_LEVEL.search(source, after)
    return source[start : end.start() if end else len(source)]
