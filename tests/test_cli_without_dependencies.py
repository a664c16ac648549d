"""Every ``ptrport`` command where ptrport is installed alone (``pip install --no-deps ptrport``,
as the lint and the report pages teach): it works, or it says in one line what is missing and
how to install it, and exits 2; never a traceback. One virtualenv, built once from a wheel of
this checkout, holds ptrport and nothing else (``test_light_imports.py`` runs the report and
lint paths beside stand-ins that refuse to import; here nothing is there to import)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from venv import EnvBuilder

import pytest
from sample_reports import HIGH_ADDRESS, OVERFLOW, document, result

from ptrport.cli.dependencies import DEPENDENCIES, missing_dependency
from ptrport.report import render
from ptrport.report.matrix import build_matrix
from ptrport.report.platform_report import load_reports, write_report
from ptrport.report.records import Outcome

ROOT = Path(__file__).resolve().parents[1]
NEEDS = "needs"
"""The expected outcome of a command that cannot run here: one line naming what it needs."""
LINT_ONLY = (
    r"(?P<command>ptrport [a-z]+) needs (?P<module>torch|hypothesis|pytest|numpy): "
    r"pip install torch \(the build for your hardware\), "
    r"then pip install ptrport for its other dependencies"
)
"""That line where none of ptrport's dependencies is installed."""

COMMANDS: list[tuple[str, int | str]] = [
    ("--help", 0),
    ("--version", 0),
    ("backends", NEEDS),
    ("backends --json --require=cpu", NEEDS),
    ("backends --help", 0),
    ("subjects", NEEDS),
    ("subjects --help", 0),
    ("run", NEEDS),
    ("run -q -k copy --backend=cpu", NEEDS),
    # pytest's help, as ptrport run's: pytest must be there to print it.
    ("run --help", NEEDS),
    ("controls --backend=cpu", NEEDS),
    ("controls --help", 0),
    ("probe", NEEDS),
    # The option's type imports the device layer while the arguments are parsed.
    ("probe --platform-name=lab2", NEEDS),
    ("probe --help", 0),
    ("bench --quick", NEEDS),
    ("bench --help", 0),
    ("matrix --no-run --reports {reports} --baseline {matrix}", 0),
    ("matrix --help", 0),
    ("lint {source}", 1),
    ("lint {source} --format=sarif -o {out}/lint.sarif", 1),
    ("lint --help", 0),
    ("report --help", 0),
    ("report merge {report} -o {out}/matrix.html", 0),
    ("report merge --help", 0),
    ("report diff --baseline {matrix} {report}", 0),
    ("report diff --help", 0),
    ("report render {matrix} -o {out}/matrix.md", 0),
    ("report render --help", 0),
    ("report repro {report} --all --out-dir {out}/repros", 0),
    ("report repro --help", 0),
]
"""Each command with the arguments it runs with, and its exit status or NEEDS."""


def _pip(*arguments: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture(scope="module")
def lint_only(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` directory of a virtualenv (without pip) holding ptrport alone, installed
    from a wheel of this checkout, not editable."""
    work = tmp_path_factory.mktemp("lint-only")
    # Built from a copy: a build in the checkout would leave build/ and *.egg-info there.
    source = work / "source"
    shutil.copytree(
        ROOT / "ptrport", source / "ptrport", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    wheels = work / "wheels"
    build = ("wheel", "--no-deps", "-w", wheels, source)
    # With this interpreter's setuptools where it can build a wheel (2 s, no index); else pip
    # builds in isolation, with a setuptools fetched from the index.
    built = _pip(*build, "--no-build-isolation", "--no-index")
    if built.returncode != 0:
        built = _pip(*build)
    assert built.returncode == 0, built.stderr
    venv = work / "venv"
    EnvBuilder(with_pip=False).create(venv)
    (wheel,) = wheels.glob("ptrport-*.whl")
    bin_dir = venv / "bin"
    installed = _pip("--python", bin_dir / "python", "install", "--no-deps", "--no-index", wheel)
    assert installed.returncode == 0, installed.stderr
    return bin_dir


def _ptrport(bin_dir: Path, arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The installed ``ptrport ARGUMENTS``, with nothing of this session's environment that
    could lead it to another Python's packages (PYTHONPATH) or to tox."""
    return _installed(bin_dir, ["ptrport", *arguments], cwd)


def _python(bin_dir: Path, code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` in the lint-only virtualenv, as :func:`_ptrport` runs."""
    return _installed(bin_dir, ["python", "-c", code], cwd)


def _installed(bin_dir: Path, command: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PATH": str(bin_dir), "LC_ALL": "C.UTF-8"}
    env |= {k: v for k, v in os.environ.items() if k == "TMPDIR"}
    return subprocess.run(
        [str(bin_dir / command[0]), *command[1:]],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    """A platform report with a failure that has an example, its merged matrix, a source file
    with one finding, and a directory for what commands write."""
    failing = result(
        "table_round_trip::test_an_entry_reads_back_bit_exact",
        Outcome.FAILED,
        subject="int64/torch",
        message=OVERFLOW,
        example=HIGH_ADDRESS,
        body="ptrport.check.checks:an_entry_reads_back_bit_exact",
    )
    passing = result("batch_copy::test_real_entries_are_copied_exactly")
    report = write_report(document("lab1", [passing, failing]), tmp_path / "reports")
    matrix = tmp_path / "matrix.json"
    render.write(build_matrix(load_reports([report])), matrix)
    source = tmp_path / "engine.py"
    source.write_text(
        "import torch\n\n\ndef table(ts):\n"
        "    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)\n"
    )
    (tmp_path / "out").mkdir()
    return {
        "report": report,
        "reports": report.parent,
        "matrix": matrix,
        "source": source,
        "out": tmp_path / "out",
    }


def test_the_virtualenv_holds_ptrport_and_none_of_its_dependencies(
    lint_only: Path, tmp_path: Path
) -> None:
    names = ["ptrport", *DEPENDENCIES, "triton", "pip"]
    code = (
        "import importlib.util, json, ptrport; "
        f"print(json.dumps([ptrport.__file__, [importlib.util.find_spec(n) is not None "
        f"for n in {names!r}]]))"
    )
    done = _python(lint_only, code, tmp_path)
    assert done.returncode == 0, done.stderr
    where, found = json.loads(done.stdout)
    assert Path(where).is_relative_to(lint_only.parent), "ptrport is not the installed one"
    assert dict(zip(names, found, strict=True)) == {n: n == "ptrport" for n in names}


@pytest.mark.parametrize(("command", "expected"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_each_command_works_or_says_in_one_line_what_it_needs(
    lint_only: Path, inputs: dict[str, Path], command: str, expected: int | str
) -> None:
    arguments = [word.format(**inputs) for word in command.split()]
    done = _ptrport(lint_only, arguments, cwd=inputs["out"])
    assert "Traceback" not in done.stderr, done.stderr
    if expected == NEEDS:
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        found = re.fullmatch(LINT_ONLY, line)
        assert found is not None, line
        assert found["command"] == f"ptrport {arguments[0]}"
    else:
        assert done.returncode == expected, done.stdout + done.stderr
        assert done.stderr == ""
        assert done.stdout


def test_matrix_without_tox_says_to_install_it(lint_only: Path, tmp_path: Path) -> None:
    done = _ptrport(lint_only, ["matrix", "cpu"], cwd=tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "ptrport: cannot run 'tox': install tox (pip install tox)\n",
    )


def test_a_missing_module_of_ptrport_itself_still_shows_its_traceback(
    lint_only: Path, tmp_path: Path
) -> None:
    """A module of the package that cannot be imported is a broken install or a bug, not a
    dependency left out: its traceback shows."""
    code = (
        "import sys; sys.modules['ptrport.check'] = None; "
        "from ptrport.cli import main; sys.exit(main(['subjects']))"
    )
    done = _python(lint_only, code, tmp_path)
    assert done.returncode == 1
    assert done.stderr.startswith("Traceback")
    assert done.stderr.splitlines()[-1] == (
        "ModuleNotFoundError: import of ptrport.check halted; None in sys.modules"
    )


def _without_torch(arguments: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """``ptrport ARGUMENTS`` in this environment (pytest, numpy and hypothesis installed) as if
    torch were not: a None in ``sys.modules`` is how Python itself marks a module not to be
    found."""
    code = (
        "import sys; sys.modules['torch'] = None; "
        f"from ptrport.cli import main; sys.exit(main({arguments!r}))"
    )
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_run_where_pytest_is_installed_but_torch_is_not_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    """Inside pytest the hook that imports torch would end in an INTERNALERROR traceback."""
    done = _without_torch(
        ["run", "-q", "-p", "no:cacheprovider", f"--report-dir={tmp_path}"], tmp_path
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stdout + done.stderr
    assert done.stderr == (
        "ptrport run needs torch: pip install torch (the build for your hardware)\n"
    )
    shown = _without_torch(["run", "--help"], tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith("usage: ptrport run [options]")


@pytest.mark.parametrize(
    ("missing", "line"),
    [
        ("torch", "ptrport probe needs torch: pip install torch (the build for your hardware)"),
        ("numpy", "ptrport probe needs numpy: pip install ptrport for its dependencies"),
        ("hypothesis", "ptrport probe needs hypothesis: pip install ptrport for its dependencies"),
        ("triton", "ptrport probe needs triton: pip install 'ptrport[triton]'"),
        ("torch._inductor", None),
        ("yaml", None),
        ("ptrport.check", None),
        (None, None),
    ],
)
def test_where_the_others_are_installed_the_line_names_only_what_is_missing(
    missing: str | None, line: str | None
) -> None:
    exc = ModuleNotFoundError(f"No module named {missing!r}", name=missing)
    assert missing_dependency(exc, "ptrport probe") == line


def test_the_dependencies_it_names_are_those_the_project_declares() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[ <>=!~;\[]", d, maxsplit=1)[0] for d in project["dependencies"]}
    assert set(DEPENDENCIES) == declared
