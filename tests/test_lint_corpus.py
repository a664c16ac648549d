"""``ptrport lint`` on the labelled corpus (tests/lint_corpus: engine-style files, each line that
must be found marked ``# expect: RULE``, near misses ``# clean``) and on the acceptance cases
(tests/lint_acceptance.py, which tests/test_lint_acceptance_runs.py runs with upper-half
addresses): every expected finding, no other, and precision and recall printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ptrport.cli import main
from ptrport.lint.checker import LintRun, lint_paths
from ptrport.lint.rules import RULES
from tests.lint_markers import compare, describe, labels

TESTS = Path(__file__).resolve().parent
CORPUS = TESTS / "lint_corpus"
ACCEPTANCE = TESTS / "lint_acceptance.py"


@pytest.fixture(scope="module")
def corpus_files() -> list[Path]:
    files = [*sorted(CORPUS.glob("*.py")), ACCEPTANCE]
    assert len(files) >= 10
    return files


@pytest.fixture(scope="module")
def corpus_run(corpus_files: list[Path]) -> LintRun:
    return lint_paths([CORPUS, ACCEPTANCE])


def test_the_corpus_gives_every_expected_finding_and_no_other(
    corpus_files: list[Path], corpus_run: LintRun, capsys: pytest.CaptureFixture[str]
) -> None:
    expected = labels(corpus_files)
    result = compare(corpus_run, expected)
    with capsys.disabled():
        print(
            f"\nptrport lint corpus: {len(corpus_files)} files, {len(expected.expected)} "
            f"expected findings, {len(expected.clean)} near misses marked clean; "
            f"precision {result.precision:.3f} ({result.true_positives} of "
            f"{len(result.found)} findings expected), recall {result.recall:.3f} "
            f"({result.true_positives} of {len(expected.expected)} expected found)"
        )
    assert not result.missing, "missing:\n" + describe(corpus_run, result.missing)
    assert not result.unexpected, "unexpected:\n" + describe(corpus_run, result.unexpected)
    assert corpus_run.unparsed == []


def test_the_corpus_holds_every_rule_more_than_once(corpus_files: list[Path]) -> None:
    expected = labels(corpus_files)
    per_rule = {rule: sum(1 for _, _, r in expected.expected if r == rule) for rule in RULES}
    assert min(per_rule.values()) >= 3, per_rule
    assert len(expected.clean) >= len(expected.expected)


def test_each_ignore_comment_of_the_corpus_accepts_a_site(
    corpus_files: list[Path], corpus_run: LintRun
) -> None:
    expected = labels(corpus_files)
    assert expected.ignored
    assert compare(corpus_run, expected).accepted == expected.ignored
    assert all(finding.suppressed for finding in corpus_run.accepted)
    assert corpus_run.unknown_rules == []


def test_the_acceptance_sites_are_found_and_their_fixes_are_not(corpus_run: LintRun) -> None:
    source = ACCEPTANCE.read_text(encoding="utf-8").splitlines()
    found = {(f.line, f.rule) for f in corpus_run.reported if Path(f.path).name == ACCEPTANCE.name}
    lines = {rule: [n for n, _ in sorted(found) if _ == rule] for rule in {r for _, r in found}}
    # The int64 buffer filled through its numpy view in another method of the class.
    [store] = [n for n in lines["signed-storage"] if "self.src_ptrs_np[i] =" in source[n - 1]]
    assert "to_int64_bits" not in source[store - 1]
    # torch.tensor([t.data_ptr() for t in ts], dtype=torch.int64).
    [table] = [n for n in lines["signed-storage"] if "torch.tensor(" in source[n - 1]]
    assert "dtype=torch.int64)" in source[table - 1]
    # An np.uint64 base plus a signed np.int64 index array.
    [mixed] = lines["mixed-sign-numpy"]
    assert "base + idx" in source[mixed - 1]
    assert len(found) == 3


def test_the_corpus_through_the_command_line_as_json(
    capsys: pytest.CaptureFixture[str], corpus_files: list[Path]
) -> None:
    assert main(["lint", str(CORPUS), str(ACCEPTANCE), "--format=json"]) == 1
    document = json.loads(capsys.readouterr().out)
    reported = {
        (f["path"], f["line"], f["rule"]) for f in document["findings"] if not f["suppressed"]
    }
    assert reported == labels(corpus_files).expected
    assert document["files"] == len(corpus_files)
