"""What a command says when it needs a dependency that this install lacks: ``pip install
--no-deps ptrport`` installs the lint and the report commands alone, and each other command
then ends in one line that names what is missing and how to install it, not a traceback."""

from __future__ import annotations

import importlib.util

DEPENDENCIES = ("torch", "hypothesis", "pytest", "numpy")
"""ptrport's declared dependencies (``[project] dependencies``), by the name they import as."""

TORCH = "pip install torch (the build for your hardware)"
"""Torch comes first and by itself: a plain ``pip install ptrport`` would pull whichever torch
build the index offers (on Linux, CUDA's)."""


def missing_dependency(exc: ModuleNotFoundError, command: str) -> str | None:
    """The line that says ``command`` needs the dependency ``exc`` did not find, and how to
    install it; None when what is missing is not one of ptrport's dependencies (a bug, whose
    traceback must show)."""
    name = exc.name
    if name == "triton":
        return f"{command} needs triton: pip install 'ptrport[triton]'"
    if name not in DEPENDENCIES:
        return None
    steps = [TORCH] if name == "torch" or not _installed("torch") else []
    if any(d == name or not _installed(d) for d in DEPENDENCIES if d != "torch"):
        # Installing ptrport again over a --no-deps install brings its missing dependencies.
        steps.append(f"pip install ptrport for its {'other ' if steps else ''}dependencies")
    return f"{command} needs {name}: {', then '.join(steps)}"


def require(*names: str) -> None:
    """Raise what importing the first of ``names`` that is not installed would raise, without
    importing any of them."""
    for name in names:
        if not _installed(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


def command_named(arguments: list[str]) -> str:
    """``ptrport COMMAND`` (``ptrport report ACTION``) as ``arguments`` name it, before they are
    parsed: parsing may itself import what is missing (an option's type)."""
    words = [a for a in arguments if not a.startswith("-")]
    return " ".join(["ptrport", *(words[:2] if words[:1] == ["report"] else words[:1])])


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None
