"""The local matrix: platform kinds run one after another, their reports merged and diffed
against the baseline, regressions and missing reports ending it non-zero."""

from __future__ import annotations

import functools
import json
import sys
import textwrap
from pathlib import Path

import pytest

from ptrport.cli import main
from ptrport.errors import HarnessError
from ptrport.report import local_matrix
from ptrport.report.platforms import KINDS
from ptrport.report.records import Outcome
from tests.sample_reports import report, result

# The torch releases the two CPU kinds install, as their reports name them.
TORCH, TORCH_LATEST = (KINDS[k].torch.partition("==")[2] for k in ("cpu", "cpu-latest"))
ROUND_TRIP = "table_round_trip::test_an_entry_reads_back_bit_exact"
SETITEM = "uint64_operations::test_operation[setitem]"


def _two_platforms(directory: Path, *, setitem_latest: Outcome = Outcome.PASSED) -> None:
    raises = "raises ValueError: Overflow when unpacking long long"
    report(
        directory,
        "cpu",
        [result(ROUND_TRIP), result(SETITEM, Outcome.SKIPPED, subject=None, message=raises)],
        torch=f"{TORCH}+cpu",
    )
    report(
        directory,
        "cpu-latest",
        [result(ROUND_TRIP), result(SETITEM, setitem_latest, subject=None)],
        torch=TORCH_LATEST,
    )


def test_merging_writes_the_matrix_in_three_formats_with_both_torch_versions(
    tmp_path: Path,
) -> None:
    _two_platforms(tmp_path)
    outcome = local_matrix.merge_and_diff([tmp_path], tmp_path, baseline=None, expectations=None)
    assert [p.name for p in outcome.written] == ["matrix.md", "matrix.html", "matrix.json"]
    markdown = (tmp_path / "matrix.md").read_text()
    assert f"torch {TORCH}+cpu" in markdown and f"torch {TORCH_LATEST}" in markdown
    assert "raises ValueError" in markdown
    assert outcome.diff is None and not outcome.failed
    assert any("no baseline at" in line for line in local_matrix.summary(outcome, None))


def test_with_a_history_the_night_is_kept_and_the_page_draws_the_nights(tmp_path: Path) -> None:
    _two_platforms(tmp_path)
    kept = tmp_path / local_matrix.HISTORY
    outcome = local_matrix.merge_and_diff(
        [tmp_path], tmp_path, baseline=None, expectations=None, history_dir=kept
    )
    (night,) = kept.glob("*.json")
    assert outcome.written[0] == night
    assert 'id="trends"' in (tmp_path / "matrix.html").read_text()
    # The history lies under the reports directory and is not read back as a report.
    again = local_matrix.merge_and_diff(
        [tmp_path], tmp_path, baseline=None, expectations=None, history_dir=kept
    )
    assert len(again.matrix.platforms) == len(outcome.matrix.platforms)


def test_a_check_that_got_worse_than_the_baseline_fails_the_run(tmp_path: Path) -> None:
    before, now = tmp_path / "before", tmp_path / "now"
    _two_platforms(before)
    local_matrix.merge_and_diff([before], before, baseline=None, expectations=None)
    baseline = local_matrix.promote(before / "matrix.json", tmp_path / "baseline" / "matrix.json")
    _two_platforms(now, setitem_latest=Outcome.FAILED)
    outcome = local_matrix.merge_and_diff([now], now, baseline=baseline, expectations=None)
    assert outcome.diff is not None and outcome.diff.regressed
    assert outcome.failed
    assert "setitem" in (now / "diff.md").read_text()


def test_the_same_result_as_the_baseline_passes(tmp_path: Path) -> None:
    _two_platforms(tmp_path)
    local_matrix.merge_and_diff([tmp_path], tmp_path, baseline=None, expectations=None)
    baseline = local_matrix.promote(tmp_path / "matrix.json", tmp_path / "b" / "matrix.json")
    again = local_matrix.merge_and_diff([tmp_path], tmp_path, baseline=baseline, expectations=None)
    assert again.diff is not None and not again.diff.regressed and not again.failed


def test_promoting_refuses_something_that_is_not_a_report(tmp_path: Path) -> None:
    bad = tmp_path / "matrix.json"
    bad.write_text("{}")
    with pytest.raises(HarnessError):
        local_matrix.promote(bad, tmp_path / "baseline" / "matrix.json")
    assert not (tmp_path / "baseline").exists()


def test_an_unknown_kind_is_refused_in_one_line() -> None:
    with pytest.raises(HarnessError, match="unknown platform kind 'tpu'; known: cpu"):
        local_matrix.check_kinds(["cpu", "tpu"])


# -- running environments ---------------------------------------------------------------------

SCENARIO = """
import pytest

pytestmark = pytest.mark.ptrport_scenario


def test_the_backend_is_there(backend):
    assert backend.is_available()
"""

STAND_IN_TOX = """
import subprocess, sys
name = sys.argv[sys.argv.index("-e") + 1]
if name == "cpu-latest":
    sys.exit(3)  # dies before writing its report
sys.exit(subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
    "--backend=cpu", "--platform-name=" + name, "--report-dir={reports}", "{scenario}"]).returncode)
"""


def _stand_in_tox(tmp_path: Path) -> tuple[str, str]:
    """A command run in place of tox: a real pytest run of the plugin per environment."""
    (tmp_path / "test_tiny.py").write_text(SCENARIO)
    script = tmp_path / "tox_stand_in.py"
    source = STAND_IN_TOX.format(reports=tmp_path / "reports", scenario=tmp_path / "test_tiny.py")
    script.write_text(textwrap.dedent(source))
    return (sys.executable, str(script))


def test_each_environment_runs_and_one_without_a_report_fails_the_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    reports = tmp_path / "reports"
    code = local_matrix.main_run(
        ["cpu", "ipex", "cpu-latest"],
        reports=reports,
        baseline=tmp_path / "none.json",
        no_run=False,
        do_promote=False,
        expectations=None,
        tox=_stand_in_tox(tmp_path),
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "no report from: cpu-latest" in out
    assert "cpu/cpu (torch" in out and "ipex/cpu (torch" in out
    merged = json.loads((reports / "matrix.json").read_text())
    assert sorted(r["platform"]["id"] for r in merged["reports"]) == ["cpu", "ipex"]


def test_a_clean_run_promoted_then_repeated_passes(tmp_path: Path) -> None:
    reports, baseline = tmp_path / "reports", tmp_path / "baseline" / "matrix.json"
    tox = _stand_in_tox(tmp_path)
    run = functools.partial(
        local_matrix.main_run,
        ["cpu"],
        reports=reports,
        baseline=baseline,
        no_run=False,
        expectations=None,
        tox=tox,
    )
    first = run(do_promote=True)
    assert first == 0 and baseline.exists()
    again = run(do_promote=False)
    assert again == 0
    assert (reports / "diff.md").exists()


def test_known_failures_from_the_expectations_file_are_shown_as_known(tmp_path: Path) -> None:
    report(tmp_path, "ipex", [result(ROUND_TRIP, Outcome.FAILED, message="TypeError: x")])
    known = tmp_path / "expectations.toml"
    known.write_text(
        f'[[known]]\ncheck = "{ROUND_TRIP}"\nplatforms = ["ipex"]\nreason = "Triton 3.4"\n'
    )
    local_matrix.merge_and_diff(
        [tmp_path / "ipex.json"], tmp_path, baseline=None, expectations=known
    )
    markdown = (tmp_path / "matrix.md").read_text()
    assert "known" in markdown and "Triton 3.4" in markdown


def test_ptrport_matrix_no_run_merges_a_directory_and_promotes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_platforms(tmp_path)
    baseline = tmp_path / "baseline" / "matrix.json"
    argv = ["matrix", "--no-run", "--reports", str(tmp_path), "--baseline", str(baseline)]
    assert main([*argv, "--expectations", str(tmp_path / "none.toml"), "--promote"]) == 0
    assert baseline.exists()
    assert main([*argv, "--expectations", str(tmp_path / "none.toml")]) == 0
    out = capsys.readouterr().out
    assert f"against {baseline}: no regressions" in out
    assert main(["matrix", "tpu"]) == 2
    assert "unknown platform kind 'tpu'" in capsys.readouterr().err
