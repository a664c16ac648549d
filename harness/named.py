"""Code named on the command line as ``package.module:attribute`` (a subject factory, a probe
catalogue), imported from where the command runs, as ``python -m`` would."""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType


def split(spec: str) -> tuple[str, str] | None:
    """``(module, attribute)`` of ``module:attribute``; ``None`` if either part is missing."""
    module_name, _, attribute = spec.partition(":")
    return (module_name, attribute) if module_name and attribute else None


def import_here(module_name: str) -> ModuleType:
    """Import ``module_name`` with the current directory importable; errors propagate."""
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    return importlib.import_module(module_name)
