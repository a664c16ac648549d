"""``ptrport lint`` as a user runs it: text, JSON, exit status, ignore comments, which files it
reads, and a large tree split across processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ptrport.cli import main
from ptrport.lint.checker import lint_paths
from ptrport.lint.library import CONSTRUCTORS, FACTORIES, FILLED, PACKING, TYPED_TENSORS
from ptrport.lint.sources import names_storage

BROKEN = """\
import torch


def pointer_table(ts):
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
"""
FIXED = BROKEN.replace("torch.int64", "torch.uint64")
ACCEPTED = BROKEN.replace(
    "dtype=torch.int64)",
    "dtype=torch.int64)  # ptrport: ignore[signed-storage] host pointers, always below 2**47",
)


def _project(tmp_path: Path, **files: str) -> Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_finding_is_its_location_rule_what_flows_where_and_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, **{"engine/runner.py": BROKEN, "engine/fixed.py": FIXED})
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "engine"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "engine/runner.py:5:12: signed-storage an address from `t.data_ptr()` (line 5) is put "
        "in `torch.tensor(...)` as torch.int64: values at or above 2**63 overflow"
    )
    assert lines[1] == (
        "    fix: store it as dtype=torch.uint64, or store its int64 bits: "
        "tensor(..., dtype=torch.uint64).view(torch.int64)"
    )
    assert lines[2] == "ptrport lint: 1 finding (signed-storage 1) in 1 of 2 files"
    assert len(lines) == 3


def test_no_finding_exits_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _project(tmp_path, **{"fixed.py": FIXED})
    assert main(["lint", str(tmp_path)]) == 0
    assert capsys.readouterr().out == "ptrport lint: no findings in 1 file\n"


def test_an_ignore_comment_accepts_the_site_with_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, **{"accepted.py": ACCEPTED})
    assert main(["lint", str(tmp_path), "--format=json"]) == 0
    document = json.loads(capsys.readouterr().out)
    [finding] = document["findings"]
    assert finding["rule"] == "signed-storage"
    assert finding["suppressed"] == "host pointers, always below 2**47"
    assert document["summary"] == (
        "ptrport lint: no findings in 1 file; 1 accepted by ignore comments"
    )


def test_an_ignore_comment_for_another_rule_accepts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = ACCEPTED.replace("ignore[signed-storage]", "ignore[narrow-storage, signed-stroage]")
    _project(tmp_path, **{"other.py": other})
    assert main(["lint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "signed-storage an address" in out
    assert f"{tmp_path.as_posix()}/other.py:5: unknown rule 'signed-stroage'" in out


def test_json_lists_each_finding_with_its_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, **{"runner.py": BROKEN})
    assert main(["lint", str(tmp_path / "runner.py"), "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["files"] == 1
    [finding] = document["findings"]
    assert (finding["line"], finding["column"], finding["end_line"]) == (5, 12, 5)
    assert finding["end_column"] == len(BROKEN.splitlines()[4]) + 1
    assert finding["fix"].startswith("store it as dtype=torch.uint64")
    assert finding["suppressed"] is None


def test_output_goes_to_a_file_and_the_summary_to_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, **{"runner.py": BROKEN})
    out = tmp_path / "lint.sarif"
    assert main(["lint", str(tmp_path), "--format=sarif", "-o", str(out)]) == 1
    assert capsys.readouterr().out == "ptrport lint: 1 finding (signed-storage 1) in 1 of 1 file\n"
    assert json.loads(out.read_text())["version"] == "2.1.0"


def test_a_missing_path_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["lint", str(tmp_path / "nowhere")]) == 2
    captured = capsys.readouterr()
    assert captured.err == f"ptrport: {tmp_path / 'nowhere'}: no such file or directory\n"
    assert captured.out == ""


def test_a_file_that_does_not_parse_is_listed_and_the_rest_is_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _project(tmp_path, **{"a.py": BROKEN, "b.py": "def f(:\n    x.data_ptr()\n"})
    assert main(["lint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{tmp_path.as_posix()}/b.py:1:7: not checked: invalid syntax" in out
    assert out.endswith(
        "ptrport lint: 1 finding (signed-storage 1) in 1 of 2 files; 1 not checked\n"
    )


def test_code_nested_past_the_recursion_limit_is_listed_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A generated sum of 400 addresses: the statement is not followed; the module's other
    # function is. A sum of 100,000 terms: ast cannot build it; the file is listed.
    terms = " + ".join(["p"] * 400)
    deep = f"def total(t):\n    p = t.data_ptr()\n    return {terms}\n\n\n"
    huge = "x = " + " + ".join(["t.data_ptr()"] * 100_000) + "\n"
    _project(tmp_path, **{"a.py": deep + BROKEN, "b.py": huge})
    assert main(["lint", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    root = tmp_path.as_posix()
    reason = "not checked: nested too deeply to follow (past Python's recursion limit)"
    assert f"{root}/a.py:3:5: {reason}\n" in out
    assert f"{root}/b.py:1:1: {reason}\n" in out
    assert f"{root}/a.py:10:12: signed-storage" in out
    assert out.endswith(
        "ptrport lint: 1 finding (signed-storage 1) in 1 of 2 files; 2 not checked\n"
    )


def test_hidden_directories_caches_and_virtualenvs_are_not_read(tmp_path: Path) -> None:
    _project(
        tmp_path,
        **{
            "src/runner.py": BROKEN,
            ".venv/lib/site.py": BROKEN,
            "env/pyvenv.cfg": "home = /usr/bin\n",
            "env/lib/torch_code.py": BROKEN,
            "src/__pycache__/runner.py": BROKEN,
            "build/lib/runner.py": BROKEN,
            "notes.txt": BROKEN,
        },
    )
    run = lint_paths([tmp_path])
    assert run.files == 1
    assert [f.path for f in run.findings] == [f"{tmp_path.as_posix()}/src/runner.py"]


def test_a_named_file_is_read_whatever_its_name(tmp_path: Path) -> None:
    _project(tmp_path, **{"script": BROKEN})
    assert [f.rule for f in lint_paths([tmp_path / "script"]).findings] == ["signed-storage"]


def test_a_kernel_in_one_file_is_matched_with_its_launch_in_another(tmp_path: Path) -> None:
    kernels = (
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.jit\ndef gather(table, base: tl.int64):\n    pass\n"
    )
    launch = (
        "from kernels import gather\n\n\n"
        "def run(t, table):\n    gather[(1,)](table, t.data_ptr())\n"
    )
    _project(tmp_path, **{"kernels.py": kernels, "launch.py": launch})
    [finding] = lint_paths([tmp_path]).findings
    assert (Path(finding.path).name, finding.line, finding.rule) == (
        "launch.py",
        5,
        "triton-signed-param",
    )
    assert "`base` of Triton kernel `gather`" in finding.message
    assert "kernels.py:6" in finding.message


def test_the_command_resolves_imports_between_the_modules_of_a_directory_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A table made by a factory of a sibling module, found through a relative import.
    factory = "import torch\n\n\ndef make_table(n):\n    return torch.zeros(n, dtype=torch.int64)\n"
    stage = (
        "from .tables import make_table\n\n\ndef stage(ts):\n"
        "    table = make_table(len(ts))\n    table[0] = ts[0].data_ptr()\n"
    )
    _project(tmp_path, **{"engine/__init__.py": "", "engine/tables.py": factory})
    _project(tmp_path, **{"engine/stage.py": stage})
    monkeypatch.chdir(tmp_path)
    assert main(["lint", "engine", "--format=json"]) == 1
    [finding] = json.loads(capsys.readouterr().out)["findings"]
    assert (finding["path"], finding["line"]) == ("engine/stage.py", 6)


@pytest.mark.parametrize(
    "sink",
    [
        "torch.tensor(addresses)",
        "torch.as_tensor(addresses)",
        "np.fromiter(addresses, np.int64)",
        "torch.full((1,), addresses[0])",
        "torch.LongTensor(addresses)",
    ],
)
def test_a_file_whose_only_sink_stores_an_imported_address_is_read(
    tmp_path: Path, sink: str
) -> None:
    # The file names no dtype: the address comes from a function of another module, the sink
    # makes int64 (or a float) of it. Such a file is read once the import is known to give one.
    _project(
        tmp_path,
        **{
            "engine/__init__.py": "",
            "engine/caches.py": "def kv_address(cache):\n    return cache.data_ptr()\n",
            "engine/table.py": (
                "import numpy as np\nimport torch\n\nfrom .caches import kv_address\n\n\n"
                f"def table(caches):\n    addresses = [kv_address(c) for c in caches]\n"
                f"    return {sink}\n"
            ),
        },
    )
    run = lint_paths([tmp_path / "engine"])
    assert [(Path(f.path).name, f.line) for f in run.findings] == [("table.py", 9)]


def test_every_call_that_makes_storage_keeps_an_unread_file_for_the_later_rounds() -> None:
    calls = [*CONSTRUCTORS, *FACTORIES, *FILLED, *PACKING]
    calls += [f"torch.{name}" for name in TYPED_TENSORS]
    for call in calls:
        source = f"x = {call.replace('numpy.', 'np.')}(y)\n"
        assert names_storage(source), source


def test_only_files_with_an_address_source_or_triton_are_parsed(tmp_path: Path) -> None:
    # A kernel decorated @jit, imported from triton, is read; a torch.jit file (here one that
    # would not parse) has neither and is not parsed, so not listed.
    kernels = (
        "from triton import jit\nfrom triton.language import int64\n\n\n"
        "@jit\ndef gather(table, base: int64):\n    pass\n"
    )
    launch = (
        "from kernels import gather\n\n\n"
        "def run(t, table):\n    gather[(1,)](table, t.data_ptr())\n"
    )
    scripted = "import torch\n\n\n@torch.jit.script\ndef f(x:\n    return x\n"
    _project(tmp_path, **{"kernels.py": kernels, "launch.py": launch, "scripted.py": scripted})
    run = lint_paths([tmp_path])
    assert [(Path(f.path).name, f.rule) for f in run.findings] == [
        ("launch.py", "triton-signed-param")
    ]
    assert (run.files, run.unparsed) == (3, [])


def test_a_source_named_is_read_only_where_it_gives_an_address(tmp_path: Path) -> None:
    # Symmetric memory's addresses are a handle's attributes, not parameters of that name; a
    # c_void_p gives one through ctypes.cast, not as an argument type. Every file would not
    # parse: those read are listed as unparsed, the others are not read.
    broken = "def f(x:\n    return x\n"
    files = {
        "named.py": "def copy(buffer_ptrs, signal_pad_ptrs, multicast_ptr):\n    pass\n",
        "read.py": "def peers(handle):\n    return handle.buffer_ptrs\n",
        "typed.py": "import ctypes\n\n\ndef read(dest: ctypes.c_void_p):\n    pass\n",
        "cast.py": "import ctypes\n\nptr = ctypes.cast(buf, ctypes.c_void_p).value\n",
    }
    _project(tmp_path, **{name: f"{text}\n\n{broken}" for name, text in files.items()})
    run = lint_paths([tmp_path])
    assert sorted(Path(u.path).name for u in run.unparsed) == ["cast.py", "read.py"]


def test_a_large_tree_split_across_processes_finds_the_same(tmp_path: Path) -> None:
    for index in range(240):
        source = BROKEN if index % 3 == 0 else FIXED
        _project(tmp_path, **{f"pkg{index % 7}/module_{index}.py": source})
    serial = lint_paths([tmp_path], jobs=1)
    parallel = lint_paths([tmp_path], jobs=2)
    assert serial.files == parallel.files == 240
    assert len(serial.findings) == 80
    assert parallel.findings == serial.findings


def test_the_command_runs_as_a_console_script(tmp_path: Path) -> None:
    _project(tmp_path, **{"runner.py": BROKEN})
    result = subprocess.run(
        [sys.executable, "-m", "ptrport.cli", "lint", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, result.stderr
    assert result.stdout.endswith("ptrport lint: 1 finding (signed-storage 1) in 1 of 1 file\n")
