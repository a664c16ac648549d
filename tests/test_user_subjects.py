"""Users' own subjects: ``--subject`` resolution, the protocol check, the guard before a user's
``execute``, read-back validation, the worked example, and all of it through the plugin."""

from __future__ import annotations

import importlib
import json
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from ptrport.check.batches import Batch, Entry
from ptrport.check.contracts import Contract
from ptrport.check.subjects import AddressQueries, builtin_subjects
from ptrport.check.user_subjects import (
    ENTRY_POINT_GROUP,
    SubjectError,
    UserSubject,
    load_factory,
    select_subjects,
)
from ptrport.device.allocations import allocate
from ptrport.device.backends import CpuBackend
from ptrport.errors import HarnessError, UnknownName, UnsafeDereference
from ptrport.report.platform_report import load_reports
from tests.scenario_runs import copy_scenarios, use_profile

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "batched_copy_buffers.py"
EXAMPLE_SPEC = "examples.batched_copy_buffers"
CPU = CpuBackend()
HIGH = 0x8000000000000000
INTEL_ADDRESS = 0xFFFF85ABD4E00000

LIST_SUBJECT = """
class ListSubject:
    '''A table kept in Python lists: host rows, and the rows "on the device".'''

    description = "rows in lists"

    def __init__(self, name="list-subject"):
        self.name = name

    def create(self, capacity, backend):
        self.host, self.device = [], []

    def stage(self, batch):
        self.host += [(e.src, e.dst, e.nbytes) for e in batch.entries]

    def transfer(self, n):
        self.device = self.host[:n]

    def read_back(self, n):
        return self.device[:n]


def make():
    return ListSubject()


def make_clash():
    return ListSubject("uint64/torch")


def make_half():
    class Half:
        name = "half"

        def stage(self, batch):
            pass

    return Half()


def make_raising():
    raise RuntimeError("no device here\\nsecond line")


not_callable = 3


class factories:
    make = staticmethod(make)
"""


@pytest.fixture
def user_modules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory pytest "runs in", holding ``subjects_under_test.py``; ``sys.path`` and the
    modules imported from it are put back afterwards."""
    (tmp_path / "subjects_under_test.py").write_text(LIST_SUBJECT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    importlib.invalidate_caches()
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def _install_entry_points(directory: Path, monkeypatch: pytest.MonkeyPatch, lines: str) -> None:
    """A distribution in ``directory`` whose ``ptrport.subjects`` entry points
    importlib.metadata finds, as if installed."""
    dist = directory / "user_dist-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: user-dist\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{textwrap.dedent(lines)}")
    monkeypatch.syspath_prepend(str(directory))


def _one_line(exc: pytest.ExceptionInfo[BaseException]) -> str:
    message = str(exc.value)
    assert "\n" not in message, message
    return message


class TestSelectSubjects:
    def test_a_factory_is_imported_from_the_directory_pytest_runs_in(
        self, user_modules: Path
    ) -> None:
        chosen = select_subjects("subjects_under_test:make", builtin_subjects())
        (found,) = chosen.values()
        assert list(chosen) == ["list-subject"]
        assert isinstance(found, UserSubject)
        assert found.origin == "'subjects_under_test:make'"
        assert sys.path[0] == str(user_modules)

    def test_built_in_names_and_factories_mix_in_the_order_given(self, user_modules: Path) -> None:
        chosen = select_subjects(
            " int64/torch , subjects_under_test:make,uint64/ctypes,int64/torch", builtin_subjects()
        )
        assert list(chosen) == ["int64/torch", "list-subject", "uint64/ctypes"]

    def test_an_entry_point_whose_factory_raises_is_one_line_naming_both(
        self, user_modules: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _install_entry_points(
            user_modules,
            monkeypatch,
            """
            lists = subjects_under_test:make
            raising = subjects_under_test:make_raising
            """,
        )
        with pytest.raises(SubjectError) as raised:
            select_subjects(None, builtin_subjects())
        assert _one_line(raised) == (
            "subject factory 'subjects_under_test:make_raising' (entry point 'raising') raised "
            "RuntimeError: no device here"
        )

    def test_an_entry_point_is_selected_by_its_name_or_taken_by_default(
        self, user_modules: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _install_entry_points(user_modules, monkeypatch, "lists = subjects_under_test:make\n")
        builtin = builtin_subjects()
        everything = select_subjects(None, builtin)
        assert list(everything) == [*builtin, "list-subject"]
        assert everything["uint64/torch"] is builtin["uint64/torch"]
        (found,) = select_subjects("lists", builtin).values()
        assert isinstance(found, UserSubject)
        assert found.origin == "'subjects_under_test:make' (entry point 'lists')"

    def test_an_entry_point_that_fails_to_load_is_one_line_naming_it(
        self, user_modules: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _install_entry_points(user_modules, monkeypatch, "gone = no_such_module:make\n")
        with pytest.raises(SubjectError) as raised:
            select_subjects("gone", builtin_subjects())
        assert _one_line(raised) == (
            "cannot load subject factory 'no_such_module:make' (entry point 'gone'): "
            "ModuleNotFoundError: No module named 'no_such_module'"
        )

    def test_an_entry_point_named_like_a_built_in_subject_is_refused(
        self, user_modules: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _install_entry_points(
            user_modules, monkeypatch, "uint64/torch = subjects_under_test:make\n"
        )
        with pytest.raises(SubjectError, match="has a built-in subject's name; rename it"):
            select_subjects(None, builtin_subjects())

    def test_an_unknown_name_lists_the_known_ones_entry_points_included(
        self, user_modules: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _install_entry_points(user_modules, monkeypatch, "lists = subjects_under_test:make\n")
        builtin = builtin_subjects()
        with pytest.raises(UnknownName) as raised:
            select_subjects("uint64/torch,nope", builtin)
        assert _one_line(raised) == (
            f"unknown subject 'nope'; known: {', '.join(builtin)}, lists; "
            "or name a factory as module:factory"
        )

    @pytest.mark.parametrize("spec", ["", " , ,"])
    def test_a_spec_naming_nothing_is_an_unknown_name(self, spec: str) -> None:
        with pytest.raises(UnknownName, match=r"^no subject named; known: uint64/triton, "):
            select_subjects(spec, builtin_subjects())

    @pytest.mark.parametrize(
        ("spec", "message"),
        [
            (
                "no_such_package.mod:make",
                "cannot import subject factory 'no_such_package.mod:make': "
                "ModuleNotFoundError: No module named 'no_such_package'",
            ),
            (
                "subjects_under_test:gone",
                "cannot load subject factory 'subjects_under_test:gone': "
                "module 'subjects_under_test' has no attribute 'gone'",
            ),
            (
                "subjects_under_test:not_callable",
                "subject factory 'subjects_under_test:not_callable' is not callable: "
                "it is of type int",
            ),
            (
                "subjects_under_test:make_raising",
                "subject factory 'subjects_under_test:make_raising' raised "
                "RuntimeError: no device here",
            ),
            (
                "subjects_under_test:make_half",
                "subject from 'subjects_under_test:make_half' does not fit the protocol: "
                "missing create, transfer, read_back",
            ),
            (
                "subjects_under_test:make_clash",
                "subject from 'subjects_under_test:make_clash' is named 'uint64/torch', like a "
                "built-in subject; give it another name",
            ),
            (":make", "subject factory ':make' must be given as module:attribute"),
            (
                "subjects_under_test:",
                "subject factory 'subjects_under_test:' must be given as module:attribute",
            ),
        ],
        ids=[
            "missing-module",
            "missing-attribute",
            "not-callable",
            "factory-raises",
            "missing-methods",
            "built-in-name",
            "no-module",
            "no-factory",
        ],
    )
    def test_a_factory_that_cannot_give_a_subject_is_one_line_saying_why(
        self, user_modules: Path, spec: str, message: str
    ) -> None:
        with pytest.raises(SubjectError) as raised:
            select_subjects(spec, builtin_subjects())
        assert _one_line(raised).startswith(message)
        assert isinstance(raised.value, HarnessError)

    def test_a_syntax_error_in_the_users_module_is_one_line(self, user_modules: Path) -> None:
        (user_modules / "broken_syntax.py").write_text("def make(:\n")
        importlib.invalidate_caches()
        with pytest.raises(SubjectError) as raised:
            select_subjects("broken_syntax:make", builtin_subjects())
        assert _one_line(raised).startswith(
            "cannot import subject factory 'broken_syntax:make': SyntaxError: "
        )

    def test_two_user_subjects_with_one_name_are_refused(self, user_modules: Path) -> None:
        (user_modules / "twin.py").write_text(
            "from subjects_under_test import ListSubject\n\ndef make():\n    return ListSubject()\n"
        )
        importlib.invalidate_caches()
        with pytest.raises(SubjectError) as raised:
            select_subjects("subjects_under_test:make,twin:make", builtin_subjects())
        assert _one_line(raised) == (
            "subjects from 'subjects_under_test:make' and 'twin:make' are both named "
            "'list-subject'; give them different names"
        )

    def test_a_dotted_attribute_names_a_factory_inside_the_module(self, user_modules: Path) -> None:
        factory = load_factory("subjects_under_test:factories.make")
        assert type(factory()).__name__ == "ListSubject"


class Fake:
    """A user's subject whose device table is whatever the test sets, recording calls."""

    name = "fake"

    def __init__(self, rows: list[Any] | None = None) -> None:
        self.rows: list[Any] = rows or []
        self.calls: list[str] = []

    def create(self, capacity: int, backend: object) -> None:
        self.calls.append("create")

    def stage(self, batch: Batch) -> None:
        self.calls.append("stage")

    def transfer(self, n: int) -> None:
        self.calls.append("transfer")

    def read_back(self, n: int) -> list[Any]:
        return self.rows[:n]

    def execute(self, n: int) -> None:
        self.calls.append(f"execute({n})")


class SyncCountingCpu(CpuBackend):
    def __init__(self) -> None:
        self.synchronized = 0

    def synchronize(self) -> None:
        self.synchronized += 1


class TestProtocol:
    def test_optional_members_get_defaults(self) -> None:
        class Minimal:
            name = "minimal"
            create = stage = transfer = read_back = staticmethod(lambda *a: None)

        wrapped = UserSubject(Minimal(), "'m:make'")
        assert wrapped.description == "user subject 'm:make'"
        assert wrapped.exposed_by == frozenset()
        assert wrapped.executes is False
        assert wrapped.unavailable_reason(CPU) is None
        assert repr(wrapped) == "<user subject minimal from 'm:make'>"

    def test_declared_members_are_taken_as_given(self) -> None:
        inner = Fake()
        inner.description = "mine"  # type: ignore[attr-defined]
        inner.exposed_by = ["table_round_trip", "mixed_batches"]  # type: ignore[attr-defined]
        inner.unavailable_reason = lambda backend: f"not on {backend.name}"  # type: ignore[attr-defined]
        wrapped = UserSubject(inner, "test")
        assert wrapped.description == "mine"
        assert wrapped.exposed_by == {"table_round_trip", "mixed_batches"}
        assert wrapped.executes is True
        assert wrapped.unavailable_reason(CPU) == "not on cpu"

    @pytest.mark.parametrize(
        ("answer", "reason"),
        [
            (lambda backend: 42, "unavailable_reason() returned 42, not a str or None"),
            (
                lambda backend: 1 / 0,
                "unavailable_reason() raised ZeroDivisionError: division by zero",
            ),
            (lambda backend: "", None),
        ],
        ids=["not-a-str", "raises", "empty"],
    )
    def test_a_broken_unavailable_reason_is_a_reason_and_never_a_crash(
        self, answer: Any, reason: str | None
    ) -> None:
        inner = Fake()
        inner.unavailable_reason = answer  # type: ignore[attr-defined]
        assert UserSubject(inner, "test").unavailable_reason(CPU) == reason

    @pytest.mark.parametrize(
        ("attribute", "value", "message"),
        [
            ("name", 7, "name is 7, not a non-empty str"),
            ("name", " ", "name is ' ', not a non-empty str"),
            ("description", ["x"], "description is ['x'], not a str"),
            ("exposed_by", "table_round_trip", "exposed_by is 'table_round_trip', not a "),
            ("exposed_by", [1], "exposed_by is [1], not a collection of scenario names"),
            ("execute", True, "execute is True, not a method"),
            ("read_back", None, "missing read_back"),
        ],
    )
    def test_members_of_the_wrong_kind_are_named(
        self, attribute: str, value: object, message: str
    ) -> None:
        inner = Fake()
        setattr(inner, attribute, value)
        with pytest.raises(SubjectError) as raised:
            UserSubject(inner, "'m:make'")
        assert _one_line(raised).startswith("subject from 'm:make' does not fit the protocol: ")
        assert message in str(raised.value)

    def test_a_nameless_object_without_methods_is_missing_all_of_them(self) -> None:
        with pytest.raises(SubjectError) as raised:
            UserSubject(object(), "'m:make'")
        assert _one_line(raised) == (
            "subject from 'm:make' does not fit the protocol: "
            "missing name, create, stage, transfer, read_back"
        )


def _real_batch() -> Batch:
    source = allocate(CPU, numel=64, fill_seed=1)
    target = allocate(CPU, numel=64, fill_seed=2)
    return Batch((Entry(source.address, target.address + 8, 32, source, target),))


class TestExecuteGuard:
    def test_a_table_pointing_at_a_synthetic_address_is_refused_before_execute_runs(self) -> None:
        batch = _real_batch()
        (real,) = batch.entries
        inner = Fake([(real.src, real.dst, real.nbytes), (INTEL_ADDRESS, real.dst, 8)])
        wrapped = UserSubject(inner, "test")
        wrapped.create(2, CPU)
        wrapped.stage(batch)
        wrapped.transfer(2)
        with pytest.raises(UnsafeDereference, match="refusing to dereference 0xffff85abd4e00000"):
            wrapped.execute(2)
        assert inner.calls == ["create", "stage", "transfer"]

    def test_admitted_entries_are_executed_then_the_backend_is_synchronized(self) -> None:
        batch = _real_batch()
        (real,) = batch.entries
        inner = Fake([(real.src, real.dst, real.nbytes), (HIGH, INTEL_ADDRESS, 0)])
        backend = SyncCountingCpu()
        wrapped = UserSubject(inner, "test")
        wrapped.create(2, backend)
        wrapped.stage(batch)
        (copy,) = wrapped.execute(2)
        assert (copy.src, copy.dst, copy.nbytes) == (real.src, real.dst, 32)
        assert copy.src_allocation is real.src_allocation
        assert inner.calls[-1] == "execute(2)"
        assert backend.synchronized == 1

    def test_create_forgets_the_allocations_of_earlier_batches(self) -> None:
        batch = _real_batch()
        (real,) = batch.entries
        inner = Fake([(real.src, real.dst, real.nbytes)])
        wrapped = UserSubject(inner, "test")
        wrapped.create(1, CPU)
        wrapped.stage(batch)
        wrapped.create(1, CPU)
        with pytest.raises(UnsafeDereference):
            wrapped.execute(1)
        assert "execute(1)" not in inner.calls

    def test_a_subject_without_execute_or_before_create_cannot_execute(self) -> None:
        class Minimal:
            name = "minimal"
            create = stage = transfer = read_back = staticmethod(lambda *a: [])

        with pytest.raises(SubjectError, match=r"^minimal has no execute\(\)$"):
            UserSubject(Minimal(), "test").execute(0)
        with pytest.raises(SubjectError, match=r"^fake: create\(\) was not called$"):
            UserSubject(Fake(), "test").execute(0)


class TestReadBack:
    def test_rows_of_ints_lists_and_numpy_integers_read_back_as_tuples(self) -> None:
        rows = [(HIGH, 2**64 - 1, 0), [np.uint64(2**63 + 8), torch.tensor(16), np.int64(3)]]
        assert UserSubject(Fake(rows), "test").read_back(2) == [
            (HIGH, 2**64 - 1, 0),
            (2**63 + 8, 16, 3),
        ]

    @pytest.mark.parametrize(
        ("rows", "message"),
        [
            (None, "fake: read_back(1) returned None, not a list of (src, dst, nbytes)"),
            ("abc", "fake: read_back(1) returned 'abc', not a list of (src, dst, nbytes)"),
            ([], "fake: read_back(1) returned 0 rows, not 1"),
            ([(1, 2, 3), (4, 5, 6)], "fake: read_back(1) returned 2 rows, not 1"),
            ([7], "fake: read_back(1): row 0 is 7, not a (src, dst, nbytes) tuple"),
            ([(1, 2)], "fake: read_back(1): row 0 is (1, 2), not a (src, dst, nbytes) tuple"),
            ([(1.0, 2, 3)], "fake: read_back(1): row 0 src is 1.0 (float), not an int"),
            ([(1, True, 3)], "fake: read_back(1): row 0 dst is True (bool), not an int"),
            (
                [(-(2**63), 0, 0)],
                "fake: read_back(1): row 0 src is -9223372036854775808, outside [0, 2**64); "
                "a signed int64? read it back as unsigned",
            ),
            ([(0, 0, 2**64)], "fake: read_back(1): row 0 nbytes is 18446744073709551616, "),
        ],
    )
    def test_a_read_back_that_is_not_n_unsigned_rows_is_one_line_saying_what(
        self, rows: Any, message: str
    ) -> None:
        inner = Fake()
        inner.read_back = lambda n: rows  # type: ignore[method-assign]
        with pytest.raises(SubjectError) as raised:
            UserSubject(inner, "test").read_back(1)
        assert _one_line(raised).startswith(message)


@pytest.fixture
def example(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The worked example importable as the README says: from the repository root."""
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield


class TestWorkedExample:
    def test_the_fix_holds_high_addresses_and_copies_real_entries_with_its_own_kernel(
        self, example: None
    ) -> None:
        (fixed,) = select_subjects(f"{EXAMPLE_SPEC}:make_subject", builtin_subjects()).values()
        # As in a check: its @triton.jit kernel is interpreted, and may touch only memory
        # whose address was taken there.
        with CPU.running():
            (entry,) = _real_batch().entries
            batch = Batch((Entry(HIGH, INTEL_ADDRESS, 0), entry))
            fixed.create(3, CPU)
            fixed.stage(Batch(batch.entries[:1]))
            fixed.stage(Batch(batch.entries[1:]))
            fixed.transfer(2)
            assert fixed.read_back(2) == [(HIGH, INTEL_ADDRESS, 0), (entry.src, entry.dst, 32)]
            (copy,) = fixed.execute(2)
        assert copy.nbytes == 32
        assert entry.src_allocation is not None and entry.dst_allocation is not None
        assert torch.equal(entry.dst_allocation.payload[8:40], entry.src_allocation.payload[:32])
        assert entry.dst_allocation.guards_intact()

    def test_the_broken_variant_overflows_at_the_first_high_address(self, example: None) -> None:
        (broken,) = select_subjects(f"{EXAMPLE_SPEC}:broken", builtin_subjects()).values()
        assert broken.exposed_by == frozenset()
        broken.create(2, CPU)
        broken.stage(Batch((Entry(HIGH - 1, 0, 0),)))
        with pytest.raises(OverflowError):
            broken.stage(Batch((Entry(HIGH, 0, 0),)))

    def test_staging_past_the_capacity_is_refused_and_the_offset_stays(self, example: None) -> None:
        (fixed,) = select_subjects(f"{EXAMPLE_SPEC}:make_subject", builtin_subjects()).values()
        fixed.create(1, CPU)
        fixed.stage(Batch((Entry(1, 2, 3),)))
        with pytest.raises(IndexError, match="index 1 is out of bounds"):
            fixed.stage(Batch((Entry(4, 5, 6),)))
        assert fixed.inner.offset == 1

    def test_it_is_the_engine_code_as_written_with_int32_sizes_declared(
        self, example: None
    ) -> None:
        jit = pytest.importorskip("triton.runtime.jit")
        module = importlib.import_module(EXAMPLE_SPEC)
        assert isinstance(module.batch_memcpy_kernel, jit.JITFunction)
        assert "interpreted_on_cpu" not in EXAMPLE.read_text()
        (fixed,) = select_subjects(f"{EXAMPLE_SPEC}:make_subject", builtin_subjects()).values()
        assert fixed.contract == Contract(max_nbytes=2**31 - 1)
        fixed.create(2, CPU)
        assert fixed.inner.sizes.cpu.dtype == torch.int32
        assert fixed.inner.src_ptrs.cpu.dtype == torch.uint64


# Inner runs happen in this process, so the profile they load is put back when they end.
@pytest.fixture
def user_run(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project directory laid out like a fresh clone: the example package and scenarios."""
    use_profile(pytester)
    package = pytester.mkpydir("examples")
    (package / EXAMPLE.name).write_text(EXAMPLE.read_text())
    for name in [m for m in sys.modules if m == "examples" or m.startswith("examples.")]:
        monkeypatch.delitem(sys.modules, name)
    return pytester


class TestThroughThePlugin:
    def test_the_example_fix_passes_round_trip_batch_copy_and_mixed_batches(
        self, user_run: pytest.Pytester
    ) -> None:
        copy_scenarios(user_run, "test_table_round_trip", "test_batch_copy", "test_mixed_batches")
        result = user_run.runpytest(
            "--backend=cpu",
            f"--subject={EXAMPLE_SPEC}:make_subject",
            "--platform-name=test-platform",
        )
        result.assert_outcomes(passed=4)
        result.stdout.fnmatch_lines(["ptrport: subjects batched-copy-buffers"])
        (report,) = load_reports([user_run.path / "reports"])
        assert {(r.subject, r.outcome.value) for r in report.results} == {
            ("batched-copy-buffers", "passed")
        }
        assert all(r.examples > 0 for r in report.results)

    def test_the_example_bug_fails_with_the_counterexample_0x8000000000000000(
        self, user_run: pytest.Pytester
    ) -> None:
        copy_scenarios(user_run, "test_table_round_trip", "test_mixed_batches")
        result = user_run.runpytest(
            "--backend=cpu", f"--subject={EXAMPLE_SPEC}:broken", "--platform-name=test-platform"
        )
        result.assert_outcomes(failed=3)
        (report,) = load_reports([user_run.path / "reports"])
        assert len(report.results) == 3
        for found in report.results:
            assert found.subject == "batched-copy-buffers-int64"
            assert found.outcome.value == "failed"
            assert found.message is not None and found.message.startswith("OverflowError")
            assert "0x8000000000000000" in json.dumps(found.example)

    def test_the_example_fix_copies_real_entries_above_2_63_on_the_upper_half_backends(
        self, user_run: pytest.Pytester
    ) -> None:
        pytest.importorskip("triton")
        copy_scenarios(user_run, "test_batch_copy")
        result = user_run.runpytest(
            "--backend=cpu-usm,cpu-tbi",
            f"--subject={EXAMPLE_SPEC}:make_subject",
            "--platform-name=test-platform",
        )
        # Isolated (a user's subject): each check in a child, presenting addresses there.
        result.assert_outcomes(passed=2)
        result.stdout.fnmatch_lines(["ptrport: batched-copy-buffers declares nbytes <= 0x7fffffff"])
        (report,) = load_reports([user_run.path / "reports"])
        assert report.run["contracts"] == {
            "batched-copy-buffers": {"max_nbytes": 2**31 - 1, "alignment": 1}
        }
        copies = [r for r in report.results if r.scenario == "batch_copy"]
        assert {r.backend for r in copies} == {"cpu-usm", "cpu-tbi"}
        for found in copies:
            assert found.outcome.value == "passed" and found.copied
            for entry in found.copied:
                assert int(entry["src"], 16) >= HIGH and int(entry["dst"], 16) >= HIGH
                assert entry["nbytes"] > 0
            top = 0xFF if found.backend == "cpu-usm" else 0xB4
            assert {int(e["src"], 16) >> 56 for e in found.copied} == {top}

    def test_the_example_bug_fails_a_plain_copy_of_real_tensors_on_cpu_usm(
        self, user_run: pytest.Pytester
    ) -> None:
        pytest.importorskip("triton")
        copy_scenarios(user_run, "test_batch_copy")
        common = [f"--subject={EXAMPLE_SPEC}:broken", "--no-isolate", "--platform-name=p"]
        user_run.runpytest("--backend=cpu", *common).assert_outcomes(passed=1)
        result = user_run.runpytest("--backend=cpu-usm", *common)
        result.assert_outcomes(failed=1)
        (report,) = load_reports([user_run.path / "reports"])
        (found,) = report.results
        assert found.message is not None and found.message.startswith("OverflowError")
        assert found.example is not None
        (entry,) = found.example["batch"]["entries"]
        assert entry["synthetic"] is False
        assert int(entry["src"], 16) >= HIGH and int(entry["dst"], 16) >= HIGH
        # Described after the check, the entry still lies inside its allocation, as a repro
        # rebuilds it.
        for side in ("src", "dst"):
            allocation = entry[f"{side}_allocation"]
            assert int(allocation["address"], 16) >= HIGH
            assert 0 <= entry[f"{side}_offset"] <= allocation["nbytes"]

    @pytest.mark.parametrize(
        ("spec", "line"),
        [
            (
                f"{EXAMPLE_SPEC}:gone",
                f"ERROR: --subject: cannot load subject factory '{EXAMPLE_SPEC}:gone': "
                f"module '{EXAMPLE_SPEC}' has no attribute 'gone'",
            ),
            (
                "nope",
                "ERROR: --subject: unknown subject 'nope'; known: uint64/triton, *",
            ),
        ],
        ids=["missing-factory", "unknown-name"],
    )
    def test_a_bad_spec_is_a_one_line_usage_error(
        self, user_run: pytest.Pytester, spec: str, line: str
    ) -> None:
        copy_scenarios(user_run, "test_table_round_trip")
        result = user_run.runpytest("--backend=cpu", f"--subject={spec}")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        lines = [text for text in result.stderr.lines if text.strip()]
        assert len(lines) == 1, lines
        result.stderr.fnmatch_lines([line])
        assert not (user_run.path / "reports").exists()


def test_a_user_subject_answers_address_queries_only_if_its_object_does() -> None:
    with_queries = builtin_subjects()["uint64/torch"]
    wrapped = UserSubject(with_queries, "'tests:with_queries'")
    assert isinstance(wrapped, AddressQueries)
    wrapped.create(2, CPU)
    wrapped.stage(Batch((Entry(2**63, 0, 0), Entry(0x1000, 0, 0))))
    wrapped.transfer(2)
    assert wrapped.order(2) == [1, 0]
    assert wrapped.high_bits(2, 63) == [1, 0]

    class Plain:
        name = "plain"

        def create(self, capacity: int, backend: object) -> None: ...
        def stage(self, batch: object) -> None: ...
        def transfer(self, n: int) -> None: ...
        def read_back(self, n: int) -> list[tuple[int, int, int]]:
            return []

    assert not isinstance(UserSubject(Plain(), "'tests:plain'"), AddressQueries)
