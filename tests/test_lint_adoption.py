"""``ptrport lint`` in a project that adopts it: ``[tool.ptrport.lint]`` and the options that
replace it, a baseline that lets only new findings fail, GitHub annotations, and the pre-commit
hook, run by ``pre-commit try-repo``. Exit status: 0 nothing (new) found, 1 findings, 2 bad
input."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ptrport.cli import main
from ptrport.lint import FORMATS
from ptrport.lint.formats import escaped_data, escaped_property
from ptrport.lint.rules import RULES

CHECKOUT = Path(__file__).resolve().parents[1]
BASELINE = "lint-baseline.json"
TABLE = """\
import torch


def pointer_table{index}(ts):
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)


def as_float{index}(t):
    return float(t.data_ptr())
"""
"""Two findings: signed-storage on line 5, float-storage on line 9."""
NEW_TABLE = """

def another_table(ts):
    return torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64)
"""
PLANTED = (
    "import torch\n\n\ndef table(t):\n    return torch.tensor([t.data_ptr()], dtype=torch.int64)\n"
)
CLEAN = PLANTED.replace("torch.int64", "torch.uint64")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _pyproject(root: Path, table: str) -> Path:
    return _write(root / "pyproject.toml", f"[tool.ptrport.lint]\n{table}\n")


def _lint(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    """Exit status and the lines of stdout and stderr of ``ptrport lint ARGS``."""
    code = main(["lint", *args])
    captured = capsys.readouterr()
    return code, (captured.out + captured.err).splitlines()


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Five modules of two findings each under ``src/``, the current directory."""
    for index in range(5):
        _write(tmp_path / f"src/module{index}.py", TABLE.format(index=index))
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def baselined(tree: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """``tree`` with its findings written to ``lint-baseline.json``."""
    assert _lint(capsys, "src", "--write-baseline", BASELINE)[0] == 0
    return tree


def _against_baseline(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[str]]:
    return _lint(capsys, *args, "--baseline", BASELINE)


class TestConfiguration:
    def test_the_table_sets_paths_exclude_and_the_rules(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _write(tree / "scripts/run.py", PLANTED)
        _write(tree / "src/generated/g.py", PLANTED)
        _pyproject(tree, 'paths = ["src"]\nexclude = ["generated"]\nignore = ["float-storage"]')
        code, lines = _lint(capsys)
        assert code == 1
        assert lines[-1] == "ptrport lint: 5 findings (signed-storage 5) in 5 of 5 files"

    def test_it_is_found_from_the_current_directory_upwards_its_paths_relative_to_it(
        self, tree: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        _pyproject(tree, 'paths = ["src/module0.py"]\nselect = ["float-storage"]')
        _write(tree / "docs/pyproject.toml", "[project]\nname = 'docs-ptrport'\n")
        monkeypatch.chdir(tree / "docs")
        code, lines = _lint(capsys)
        assert code == 1
        assert lines[0].startswith("../src/module0.py:9:12: float-storage")
        assert lines[-1] == "ptrport lint: 1 finding (float-storage 1) in 1 of 1 file"

    def test_each_option_replaces_its_key(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _pyproject(tree, 'paths = ["src"]\nselect = ["float-storage"]\nexclude = ["module1*"]')
        code, lines = _lint(
            capsys, "src/module0.py", "src/module1.py", "--select=signed-storage", "--exclude=*0.py"
        )
        assert code == 1
        assert lines[0].startswith("src/module1.py:5:12: signed-storage")
        assert lines[-1] == "ptrport lint: 1 finding (signed-storage 1) in 1 of 1 file"

    def test_an_exclude_glob_leaves_out_a_file_named_on_the_command_line(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert _lint(capsys, "src/module0.py", "--exclude", "src/module0.py") == (
            0,
            ["ptrport lint: no findings in 0 files"],
        )

    def test_rules_are_selected_comma_separated_and_ignored(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, lines = _lint(
            capsys, "src", "--select", "signed-storage,float-storage", "--ignore=signed-storage"
        )
        assert (code, lines[-1]) == (
            1,
            "ptrport lint: 5 findings (float-storage 5) in 5 of 5 files",
        )

    def test_without_a_table_or_paths_it_lints_the_current_directory(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _write(tree / "pyproject.toml", "[tool.ptrport]\nother = 1\n")
        code, lines = _lint(capsys)
        assert (code, lines[-1]) == (
            1,
            "ptrport lint: 10 findings (float-storage 5, signed-storage 5) in 5 of 5 files",
        )

    def test_config_names_the_file_to_read_it_from(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        config = _pyproject(tree / "elsewhere", 'paths = ["../src/module2.py"]')
        code, lines = _lint(capsys, "--config", str(config))
        assert (code, lines[-1]) == (
            1,
            "ptrport lint: 2 findings (float-storage 1, signed-storage 1) in 1 of 1 file",
        )

    @pytest.mark.parametrize(
        ("table", "error"),
        [
            ('selct = ["signed-storage"]', "selct: unknown key (the keys: paths, exclude, "),
            ('select = "signed-storage"', "select: expected a list of strings, got 'signed-stor"),
            ('ignore = ["signed-stroage"]', "ignore: unknown rule 'signed-stroage' (the rules: "),
            ("exclude = [1]", "exclude: expected a list of strings, got [1]"),
            ('paths = ["nowhere"]', "paths: nowhere: no such file or directory"),
            ("baseline = true", "baseline: expected a string, got True"),
            ("select = []", "select, ignore: no rule left to report"),
        ],
    )
    def test_a_bad_key_is_one_line_naming_the_file_and_key_and_exit_2(
        self, tree: Path, capsys: pytest.CaptureFixture[str], table: str, error: str
    ) -> None:
        _pyproject(tree, table)
        code, lines = _lint(capsys)
        assert code == 2
        [line] = lines
        assert line.startswith(f"ptrport: pyproject.toml: [tool.ptrport.lint] {error}")

    @pytest.mark.parametrize(
        ("text", "error"),
        [
            ("[tool.ptrport.lint\n", "pyproject.toml: not valid TOML: "),
            ("[tool.ptrport]\nlint = 3\n", "pyproject.toml: tool.ptrport.lint: expected a table"),
            ("[tool]\nptrport = 3\n", "pyproject.toml: tool.ptrport: expected a table"),
        ],
    )
    def test_a_pyproject_that_does_not_parse_is_one_line_and_exit_2(
        self, tree: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
    ) -> None:
        _write(tree / "pyproject.toml", text)
        code, [line] = _lint(capsys)
        assert code == 2
        assert line.startswith(f"ptrport: {error}")

    def test_config_naming_a_file_without_the_table_is_exit_2(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _write(tree / "other.toml", "[tool.ruff]\n")
        assert _lint(capsys, "--config", "other.toml") == (
            2,
            ["ptrport: other.toml: no [tool.ptrport.lint] table"],
        )

    @pytest.mark.parametrize("option", ["--select", "--ignore"])
    def test_an_unknown_rule_on_the_command_line_is_one_line_and_exit_2(
        self, tree: Path, capsys: pytest.CaptureFixture[str], option: str
    ) -> None:
        code, [line] = _lint(capsys, "src", option, "float-storage,signed-stroage")
        assert code == 2
        assert line == (
            f"ptrport: {option}: unknown rule 'signed-stroage' (the rules: {', '.join(RULES)})"
        )


class TestBaseline:
    def test_a_tree_of_ten_findings_passes_against_the_baseline_written_for_it(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert _lint(capsys, "src")[0] == 1
        assert _lint(capsys, "src", "--write-baseline", "lint-baseline.json") == (
            0,
            [
                "ptrport lint: 10 findings (float-storage 5, signed-storage 5) in 5 of 5 files",
                "ptrport lint: wrote 10 findings to the baseline lint-baseline.json",
            ],
        )
        assert _against_baseline(capsys, "src") == (
            0,
            ["ptrport lint: no new findings in 5 files; 10 in the baseline lint-baseline.json"],
        )

    def test_a_new_pointer_table_fails_alone(
        self, baselined: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with (baselined / "src/module3.py").open("a") as module:
            module.write(NEW_TABLE)
        code, lines = _against_baseline(capsys, "src")
        assert code == 1
        assert lines[0].startswith("src/module3.py:13:12: signed-storage an address from")
        assert lines[1].startswith("    fix: ")
        assert lines[2:] == [
            "ptrport lint: 1 new finding (signed-storage 1) in 1 of 5 files; 10 in the "
            "baseline lint-baseline.json"
        ]

    def test_sites_moved_down_twenty_lines_do_not_come_back(
        self, baselined: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        unrelated = "\n\ndef unrelated():\n" + "    pass\n" * 17
        for module in (baselined / "src").iterdir():
            imports, rest = module.read_text().split("\n", 1)
            module.write_text(f"{imports}\n{unrelated}{rest}")
        code, lines = _against_baseline(capsys, "src", "--format=json")
        assert code == 0
        document = json.loads("\n".join(lines))
        assert document["findings"] == []
        assert document["baseline"] == {"file": "lint-baseline.json", "known": 10, "stale": []}
        code, lines = _lint(capsys, "src", "--ignore=float-storage")
        assert code == 1
        assert lines[0].startswith("src/module0.py:25:12: signed-storage")

    def test_fixed_sites_are_listed_as_stale_and_pass(
        self, baselined: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        fixed = baselined / "src/module1.py"
        fixed.write_text(fixed.read_text().replace("torch.int64", "torch.uint64"))
        code, lines = _against_baseline(capsys, "src")
        assert code == 0
        assert lines[0].startswith(
            "src/module1.py:5: no longer found, stale in the baseline: signed-storage an "
            "address from `t.data_ptr()` (line 5)"
        )
        assert lines[1] == (
            "ptrport lint: no new findings in 5 files; 9 in the baseline lint-baseline.json, "
            "1 of its entries no longer found"
        )

    def test_a_run_of_some_files_leaves_the_other_files_entries_alone(
        self, baselined: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert _against_baseline(capsys, "src/module4.py") == (
            0,
            ["ptrport lint: no new findings in 1 file; 2 in the baseline lint-baseline.json"],
        )

    def test_a_deleted_files_entries_are_stale(
        self, baselined: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        (baselined / "src/module4.py").unlink()
        code, lines = _against_baseline(capsys, "src")
        assert code == 0
        assert lines[-1].endswith(
            "8 in the baseline lint-baseline.json, 2 of its entries no longer found"
        )

    def test_paths_are_matched_from_the_baseline_wherever_the_lint_runs(
        self, baselined: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(baselined / "src")
        code, lines = _lint(capsys, ".", "--baseline", str(baselined / "lint-baseline.json"))
        assert (code, lines[-1].split(";")[0]) == (0, "ptrport lint: no new findings in 5 files")

    def test_a_site_repeated_past_what_the_baseline_holds_is_new(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        site = "def f(t):\n    x = 1\n    return float(t.data_ptr())\n\n\n"
        _write(tmp_path / "m.py", site * 2)
        monkeypatch.chdir(tmp_path)
        _lint(capsys, "m.py", "--write-baseline", "b.json")
        _write(tmp_path / "m.py", site * 3)
        code, lines = _lint(capsys, "m.py", "--baseline", "b.json")
        assert code == 1
        assert lines[-1].startswith("ptrport lint: 1 new finding (float-storage 1) in 1 of 1 file")

    def test_the_configuration_names_the_baseline(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _pyproject(tree, 'paths = ["src"]\nbaseline = "lint/baseline.json"')
        (tree / "lint").mkdir()
        assert _lint(capsys, "--write-baseline", "lint/baseline.json")[0] == 0
        assert _lint(capsys) == (
            0,
            ["ptrport lint: no new findings in 5 files; 10 in the baseline lint/baseline.json"],
        )

    @pytest.mark.parametrize(
        ("text", "error"),
        [
            ("{", "not JSON (Expecting property name enclosed in double "),
            ("[]", 'no "ptrport-lint-baseline": 1'),
            ('{"ptrport-lint-baseline": 2, "findings": []}', 'no "ptrport-'),
            ('{"ptrport-lint-baseline": 1}', "findings: expected a list"),
            ('{"ptrport-lint-baseline": 1, "findings": [3]}', "findings[0]: expected an object"),
            (
                '{"ptrport-lint-baseline": 1, "findings": [{"rule": "signed-storage", "path": '
                '"a.py", "context": "0", "line": "5", "message": ""}]}',
                "findings[0].line: expected an integer",
            ),
            (
                '{"ptrport-lint-baseline": 1, "findings": [{"rule": "signed", "path": "a.py", '
                '"context": "0", "line": 5, "message": ""}]}',
                "findings[0].rule: unknown rule 'signed'",
            ),
        ],
    )
    def test_a_malformed_baseline_is_one_line_and_exit_2(
        self, tree: Path, capsys: pytest.CaptureFixture[str], text: str, error: str
    ) -> None:
        _write(tree / "b.json", text)
        code, [line] = _lint(capsys, "src", "--baseline", "b.json")
        assert code == 2
        assert line.startswith(f"ptrport: b.json: malformed baseline: {error}")

    def test_a_missing_baseline_says_how_to_write_one(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert _lint(capsys, "src", "--baseline", "b.json") == (
            2,
            ["ptrport: b.json: no such baseline (write one with --write-baseline b.json)"],
        )


class TestGithubFormat:
    def test_it_is_one_of_the_formats(self) -> None:
        assert "github" in FORMATS

    def test_a_finding_is_an_error_annotation_as_ruff_writes_it(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, lines = _lint(capsys, "src/module0.py", "--format=github", "--select=float-storage")
        assert code == 1
        assert lines == [
            f"::error title=ptrport (float-storage),file={escaped_property(str(tree))}/src/"
            "module0.py,line=9,col=12,endLine=9,endColumn=31::src/module0.py:9:12: "
            "float-storage an address from `t.data_ptr()` (line 9) is converted by `float()`: "
            "the low bits are rounded away above 2**53%0A  fix: keep addresses as ints: Python "
            "int, torch.uint64 or np.uint64, never float",
            "ptrport lint: 1 finding (float-storage 1) in 1 of 1 file",
        ]

    def test_properties_and_messages_are_escaped(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _write(tree / "100%,a:b/x.py", "def f(:\n    x.data_ptr()\n")
        code, [annotation, _] = _lint(capsys, "100%,a:b", "--format", "github")
        assert code == 0
        assert annotation.startswith("::warning title=ptrport (not checked),file=")
        assert "/100%25%2Ca%3Ab/x.py,line=1,col=7::100%25,a:b/x.py:1:7: not checked: " in (
            annotation
        )

    def test_a_stale_entry_is_a_notice(
        self, tree: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        _lint(capsys, "src", "--write-baseline", "b.json")
        (tree / "src/module2.py").write_text("")
        code, lines = _lint(capsys, "src", "--baseline", "b.json", "--format=github")
        assert code == 0
        assert [line.split(",file=")[0] for line in lines[:2]] == [
            "::notice title=ptrport (stale baseline entry)"
        ] * 2

    @pytest.mark.parametrize(
        ("text", "data", "value"),
        [
            ("100% sure", "100%25 sure", "100%25 sure"),
            ("two\r\nlines", "two%0D%0Alines", "two%0D%0Alines"),
            ("a:b,c", "a:b,c", "a%3Ab%2Cc"),
            ("%0A", "%250A", "%250A"),
        ],
    )
    def test_escaping_is_githubs(self, text: str, data: str, value: str) -> None:
        assert (escaped_data(text), escaped_property(text)) == (data, value)


def test_the_exit_status_is_0_clean_1_findings_2_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _write(tmp_path / "clean.py", CLEAN)
    _write(tmp_path / "planted.py", PLANTED)
    assert _lint(capsys, str(tmp_path / "clean.py"))[0] == 0
    assert _lint(capsys, str(tmp_path))[0] == 1
    assert _lint(capsys, str(tmp_path / "nowhere.py"))[0] == 2


def test_the_new_modules_import_no_heavy_package() -> None:
    code = (
        "import sys, ptrport.lint.config, ptrport.lint.baseline, ptrport.lint.formats; "
        "print(sorted({'torch', 'numpy', 'pytest', 'hypothesis', 'triton'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


class TestPreCommitHook:
    def test_the_hook_lints_the_project_without_installing_torch(self) -> None:
        [hook] = yaml.safe_load((CHECKOUT / ".pre-commit-hooks.yaml").read_text())
        assert (hook["id"], hook["entry"], hook["language"], hook["types"]) == (
            "ptrport-lint",
            "ptrport lint",
            "python",
            ["python"],
        )
        assert hook["pass_filenames"] is False
        assert hook["additional_dependencies"] == ["--no-deps"]

    def test_try_repo_fails_on_a_planted_site_and_passes_a_clean_file(self, tmp_path: Path) -> None:
        pytest.importorskip("pre_commit", reason="pre-commit is not installed (the test extra)")
        if shutil.which("git") is None:
            pytest.skip("git is not on PATH")
        if not (CHECKOUT / ".git").exists():
            pytest.skip(f"{CHECKOUT} is not a git checkout")
        try:
            socket.create_connection(("pypi.org", 443), timeout=5).close()
        except OSError:
            pytest.skip("pypi.org cannot be reached: pre-commit installs the hook from it")
        hooks = _committed_copy_of_the_checkout(tmp_path / "hooks")
        project = tmp_path / "project"
        _write(project / "planted.py", PLANTED)
        _git(project, "init", "-q")
        _git(project, "add", ".")
        env = _hook_environment(tmp_path)
        failed = _try_repo(project, hooks, env)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "planted.py:5:12: signed-storage an address from" in failed.stdout
        assert "ptrport lint: 1 finding (signed-storage 1) in 1 of 1 file" in failed.stdout
        _write(project / "planted.py", CLEAN)
        passed = _try_repo(project, hooks, env)
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert "ptrport lint" in passed.stdout and "Passed" in passed.stdout


def _git(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "init.defaultBranch=main", *args],
        cwd=where,
        capture_output=True,
        text=True,
        check=True,
        env={
            **os.environ,
            "GIT_AUTHOR_NAME": "test",
            "GIT_AUTHOR_EMAIL": "test@example.com",
            "GIT_COMMITTER_NAME": "test",
            "GIT_COMMITTER_EMAIL": "test@example.com",
        },
    )
    return done.stdout


def _committed_copy_of_the_checkout(copy: Path) -> Path:
    """This checkout's files as they are now (uncommitted and untracked ones too), committed in
    a repository of their own: try-repo on the checkout itself would leave untracked files out."""
    names = _git(CHECKOUT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, names.split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name)
    _git(copy, "init", "-q")
    _git(copy, "add", "-A")
    _git(copy, "commit", "-q", "-m", "the checkout as it is")
    return copy


def _hook_environment(tmp_path: Path) -> dict[str, str]:
    """The environment of pre-commit: a pip constraint no torch release meets, so that the
    hook's installation fails at once if it asks for torch (a CUDA build of gigabytes)."""
    constraints = tmp_path / "no-torch.txt"
    constraints.write_text("torch===not-installed\n")
    return {**os.environ, "PIP_CONSTRAINT": str(constraints), "PRE_COMMIT_COLOR": "never"}


def _try_repo(project: Path, hooks: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    _git(project, "add", ".")
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "ptrport-lint", "--all-files"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
