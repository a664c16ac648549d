"""uint64 operation support: the probe on real torch, ``ptrport probe``, the
``uint64_operations`` scenario, and how the matrix, its pages and the diff show the results.

torch.compile is not exercised here by default: the first compile in a process takes 3 s with
a warm inductor cache and about 25 s without one. ``PTRPORT_TEST_COMPILE=1`` (CI sets it) runs
the one test that compiles."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from sample_reports import document, report, result, unwritten_report

from ptrport.addresses import to_signed
from ptrport.check import probe
from ptrport.cli import main
from ptrport.device.backends import CpuBackend
from ptrport.report import schema
from ptrport.report.diff import diff_reports, to_markdown
from ptrport.report.expectations import Expectations
from ptrport.report.matrix import build_matrix
from ptrport.report.op_support import (
    SCENARIO,
    OperationVerdict,
    check_id,
    label,
    operation_of,
    verdict_of,
)
from ptrport.report.platform_report import (
    journal_path,
    load_report,
    load_reports,
    replace_scenario_results,
    write_report,
)
from ptrport.report.records import Outcome, Result
from ptrport.report.render_html import to_html
from ptrport.report.render_markdown import to_markdown as matrix_markdown

CPU = CpuBackend()
SCENARIOS = Path(__file__).resolve().parent.parent / "ptrport" / "scenarios"
ON_TORCH_2_13 = pytest.mark.skipif(
    not str(torch.__version__).startswith("2.13."),
    reason=f"these are the facts of torch 2.13 on the CPU; this is torch {torch.__version__}",
)
ADD_RAISES = "raises NotImplementedError: \"add_stub\" not implemented for 'UInt64'"
TORCH = str(torch.__version__)


def _signed_tolist(on: object) -> list[int]:
    """The bug the harness exists for: addresses read back through int64 lose their sign."""
    values: list[int] = torch.tensor(
        [to_signed(v) for v in probe.VALUES], dtype=torch.int64
    ).tolist()
    return values


SIGNED_TOLIST = probe.Operation(
    "signed_tolist",
    "x.view(torch.int64).tolist(): the addresses as signed ints",
    list(probe.VALUES),
    _signed_tolist,
)
WRONG_CATALOGUE = """
import torch
from ptrport.check import probe
from ptrport.addresses import to_signed


def _signed(on):
    return torch.tensor([to_signed(v) for v in probe.VALUES], dtype=torch.int64).tolist()


OPERATIONS = (
    *probe.OPERATIONS[:2],
    probe.Operation("signed_tolist", "the addresses as signed ints", list(probe.VALUES), _signed),
)
"""


def _by_id(findings: list[probe.Finding]) -> dict[str, probe.Finding]:
    return {f.operation: f for f in findings}


@pytest.fixture(scope="module")
def findings() -> dict[str, probe.Finding]:
    return _by_id(probe.probe_all(CPU))


class TestCatalogue:
    def test_ids_are_distinct_and_compiled_variants_are_prefixed(self) -> None:
        ids = [op.id for op in probe.catalogue(compiled=True)]
        assert len(ids) == len(set(ids))
        assert {"add", "lt", "setitem", "clone", "cat", "save_load"} <= set(ids)
        compiled = [op.id for op in probe.COMPILED_OPERATIONS]
        assert {"compiled:add", "compiled:lt", "compiled:max", "compiled:clone"} <= set(compiled)
        assert all(i.startswith("compiled:") for i in compiled)
        assert probe.catalogue() == probe.OPERATIONS

    def test_the_inputs_tell_the_unsigned_order_from_the_signed_one(self) -> None:
        lt = probe.find_operation("lt")
        signed = [
            to_signed(a) < to_signed(b) for a, b in zip(probe.VALUES, probe.OTHERS, strict=True)
        ]
        assert lt.expected != signed
        assert probe.find_operation("max").expected == [2**64 - 1]
        assert probe.find_operation("rshift").expected == [v >> 12 for v in probe.VALUES]

    def test_an_unknown_operation_is_refused_by_name(self) -> None:
        with pytest.raises(probe.UnknownName, match="unknown operation 'nope'"):
            probe.find_operation("nope")


class TestProbeOnTorchCpu:
    @ON_TORCH_2_13
    @pytest.mark.parametrize("name", ["add", "lt"])
    def test_add_and_lt_raise_not_implemented(
        self, findings: dict[str, probe.Finding], name: str
    ) -> None:
        found = findings[name]
        assert found.verdict is OperationVerdict.RAISES
        assert found.detail is not None
        assert found.detail.startswith("NotImplementedError: ")
        assert "not implemented for 'UInt64'" in found.detail
        assert found.message == f"raises {found.detail}"

    @ON_TORCH_2_13
    def test_setitem_of_2_63_fails(self, findings: dict[str, probe.Finding]) -> None:
        found = findings["setitem"]
        assert found.verdict is OperationVerdict.RAISES
        assert found.detail == "ValueError: Overflow when unpacking long long"

    def test_clone_and_cat_work(self, findings: dict[str, probe.Finding]) -> None:
        for name in ("clone", "cat", "view_int64", "tolist", "save_load"):
            assert findings[name].verdict is OperationVerdict.WORKS, findings[name]
            assert findings[name].detail is None

    def test_every_operation_gets_a_verdict_on_its_own_fresh_tensors(
        self, findings: dict[str, probe.Finding]
    ) -> None:
        assert list(findings) == [op.id for op in probe.OPERATIONS]
        assert {f.backend for f in findings.values()} == {"cpu"}
        assert all(f.verdict is not OperationVerdict.WRONG for f in findings.values())
        # Probing again finds the same: no probe leaves state behind for the next.
        again = _by_id(probe.probe_all(CPU))
        assert {k: f.verdict for k, f in again.items()} == {
            k: f.verdict for k, f in findings.items()
        }

    def test_a_deliberately_wrong_operation_is_wrong_with_both_values_in_hex(self) -> None:
        catalogue = (*probe.OPERATIONS, SIGNED_TOLIST)
        found = _by_id(probe.probe_all(CPU, catalogue))["signed_tolist"]
        assert found.verdict is OperationVerdict.WRONG
        assert found.detail == (
            "expected [0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff, "
            "0xffff85abd4e00000], got [0x7fffffffffffffff, -0x8000000000000000, -0x1, "
            "-0x7a542b200000]"
        )
        with pytest.raises(AssertionError, match=r"^expected \[0x7fff"):
            probe.check_operation(CPU, "signed_tolist", catalogue)

    def test_any_exception_an_operation_raises_is_a_finding_not_a_crash(self) -> None:
        def broken(on: object) -> int:
            raise KeyError("missing")

        found = probe.probe(CPU, probe.Operation("broken", "raises KeyError", 0, broken))
        assert (found.verdict, found.detail) == (OperationVerdict.RAISES, "KeyError: 'missing'")

    def test_a_finding_is_the_scenario_s_result(self, findings: dict[str, probe.Finding]) -> None:
        works = findings["clone"].to_result()
        assert (works.check, works.scenario, works.subject, works.backend) == (
            "uint64_operations::test_operation[clone]",
            SCENARIO,
            None,
            "cpu",
        )
        assert (works.outcome, works.message, works.example) == (Outcome.PASSED, None, None)
        raises = findings["add"].to_result()
        assert raises.outcome is Outcome.SKIPPED
        assert raises.message == f"raises {findings['add'].detail}"
        wrong = probe.probe(CPU, SIGNED_TOLIST).to_result()
        assert wrong.outcome is Outcome.FAILED
        assert wrong.message is not None
        assert wrong.message.startswith("AssertionError: expected [0x7fff")
        assert (wrong.example, wrong.body) == (
            {"operation": "signed_tolist"},
            "ptrport.check.probe:check_operation",
        )

    @pytest.mark.skipif(
        os.environ.get("PTRPORT_TEST_COMPILE") != "1",
        reason="compiles with inductor (3-25 s); set PTRPORT_TEST_COMPILE=1",
    )
    def test_a_compiled_add_gives_a_verdict(self) -> None:
        found = probe.probe(CPU, probe.find_operation("compiled:add"))
        assert found.verdict is not OperationVerdict.WRONG, found.detail


class TestProbeCommand:
    def _probe(self, directory: Path, *more: str) -> int:
        return main(
            [
                "probe",
                "--backend=cpu",
                "--report-dir",
                str(directory),
                "--platform-name=lab-cpu",
                *more,
            ]
        )

    def test_it_prints_a_table_and_writes_a_report_that_validates(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert self._probe(tmp_path) == 0
        lines = capsys.readouterr().out.splitlines()
        assert lines[0].startswith("cpu (")
        assert lines[0].endswith(" wrong")
        assert lines[1].split() == ["operation", "result", "detail"]
        rows = {line.split()[0]: line.split(maxsplit=2)[1:] for line in lines[2:] if line}
        assert rows["clone"] == ["works"]
        assert rows["add"][0] == "raises"
        assert lines[-1] == f"ptrport: recorded {len(probe.OPERATIONS)} {SCENARIO} results in " + (
            f"{tmp_path / 'lab-cpu.json'}"
        )
        path = tmp_path / "lab-cpu.json"
        assert schema.errors(json.loads(path.read_text()), schema.load_schema("report-2")) == []
        (loaded,) = load_reports([tmp_path])
        assert loaded.complete
        assert loaded.run["argv"][:2] == ["probe", "--backend=cpu"]
        assert [r.check for r in loaded.results] == [check_id(op.id) for op in probe.OPERATIONS]
        assert {(r.scenario, r.subject, r.backend) for r in loaded.results} == {
            (SCENARIO, None, "cpu")
        }
        add = next(r for r in loaded.results if r.check == check_id("add"))
        assert add.outcome is Outcome.SKIPPED
        assert add.message == f"raises {rows['add'][1]}"

    def test_it_replaces_only_its_results_in_an_existing_report(self, tmp_path: Path) -> None:
        others = [
            result("table_round_trip::test_an_entry_reads_back_bit_exact"),
            result("buffer_creation::test_pinned", Outcome.SKIPPED, message="no pinned memory"),
            result(check_id("add"), Outcome.PASSED, subject=None, on="xpu"),
        ]
        replaced = [
            result(check_id("add"), Outcome.PASSED, subject=None),
            result(check_id("retired"), Outcome.FAILED, subject=None, message="gone"),
        ]
        write_report(
            document("lab-cpu", [others[0], *replaced, *others[1:]], torch=TORCH), tmp_path
        )
        before = load_report(tmp_path / "lab-cpu.json")
        assert self._probe(tmp_path) == 0
        after = load_report(tmp_path / "lab-cpu.json")
        assert after.results[: len(others)] == tuple(others)
        assert len(after.results) == len(others) + len(probe.OPERATIONS)
        mine = [r for r in after.results if r.scenario == SCENARIO and r.backend == "cpu"]
        assert [r.check for r in mine] == [check_id(op.id) for op in probe.OPERATIONS]
        assert (before.fingerprint, before.run, before.complete) == (
            after.fingerprint,
            after.run,
            after.complete,
        )
        assert json.loads((tmp_path / "lab-cpu.json").read_text())["totals"] == after.totals

    def test_replacing_folds_in_a_killed_run_s_journal(self, tmp_path: Path) -> None:
        path = write_report(document("lab", [], status="running"), tmp_path)
        kept = result("table_round_trip::test_x")
        old = result(check_id("clone"), Outcome.FAILED, subject=None, message="old")
        journal_path(path).write_text(
            "".join(json.dumps(r.to_record()) + "\n" for r in (kept, old))
        )
        new = result(check_id("clone"), subject=None)
        replace_scenario_results(path, SCENARIO, ["cpu"], [new])
        assert not journal_path(path).exists()
        assert load_report(path).results == (kept, new)
        with pytest.raises(ValueError, match="is not of scenario"):
            replace_scenario_results(path, SCENARIO, ["cpu"], [kept])

    def test_it_refuses_a_report_made_with_another_torch(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        write_report(document("lab-cpu", [], torch="2.1.0"), tmp_path)
        assert self._probe(tmp_path) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert "made with torch 2.1.0, and this is torch" in line

    def test_it_exits_1_when_an_operation_is_wrong(
        self,
        tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        (tmp_path / "wrong_catalogue.py").write_text(WRONG_CATALOGUE)
        monkeypatch.syspath_prepend(tmp_path)
        monkeypatch.chdir(tmp_path)
        assert self._probe(tmp_path / "reports", "--operations=wrong_catalogue:OPERATIONS") == 1
        out = capsys.readouterr().out
        assert ": 2 work, 0 raise, 1 wrong" in out
        assert "signed_tolist  wrong   expected [0x7fffffffffffffff, " in out
        (loaded,) = load_reports([tmp_path / "reports"])
        wrong = loaded.results[-1]
        assert (wrong.check, wrong.outcome) == (check_id("signed_tolist"), Outcome.FAILED)
        assert wrong.message is not None
        assert wrong.message.startswith("AssertionError: expected [0x7fffffffffffffff, ")

    @pytest.mark.parametrize(
        ("argument", "says"),
        [
            ("--backend=bogus", "ptrport: unknown backend 'bogus'; known: cpu, cpu-usm, cpu-tbi"),
            ("--backend=xpu", "ptrport: backend xpu is not available: torch "),
            (
                "--operations=no_such_module:OPS",
                "ptrport: cannot import operation catalogue 'no_such_module:OPS': "
                "ModuleNotFoundError: No module named 'no_such_module'",
            ),
            (
                "--operations=ptrport.check.probe:VALUES",
                "not a sequence of ptrport.check.probe.Operation",
            ),
        ],
    )
    def test_bad_input_is_one_line_and_exit_2(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], argument: str, says: str
    ) -> None:
        assert main(["probe", argument, "--report-dir", str(tmp_path)]) == 2
        (line,) = capsys.readouterr().err.splitlines()
        assert says in line
        assert not list(tmp_path.iterdir())


class TestScenario:
    def test_it_records_a_result_per_operation_like_the_command(
        self, pytester: pytest.Pytester, findings: dict[str, probe.Finding]
    ) -> None:
        shutil.copy(SCENARIOS / "test_uint64_operations.py", pytester.path)
        run = pytester.runpytest(
            "--backend=cpu", "--platform-name=test-platform", "-p", "no:randomly"
        )
        works = sum(f.verdict is OperationVerdict.WORKS for f in findings.values())
        run.assert_outcomes(passed=works, skipped=len(findings) - works)
        recorded = json.loads((pytester.path / "reports" / "test-platform.json").read_text())
        by_check = {r["check"]: r for r in recorded["results"]}
        assert list(by_check) == [check_id(op.id) for op in probe.OPERATIONS]
        for name, found in findings.items():
            mine = by_check[check_id(name)]
            assert (mine["scenario"], mine["subject"], mine["backend"]) == (SCENARIO, None, "cpu")
            assert (mine["outcome"], mine["message"]) == (
                found.to_result().outcome.value,
                found.message,
            )
            assert found.to_result().nodeid == f"ptrport/scenarios/{mine['nodeid']}"


def _probe_results(verdicts: dict[str, str], on: str = "cpu") -> list[Result]:
    """Results of the probe scenario: ``works``, ``raises`` or ``wrong`` per operation."""
    outcomes = {
        "works": (Outcome.PASSED, None),
        "raises": (Outcome.SKIPPED, ADD_RAISES),
        "wrong": (Outcome.FAILED, "AssertionError: expected [0x8000000000000000], got [0x0]"),
    }
    return [
        result(check_id(name), outcomes[v][0], subject=None, on=on, message=outcomes[v][1])
        for name, v in verdicts.items()
    ]


class TestReportTooling:
    def test_support_reads_verdicts_only_from_its_own_scenario(self) -> None:
        (raises,) = _probe_results({"add": "raises"})
        assert verdict_of(raises) is OperationVerdict.RAISES
        assert label(OperationVerdict.RAISES, raises.message) == "raises NotImplementedError"
        assert operation_of(raises.check) == "add"
        other = result("buffer_creation::test_x", Outcome.SKIPPED, message=ADD_RAISES)
        assert verdict_of(other) is None
        unavailable = result(check_id("add"), Outcome.UNAVAILABLE, subject=None, message="x")
        assert verdict_of(unavailable) is None

    def test_the_matrix_has_a_uint64_operations_section_of_verdicts(self, tmp_path: Path) -> None:
        results = [
            *_probe_results({"clone": "works", "add": "raises", "lt": "wrong"}),
            result("round_trip::test_skipped", Outcome.SKIPPED, message=ADD_RAISES),
        ]
        matrix = build_matrix([report(tmp_path, "lab-cpu", results)])
        assert matrix.scenarios == ["round_trip", SCENARIO]
        text = matrix_markdown(matrix)
        section = text.split("## uint64 operations\n")[1].split("\n## ")[0]
        assert "| add | (none) | raises NotImplementedError |" in section
        assert "| clone | (none) | works |" in section
        assert "| lt | (none) | **wrong** (1) |" in section
        assert "| test_skipped | uint64/torch | skip |" in text
        assert "### (1) **wrong** uint64_operations::test_operation[lt]" in text
        page = to_html(matrix)
        assert "<h2>uint64 operations</h2>" in page
        title = ADD_RAISES.replace('"', "&quot;").replace("'", "&#x27;")
        assert f'<td class="skipped" title="{title}">raises NotImplementedError</td>' in page
        assert '<td class="skipped" title="raises NotImplementedError: ' in page
        assert '<th title="uint64_operations::test_operation[add]" scope="row">add</th>' in page

    def test_a_probe_report_from_the_command_merges_into_the_matrix(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert main(["probe", "--backend=cpu", "--report-dir", str(tmp_path / "r")]) == 0
        out = tmp_path / "matrix.md"
        assert main(["report", "merge", str(tmp_path / "r"), "-o", str(out)]) == 0
        text = out.read_text()
        assert "## uint64 operations" in text
        assert "| clone | (none) | works |" in text

    def test_the_diff_counts_a_worse_verdict_as_a_regression_and_a_better_one_as_fixed(
        self,
    ) -> None:
        before = {"clone": "works", "add": "raises", "lt": "raises", "max": "wrong", "eq": "works"}
        after = {"clone": "raises", "add": "works", "lt": "wrong", "max": "raises", "eq": "works"}
        elsewhere = result("buffer_creation::test_pinned")
        skipped = result("buffer_creation::test_pinned", Outcome.SKIPPED, message="no pin")
        found = diff_reports(
            [unwritten_report("lab", [elsewhere, *_probe_results(before)])],
            [unwritten_report("lab", [skipped, *_probe_results(after)])],
            expectations=Expectations.none(),
            coverage_drop=0.5,
        )
        (platform,) = found.platforms
        assert [operation_of(c.now.check) for c in platform.new_failures] == ["clone", "lt"]
        assert [operation_of(c.now.check) for c in platform.fixed] == ["add", "max"]
        assert found.regressions == 2
        # Probes that raise ran; only the other scenario's skip lowers coverage.
        assert (platform.executed_before, platform.executed_after) == (6, 5)
        text = to_markdown(found)
        assert (
            "| uint64_operations::test_operation[clone] | — | cpu | works | "
            "raises NotImplementedError |"
        ) in text
        assert "| uint64_operations::test_operation[add] | — | cpu | raises " in text
        assert "**Fixed (2)**" in text
