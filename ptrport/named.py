"""Code named as ``package.module:attribute`` (a subject factory, a probe catalogue, a check's
body in a repro script), imported from where the command runs, as ``python -m`` would."""

from __future__ import annotations

import functools
import importlib
import os
import sys

from ptrport.errors import HarnessError, exception_message


class LoadError(HarnessError):
    """A ``module:attribute`` that names nothing here, with a one-line reason."""


def load(spec: str, what: str) -> object:
    """The object ``spec`` names: ``package.module:attribute``, the attribute maybe dotted
    (``factories.make``), with the current directory importable. ``what`` names the object in
    the :class:`LoadError` for a malformed spec, a module that does not import or a missing
    attribute, e.g. ``cannot import subject factory 'pkg.mod:make': ModuleNotFoundError: ...``."""
    module_name, _, attribute = spec.partition(":")
    if not (module_name and attribute):
        raise LoadError(f"{what} {spec!r} must be given as module:attribute")
    here = os.getcwd()
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise LoadError(f"cannot import {what} {spec!r}: {exception_message(exc)}") from None
    try:
        return functools.reduce(getattr, attribute.split("."), module)
    except AttributeError:
        raise LoadError(
            f"cannot load {what} {spec!r}: module {module_name!r} has no attribute {attribute!r}"
        ) from None
