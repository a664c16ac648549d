"""Crash isolation end to end: a subject that segfaults and one that hangs each cost one result,
``crashed`` or ``timed out`` with the inputs of the example they were in, and every other
result of the run is there and right."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ptrport.report.records import Outcome
from ptrport.run import children
from tests.scenario_runs import copy_scenarios, signal_when_started, use_profile

HERE = Path(__file__).resolve().parent


def _setup(pytester: pytest.Pytester, *scenarios: str) -> None:
    use_profile(pytester, max_examples=10)
    pytester.makepyfile(crashing_subjects=(HERE / "crashing_subjects.py").read_text())
    copy_scenarios(pytester, *scenarios)


def _results(pytester: pytest.Pytester) -> dict[tuple[str, str], dict[str, Any]]:
    report = json.loads((pytester.path / "reports" / "iso.json").read_text())
    assert report["complete"] is True
    return {(r["check"], r["subject"]): r for r in report["results"]}


COPY = "batch_copy::test_real_entries_are_copied_exactly"


def _run_crashing_and_hanging(pytester: pytest.Pytester, *more: str) -> pytest.RunResult:
    """The copy and round-trip scenarios over a subject that segfaults in ``execute``, one that
    hangs there, and a built-in one, on the CPU (users' subjects run isolated)."""
    _setup(pytester, "test_batch_copy", "test_table_round_trip")
    return pytester.runpytest_subprocess(
        "--backend=cpu",
        "--subject=crashing_subjects:segfaulting,crashing_subjects:hanging,uint64/torch",
        "--example-timeout=3",
        "--platform-name=iso",
        "-p",
        "no:cacheprovider",
        *more,
    )


def test_a_segfault_and_a_hang_cost_one_result_each_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    result = _run_crashing_and_hanging(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*crashed: the check's process was killed by SIGSEGV in example *",
            "*timed out: no new example for 3 s (--example-timeout); killed in example *",
        ]
    )
    results = _results(pytester)
    assert len(results) == 9
    crashed, hung = results[(COPY, "segfaulting")], results[(COPY, "hanging")]
    assert crashed["outcome"] == Outcome.CRASHED.value
    assert hung["outcome"] == Outcome.TIMED_OUT.value
    for lost in (crashed, hung):
        entries = lost["example"]["batch"]["entries"]
        assert entries and all(e["src"].startswith("0x") and len(e["src"]) == 18 for e in entries)
        assert lost["examples"] >= 1
    others = [
        r for key, r in results.items() if key not in {(COPY, "segfaulting"), (COPY, "hanging")}
    ]
    assert {r["outcome"] for r in others} == {"passed"}
    assert {r["subject"] for r in others} == {"segfaulting", "hanging", "uint64/torch"}
    # One child served every check; the crash and the hang each cost it one replacement.
    result.stdout.fnmatch_lines(
        [
            "isolation: 3 child processes for 6 isolated checks "
            "(restarted after 1 crashed, 1 timed out, 0 failed), forked from a warm process"
        ]
    )


def test_under_xdist_each_worker_keeps_its_own_child_and_the_results_are_the_same(
    pytester: pytest.Pytester,
) -> None:
    result = _run_crashing_and_hanging(pytester, "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    results = _results(pytester)
    assert len(results) == 9
    assert results[(COPY, "segfaulting")]["outcome"] == Outcome.CRASHED.value
    assert results[(COPY, "hanging")]["outcome"] == Outcome.TIMED_OUT.value
    assert sorted(r["outcome"] for r in results.values()).count("passed") == 7
    (line,) = [line for line in result.stdout.lines if line.startswith("isolation: ")]
    started = int(line.split()[1])
    assert line.endswith(
        "for 6 isolated checks (restarted after 1 crashed, 1 timed out, 0 failed), "
        "forked from a warm process"
    )
    assert 3 <= started <= 4, line  # a child per worker that ran checks, plus the two replaced


LEFT_OVER = """
import os

import pytest
import torch

from ptrport.device import presentation

UNPATCHED = torch.Tensor.data_ptr


@pytest.fixture(autouse=True)
def nothing_left_from_the_check_before(request):
    # Fixtures run before the check's backend scope: whatever the check before presented or
    # patched in this process must be undone by now.
    assert torch.Tensor.data_ptr is UNPATCHED
    assert presentation.active() is None
    with open("processes.txt", "a") as out:
        out.write(f"{request.node.originalname} {os.getpid()}\\n")
"""

CHECKS_IN_ONE_CHILD = """
import torch


def test_1_presents_an_upper_half_address(backend):
    assert torch.zeros(4).data_ptr() >= 2**63


def test_2_presents_one_again(backend):
    assert torch.zeros(4).data_ptr() >= 2**63


def test_3_fails(backend):
    assert False, "a failure that may have left the process in any state"


def test_4_runs_after_the_failure(backend):
    assert torch.zeros(4).data_ptr() >= 2**63
"""


def test_checks_share_a_child_with_nothing_left_over_and_a_failure_gets_a_fresh_one(
    pytester: pytest.Pytester,
) -> None:
    use_profile(pytester)
    (pytester.path / "conftest.py").write_text(
        (pytester.path / "conftest.py").read_text() + LEFT_OVER
    )
    pytester.makepyfile(test_scenario=CHECKS_IN_ONE_CHILD)
    result = pytester.runpytest_subprocess(
        "--backend=cpu-usm", "--isolate", "-p", "no:cacheprovider", "--platform-name=iso"
    )
    result.assert_outcomes(passed=3, failed=1)
    lines = (pytester.path / "processes.txt").read_text().split()
    process = dict(zip(lines[::2], lines[1::2], strict=True))
    assert len(process) == 4 and os.getpid() != int(
        process["test_1_presents_an_upper_half_address"]
    )
    first = process["test_1_presents_an_upper_half_address"]
    assert process["test_2_presents_one_again"] == first
    assert process["test_3_fails"] == first
    assert process["test_4_runs_after_the_failure"] != first
    result.stdout.fnmatch_lines(
        [
            "isolation: 2 child processes for 4 isolated checks "
            "(restarted after 0 crashed, 0 timed out, 1 failed), forked from a warm process"
        ]
    )


def test_a_check_over_several_subjects_on_one_backend_runs_in_one_child(
    pytester: pytest.Pytester,
) -> None:
    # A fresh child is for the same check on another backend: another subject is another check.
    use_profile(pytester, max_examples=5)
    copy_scenarios(pytester, "test_table_round_trip")
    result = pytester.runpytest_subprocess(
        "--backend=cpu",
        "--subject=uint64/torch,int64-bitcast/torch",
        "--isolate",
        "--platform-name=iso",
        "-p",
        "no:cacheprovider",
    )
    assert result.ret == pytest.ExitCode.OK
    (line,) = [line for line in result.stdout.lines if line.startswith("isolation: ")]
    checks = int(line.split()[5])
    assert checks >= 4, line
    assert line.startswith(f"isolation: 1 child process for {checks} isolated checks"), line


def test_an_isolated_control_is_caught_with_its_counterexample_as_in_process(
    pytester: pytest.Pytester,
) -> None:
    _setup(pytester, "test_table_round_trip")
    result = pytester.runpytest_subprocess(
        "--backend=cpu",
        "--subject=int64/torch,uint64/torch",
        "--isolate",
        "--platform-name=iso",
        "-p",
        "no:cacheprovider",
        "-k",
        "an_entry",
    )
    result.assert_outcomes(passed=1, xfailed=1)
    caught = _results(pytester)[
        ("table_round_trip::test_an_entry_reads_back_bit_exact", "int64/torch")
    ]
    assert caught["outcome"] == "xfailed"
    assert "0x8000000000000000" in json.dumps(caught["example"])
    assert caught["found_after"] >= 1


def _child(tmp_path: Path, then: str) -> children.Child:
    """A stand-in child: it takes its first command, says it started it and is in example 2,
    then does ``then``."""
    said = {"command": 1, "count": 2, "example": {"src": "0x8000000000000000"}}
    script = (
        "import json, os, sys, time\n"
        "commands, answers = map(int, sys.argv[-1].split('=')[1].split(','))\n"
        "os.read(commands, 4096)\n"
        f"os.write(answers, (json.dumps({said!r}) + '\\n').encode())\n"
        f"{then}\n"
    )
    return children.Child.spawn([sys.executable, "-c", script], tmp_path)


def test_a_child_that_exits_in_a_check_without_its_result_is_a_crash(tmp_path: Path) -> None:
    child = _child(tmp_path, "os._exit(3)")
    assert child.send("a.py::test_a") == 1
    ended = child.wait(1, example_timeout=5)
    assert ended is not None and ended.outcome == Outcome.CRASHED
    assert ended.message == (
        "crashed: the check's process exited with status 3 without a result in example 2"
    )
    assert ended.example == {"src": "0x8000000000000000"} and ended.examples == 2
    child.close()


def test_a_child_that_stops_making_progress_is_killed(tmp_path: Path) -> None:
    child = _child(tmp_path, "time.sleep(60)")
    assert child.send("a.py::test_a") == 1
    ended = child.wait(1, example_timeout=1)
    assert ended is not None and ended.outcome == Outcome.TIMED_OUT
    assert ended.example == {"src": "0x8000000000000000"} and ended.examples == 2
    assert ended.duration_s < 30
    assert child.process.poll() == -9
    child.close()


def test_a_child_that_ends_before_starting_a_check_has_not_crashed_in_it(tmp_path: Path) -> None:
    child = children.Child.spawn([sys.executable, "-c", "pass"], tmp_path)
    number = child.send("a.py::test_a")
    assert number is None or child.wait(number, example_timeout=5) is None
    child.close()


PROCESSES = """
import os

import pytest

pytestmark = pytest.mark.ptrport(backends=["cpu"])


@pytest.fixture(autouse=True)
def record_the_process(request):
    with open("processes.txt", "a") as out:
        out.write(f"{request.node.name} {os.getpid()} {os.getppid()}\\n")
"""

CRASH_AND_HANG = (
    PROCESSES
    + """

def test_1_segfaults(ptrport_device):
    import ctypes

    ctypes.string_at(0)


def test_2_hangs(ptrport_device):
    import time

    time.sleep(120)


def test_3_passes_after_them(ptrport_device):
    assert ptrport_device.name == "cpu"
"""
)


def _outcomes(pytester: pytest.Pytester) -> list[tuple[str, str, str]]:
    report = json.loads((pytester.path / "reports" / "iso.json").read_text())
    return sorted((r["check"], r["backend"], r["outcome"]) for r in report["results"])


def _processes(pytester: pytest.Pytester) -> dict[str, tuple[int, int]]:
    """Each check's process and its parent, by test name (with its parameters)."""
    rows = [line.split() for line in (pytester.path / "processes.txt").read_text().splitlines()]
    return {name: (int(pid), int(parent)) for name, pid, parent in rows}


def test_a_marked_segfault_and_hang_are_one_result_each_and_the_next_test_passes_in_a_fresh_fork(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_engine=CRASH_AND_HANG)
    result = pytester.runpytest_subprocess(
        "--backend=cpu", "--example-timeout=2", "--platform-name=iso", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = {r["check"]: (r["outcome"], r["message"]) for r in _results(pytester).values()}
    assert outcomes["test_engine.py::test_1_segfaults"] == (
        "crashed",
        "crashed: the check's process was killed by SIGSEGV before its first example "
        "(Fatal Python error: Segmentation fault)",
    )
    assert outcomes["test_engine.py::test_2_hangs"] == (
        "timed out",
        "timed out: no new example for 2 s (--example-timeout); killed in example 0",
    )
    assert outcomes["test_engine.py::test_3_passes_after_them"] == ("passed", None)
    processes = _processes(pytester)
    # Three children, each forked from the same warm process, which ran no check itself.
    assert len({pid for pid, _ in processes.values()}) == 3
    (warm,) = {parent for _, parent in processes.values()}
    assert warm not in {pid for pid, _ in processes.values()}
    result.stdout.fnmatch_lines(
        [
            "isolation: 3 child processes for 3 isolated checks "
            "(restarted after 1 crashed, 1 timed out, 0 failed), forked from a warm process"
        ]
    )


PASSING_AND_FAILING = """
import os
import threading
import time

import pytest
import torch

pytestmark = pytest.mark.ptrport

if os.environ.get("START_A_THREAD"):
    threading.Thread(target=time.sleep, args=(600,), name="engine-loader", daemon=True).start()


@pytest.mark.parametrize("dtype", [torch.uint64, torch.int64], ids=["uint64", "int64"])
def test_a_placed_address_in_a_table(ptrport_device, dtype):
    src = torch.zeros(64, dtype=torch.uint8)
    ptrport_device.place(src, at=1 << 63)
    table = torch.zeros(1, dtype=dtype)
    table.numpy()[0] = src.data_ptr()
"""


def test_where_a_test_module_starts_a_thread_children_are_spawned_with_the_same_results(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_engine=PASSING_AND_FAILING)
    run = ("--backend=cpu,cpu-usm", "--platform-name=iso", "-p", "no:cacheprovider")
    forked = pytester.runpytest_subprocess(*run)
    forked_results = _outcomes(pytester)
    (pytester.path / "reports" / "iso.json").unlink()
    monkeypatch.setenv("START_A_THREAD", "1")
    spawned = pytester.runpytest_subprocess(*run)
    assert forked.ret == spawned.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(pytester) == forked_results
    assert [outcome for *_, outcome in forked_results] == ["failed", "failed", "passed", "passed"]
    forked.stdout.fnmatch_lines(["isolation: 2 child processes *, forked from a warm process"])
    spawned.stdout.fnmatch_lines(
        [
            "isolation: 2 child processes for 4 isolated checks (restarted after 0 crashed, "
            "0 timed out, 2 failed), spawned, not forked: 1 thread (engine-loader) started "
            "since pytest loaded ptrport (* threads now, * after ptrport's imports, OpenBLAS's "
            "pools aside): a conftest, a plugin or a test module started them"
        ]
    )


SKIPS = """
import pytest


@pytest.mark.ptrport
def test_skips_in_its_body(ptrport_device):
    pytest.skip("no such kernel in this release")


@pytest.mark.ptrport
def test_passes(ptrport_device):
    assert ptrport_device.name == "cpu"
"""


def test_an_isolated_skip_is_in_pytests_summary_of_skips(pytester: pytest.Pytester) -> None:
    """A child's skip comes back with its location and reason as pytest made them: ``-rs``
    folds them (an assertion of pytest's, not an internal error)."""
    pytester.makepyfile(test_engine=SKIPS)
    result = pytester.runpytest_subprocess("--backend=cpu", "-p", "no:cacheprovider", "-rs")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] test_engine.py:6: no such kernel in this release",
            "*1 passed, 1 skipped*",
        ]
    )


LOGS_AT_IMPORT = """
import logging

import pytest

# A library's logger: its handler takes sys.stderr as it is at import, pytest's capture.
log = logging.getLogger("engine")
log.addHandler(logging.StreamHandler())
log.setLevel(logging.INFO)


@pytest.mark.ptrport
def test_logs_and_fails(ptrport_device):
    log.info("copying block 7 on %s", ptrport_device.name)
    assert False
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "in-process"])
def test_a_handler_bound_to_the_capture_at_import_logs_into_the_checks_capture(
    pytester: pytest.Pytester, isolate: bool
) -> None:
    """A forked child starts the capture again: a handler that a module bound to the old
    capture's stream writes to the new one, not into a closed file."""
    pytester.makepyfile(test_engine=LOGS_AT_IMPORT)
    isolation = () if isolate else ("--no-isolate",)
    result = pytester.runpytest_subprocess("--backend=cpu", "-p", "no:cacheprovider", *isolation)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*- Captured stderr call -*", "copying block 7 on cpu", "*1 failed*"]
    )
    assert "Logging error" not in result.stdout.str() + result.stderr.str()


def test_where_openmp_ran_before_the_run_children_are_spawned_and_their_parallel_ops_finish(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # a pool of two, on one core as on many
    # A conftest runs before ptrport's imports: the threads it leaves are counted as theirs.
    pytester.makeconftest("import torch\n\ntorch.ones(1 << 20).add_(1)\n")
    pytester.makepyfile(
        test_parallel="""
import pytest
import torch


@pytest.mark.ptrport(backends=["cpu"])
@pytest.mark.parametrize("n", range(3))
def test_an_openmp_parallel_op(ptrport_device, n):
    assert torch.ones(1 << 20).add_(n).sum().item() == (n + 1) * (1 << 20)
"""
    )
    result = pytester.runpytest_subprocess(
        "--backend=cpu", "--example-timeout=20", "--platform-name=iso", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.OK
    assert {r["outcome"] for r in _results(pytester).values()} == {"passed"}
    result.stdout.fnmatch_lines(
        [
            "isolation: 1 child process for 3 isolated checks *, spawned, not forked: OpenMP's "
            "thread pool was started before the fork *"
        ]
    )


def test_under_xdist_each_worker_forks_its_own_warm_process_and_the_results_are_the_serial_ones(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_engine=PROCESSES.replace('backends=["cpu"]', 'backends=["cpu", "cpu-usm"]')
        + """

@pytest.mark.parametrize("n", range(4))
def test_n(ptrport_device, n):
    assert n != 3 or ptrport_device.name != "cpu-usm"
"""
    )
    run = ("--backend=cpu,cpu-usm", "--platform-name=iso", "-p", "no:cacheprovider")
    serial = pytester.runpytest_subprocess(*run)
    serial_results = _outcomes(pytester)
    (pytester.path / "reports" / "iso.json").unlink()
    (pytester.path / "processes.txt").unlink()
    spread = pytester.runpytest_subprocess(*run, "-n", "2")
    assert serial.ret == spread.ret == pytest.ExitCode.TESTS_FAILED
    assert _outcomes(pytester) == serial_results
    assert ("test_engine.py::test_n[3]", "cpu-usm", "failed") in serial_results
    warm_processes = {parent for _, parent in _processes(pytester).values()}
    assert len(warm_processes) == 2, "each worker's children come from its own warm process"


def test_ctrl_c_ends_the_run_its_warm_process_and_its_child_and_keeps_the_results(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_engine=PROCESSES
        + """

def test_1_passes(ptrport_device):
    pass


def test_2_waits(ptrport_device):
    import pathlib
    import time

    pathlib.Path("waiting").touch()
    time.sleep(300)
"""
    )
    status, _ = signal_when_started(
        pytester, "waiting", signal.SIGINT, "--backend=cpu", "--platform-name=iso"
    )
    assert status == pytest.ExitCode.INTERRUPTED
    report = json.loads((pytester.path / "reports" / "iso.json").read_text())
    assert report["complete"] is False
    assert [(r["check"], r["outcome"]) for r in report["results"]] == [
        ("test_engine.py::test_1_passes", "passed")
    ]
    child, warm = _processes(pytester)["test_2_waits[cpu]"]
    for pid in (child, warm):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


ASYNCIO_CONFTEST = """
import asyncio
import threading

import pytest

# An engine's async client: its event loop runs in a thread the conftest starts.
loop = asyncio.new_event_loop()
threading.Thread(target=loop.run_forever, name="asyncio-loop", daemon=True).start()


@pytest.fixture
def engine_loop():
    return loop
"""

ASYNCIO_TEST = """
import asyncio

import pytest


@pytest.mark.ptrport(backends=["cpu"])
def test_a_request_through_the_clients_loop(ptrport_device, engine_loop):
    async def answer():
        return 42

    assert asyncio.run_coroutine_threadsafe(answer(), engine_loop).result(timeout=10) == 42
"""


@pytest.mark.parametrize("isolate", [True, False], ids=["isolated", "in-process"])
def test_a_thread_a_conftest_started_sends_the_run_to_spawning_and_the_test_passes(
    pytester: pytest.Pytester, isolate: bool
) -> None:
    pytester.makeconftest(ASYNCIO_CONFTEST)
    pytester.makepyfile(test_client=ASYNCIO_TEST)
    isolation = () if isolate else ("--no-isolate",)
    result = pytester.runpytest_subprocess(
        "--backend=cpu", "--platform-name=iso", "-p", "no:cacheprovider", *isolation
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _outcomes(pytester) == [
        ("test_client.py::test_a_request_through_the_clients_loop", "cpu", "passed")
    ]
    if isolate:
        result.stdout.fnmatch_lines(
            [
                "isolation: 1 child process for 1 isolated check *, spawned, not forked: "
                "1 thread (asyncio-loop) started since pytest loaded ptrport: a conftest, a "
                "plugin or a test module started them"
            ]
        )


LEAVES_A_PROCESS = """
import ctypes
import subprocess
import sys

import pytest

pytestmark = pytest.mark.ptrport(backends=["cpu"])


@pytest.mark.parametrize("n", range({count}))
def test_starts_a_worker_then_crashes(ptrport_device, n):
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{token}"])
    ctypes.string_at(0)
"""

THREAD_CONFTEST = """
import threading

threading.Thread(target=threading.Event().wait, name="engine-loader", daemon=True).start()
"""


def _processes_with(token: str) -> list[int]:
    """The processes still running whose command line holds ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            command = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if token.encode() in command and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _all_end(token: str, outlived: str) -> None:
    """Waits up to 10 s for the processes holding ``token`` to end; else fails, saying how many
    ``outlived`` (``"{} of 3 workers outlived the run"``)."""
    deadline = time.monotonic() + 10
    while left := _processes_with(token):
        assert time.monotonic() < deadline, outlived.format(len(left))
        time.sleep(0.05)


def _kill_all(token: str) -> None:
    for pid in _processes_with(token):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("children", "count"), [("forked", 20), ("spawned", 3)])
def test_crashed_checks_leave_no_process_of_theirs_behind(
    pytester: pytest.Pytester, children: str, count: int
) -> None:
    token = f"ptrport-left-behind-{os.getpid()}-{children}"
    if children == "spawned":
        pytester.makeconftest(THREAD_CONFTEST)
    pytester.makepyfile(test_workers=LEAVES_A_PROCESS.format(count=count, token=token))
    try:
        result = pytester.runpytest_subprocess(
            "--backend=cpu", "--platform-name=iso", "-p", "no:cacheprovider"
        )
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        assert [o for *_, o in _outcomes(pytester)] == ["crashed"] * count
        result.stdout.fnmatch_lines([f"isolation: {count} child processes *, {children}*"])
        _all_end(token, f"{{}} of {count} workers outlived the run")
    finally:
        _kill_all(token)


def test_a_spawned_child_that_ends_between_the_look_and_the_reap_still_takes_its_group(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The window the run cannot time: the child ends right after the look that found it
    running. Here it has ended before the first look, which is made to say it runs."""
    token = f"ptrport-window-{os.getpid()}"
    sleeper = f"[sys.executable, '-c', 'import time; time.sleep(300)', '{token}']"
    worker = f"import subprocess, sys; subprocess.Popen({sleeper})"
    process = subprocess.Popen([sys.executable, "-c", worker], start_new_session=True)
    spawned = children.SpawnedProcess(process)
    try:
        deadline = time.monotonic() + 10
        while not children.ended_unreaped(process.pid):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert _processes_with(token)
        looks, real = [False], children.ended_unreaped
        monkeypatch.setattr(
            children, "ended_unreaped", lambda pid: looks.pop() if looks else real(pid)
        )
        assert spawned.poll() is None
        assert spawned.poll() == 0
        _all_end(token, "{} worker outlived its child")
    finally:
        _kill_all(token)
        if process.returncode is None:
            process.wait()


FAKED_DEVICE = {
    "initialized": (
        "import torch\n\ntorch.cuda.is_initialized = lambda: True\n",
        "cuda already initialized in this process",
    ),
    # Torch marks the fork it spoiled in the forked process: here, any process but this one.
    "spoiled": (
        "import os\n\nimport torch\n\n_RUN = os.getpid()\n"
        "torch.cuda._is_in_bad_fork = lambda: os.getpid() != _RUN\n",
        "cuda's driver was initialized before the fork (a test module or conftest asked the "
        "device, or used it, at import)",
    ),
}


@pytest.mark.parametrize("device", list(FAKED_DEVICE))
def test_a_device_initialized_before_the_fork_sends_the_run_to_spawning(
    pytester: pytest.Pytester, device: str
) -> None:
    """On a GPU machine a device the run's process initialized does not survive a fork; here a
    conftest says torch's CUDA is initialized (or the fork spoiled it), as torch would there."""
    conftest, reason = FAKED_DEVICE[device]
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_engine=PASSING_AND_FAILING)
    result = pytester.runpytest_subprocess(
        "--backend=cpu,cpu-usm", "--platform-name=iso", "-p", "no:cacheprovider"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert [o for *_, o in _outcomes(pytester)] == ["failed", "failed", "passed", "passed"]
    result.stdout.fnmatch_lines([f"isolation: 2 child processes *, spawned, not forked: {reason}"])


NVML_SEEN = """
import os

import pytest

with open("nvml.txt", "a") as seen:
    seen.write(f"import {os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK')}\\n")


@pytest.mark.ptrport(backends=["cpu"])
def test_records_it(ptrport_device):
    with open("nvml.txt", "a") as seen:
        seen.write(f"check {os.environ.get('PYTORCH_NVML_BASED_CUDA_CHECK')}\\n")
"""


@pytest.mark.parametrize(("given", "seen"), [(None, "1"), ("0", "0")])
def test_cuda_is_asked_of_nvml_from_the_test_modules_imports_on_unless_the_user_said(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, given: str | None, seen: str
) -> None:
    """``torch.cuda.is_available()`` initializes CUDA unless this is set, and a test module
    that asks it at import would keep the run from forking on a GPU machine."""
    if given is None:
        monkeypatch.delenv("PYTORCH_NVML_BASED_CUDA_CHECK", raising=False)
    else:
        monkeypatch.setenv("PYTORCH_NVML_BASED_CUDA_CHECK", given)
    pytester.makepyfile(test_nvml=NVML_SEEN)
    result = pytester.runpytest_subprocess("--backend=cpu", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.OK
    assert (pytester.path / "nvml.txt").read_text().split() == ["import", seen, "check", seen]
