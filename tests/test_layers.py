"""The layers' import contract (``[tool.importlinter]`` in pyproject.toml) holds for the package
as it is, and breaks for each kind of import it forbids: ``lint-imports`` run on a copy of the
package with one import added."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint_imports(tmp_path: Path, added: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``lint-imports`` on a copy of the package with ``added`` lines appended to modules."""
    shutil.copytree(ROOT / "ptrport", tmp_path / "ptrport")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    for module, line in added.items():
        path = tmp_path / (module.replace(".", "/") + ".py")
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def test_the_package_keeps_every_contract(tmp_path: Path) -> None:
    done = _lint_imports(tmp_path, {})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        (
            "ptrport.report.records",
            "from ptrport.device import backends",
            "Reports are read with the standard library alone",
        ),
        ("ptrport.report.diff", "import torch", "Reports are read with the standard library alone"),
        ("ptrport.device.presentation", "from ptrport.report import records", "The device knows"),
        ("ptrport.lint.rules", "from ptrport.check import batches", "The lint imports only"),
        ("ptrport.run.outcomes", "from ptrport import plugin", "Nothing imports the plugin's"),
        ("ptrport.check.tables", "from ptrport.run import settings", "Layers import downwards"),
        ("ptrport.run.names", "from ptrport.run import session", "No import cycles"),
    ],
)
def test_an_import_the_contract_forbids_breaks_it(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    done = _lint_imports(tmp_path, {module: line})
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"{broken}" in done.stdout.split("Broken contracts")[-1]
