"""The scripts of ``benchmarks/`` (no package) loaded as modules, for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
TOY_ENGINES = """\
[bases.here]
packages = ["torch==2.13.0"]

[[releases]]
engine = "toy"
version = "1.0"
base = "here"
deps = "none"
env = { CUDA_VISIBLE_DEVICES = "" }
"""
"""The ``engines.toml`` of a toy corpus: one release over a base of this test run's torch."""


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, registered under ``name`` so that its dataclasses can resolve
    their module; the scripts import each other (``csv_table``) as they do when run, from
    ``benchmarks/``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
