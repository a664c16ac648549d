"""Bad input everywhere: the report reader, its journal and the expectations loader, fuzzed.

Every input either loads or is refused with the harness's own error, one line naming the file:
random bytes, reports cut short, nodes of a valid report replaced by values of another type,
extra and duplicate keys, huge numbers and Python's ``NaN``/``Infinity``, nesting far deeper
than anything recursion survives, invalid UTF-8, a BOM, lone surrogates; expectations files
with random text, wrong types for each key, huge integers and deep nesting. Inputs start from
realistic documents (``sample_reports``). Each test has its own example count and deadline, so
the file stays fast and does not depend on the Hypothesis profile.
"""

from __future__ import annotations

import copy
import datetime
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sample_reports import HIGH_ADDRESS, OVERFLOW, document, result

from ptrport.cli import main
from ptrport.report import schema
from ptrport.report.expectations import (
    Expectation,
    Expectations,
    ExpectationsError,
    load_expectations,
)
from ptrport.report.platform_report import (
    MAX_DEPTH,
    MAX_DIGITS,
    RUNNING,
    PlatformReport,
    ReportError,
    journal_path,
    load_report,
)
from ptrport.report.records import Outcome, Result

FUZZ = settings(
    max_examples=50,
    deadline=2000,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""What every test here starts from; each names its own example count."""
WITH_CAPSYS = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
"""For the CLI tests, which read ``capsys`` afresh in every example."""

CHECK = "table_round_trip::test_an_entry_reads_back_bit_exact"
BATCH_CHECK = "batch_copy::test_every_real_entry_is_copied"
BODY = "ptrport.check.checks:an_entry_reads_back_bit_exact"
BATCH = {
    "type": "batch",
    "entries": [
        {"type": "entry", "src": "0x8000000000000000", "dst": "0x0000000000001000", "nbytes": 8}
    ],
}
RESULTS = [
    result(CHECK, body=BODY),
    result(
        CHECK,
        Outcome.XFAILED,
        subject="int64/torch",
        message=OVERFLOW,
        example=HIGH_ADDRESS,
        body=BODY,
    ),
    result(
        BATCH_CHECK,
        Outcome.FAILED,
        subject="uint64/triton",
        message="AssertionError: Überlauf bei Eintrag 0 (溢出)",
        example={"batch": BATCH},
    ),
    result(BATCH_CHECK, Outcome.SKIPPED, subject=None, on="xpu", message="no XPU here"),
]
VALID = document("lab-1", RESULTS)
"""A finished run, as :func:`ptrport.report.platform_report.write_report` writes it."""
VALID_TEXT = json.dumps(VALID, indent=2) + "\n"
HAND_EDITED = json.dumps(VALID, indent=2, ensure_ascii=False).encode("utf-8")
"""The same report saved by an editor: its non-ASCII message as UTF-8, not escaped."""
UNFINISHED = document("lab-1", RESULTS[:1], status=RUNNING)
"""A run killed after its first result: the report has it, the journal has the rest."""
JOURNALED = RESULTS[1:]
REPORT_SCHEMA = schema.load_schema("report-2")
_Reference = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)
    ),
)
"""The reference validator, where an integer is an int as for the reader (for JSON Schema,
``2.0`` is one too): an oracle for what the reader must accept."""
REFERENCE = _Reference(REPORT_SCHEMA)
RESULT_REFERENCE = _Reference({"$defs": REPORT_SCHEMA["$defs"], "$ref": "#/$defs/result"})
NUMERIC_LITERALS = (
    "NaN",
    "Infinity",
    "-Infinity",
    "1e999",
    "-1e999",
    "1" + "0" * 400 + ".5",
    "1e-999",
    "-0",
    "-0.0",
    "0",
    "9007199254740993",
    str(2**64),
)

Where = tuple[str | int, ...]


# --- helpers ----------------------------------------------------------------------------------


def _refused_in_one_line(error: Exception, *paths: Path) -> str:
    """The message of a refusal, after checking it is one line naming the file (one of
    ``paths``) first."""
    message = str(error)
    assert message.startswith(tuple(f"{p}: " for p in paths)), message
    assert message.splitlines() == [message], message
    return message


def _load(path: Path) -> PlatformReport | str:
    """The report at ``path``, or the one-line message that refused it, naming the report or
    its journal; any exception other than :class:`ReportError` fails the test."""
    try:
        loaded = load_report(path)
    except ReportError as exc:
        return _refused_in_one_line(exc, path, journal_path(path))
    assert isinstance(loaded, PlatformReport)
    assert all(isinstance(r, Result) and isinstance(r.outcome, Outcome) for r in loaded.results)
    # Whatever loads can be written out and read again: it is a report, not just JSON.
    assert REFERENCE.is_valid(loaded.to_record())
    return loaded


def _load_expectations(path: Path) -> Expectations | str:
    try:
        loaded = load_expectations(path)
    except ExpectationsError as exc:
        return _refused_in_one_line(exc, path)
    assert isinstance(loaded, Expectations)
    assert all(isinstance(e, Expectation) for e in loaded.entries)
    return loaded


def _nodes(value: Any, where: Where = ()) -> Iterator[tuple[Where, Any]]:
    """Every node of a JSON document with its location, the document itself first."""
    yield where, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _nodes(item, (*where, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _nodes(item, (*where, i))


ALL_NODES = [where for where, _ in _nodes(VALID)]
OBJECTS = [where for where, value in _nodes(VALID) if isinstance(value, dict)]
STRINGS = [where for where, value in _nodes(VALID) if isinstance(value, str)]


def _at(document_: Any, where: Where) -> Any:
    for part in where:
        document_ = document_[part]
    return document_


def _replaced(where: Where, value: Any, base: Any = VALID) -> Any:
    """A copy of ``base`` with the node at ``where`` replaced by ``value``."""
    if not where:
        return value
    changed = copy.deepcopy(base)
    _at(changed, where[:-1])[where[-1]] = value
    return changed


MARKER = "@@literal@@"


def _with_literal(where: Where, literal: str, base: Any = VALID) -> str:
    """``base`` as JSON text with the node at ``where`` written as ``literal``, which need not
    be JSON that Python can produce (``NaN``, a number of 5000 digits, 100,000 brackets)."""
    text = json.dumps(_replaced(where, MARKER, base))
    assert text.count(json.dumps(MARKER)) == 1
    return text.replace(json.dumps(MARKER), literal)


def _location(where: Where) -> str:
    """How a message names a location whose keys are plain, e.g. ``results[2].message``."""
    text = ""
    for part in where:
        text = f"{text}[{part}]" if isinstance(part, int) else f"{text}.{part}" if text else part
    return text or "(top level)"


def _kind(value: Any) -> str:
    """The JSON type of ``value``, an integer apart from other numbers."""
    if value is None or isinstance(value, bool):
        return repr(value)
    return type(value).__name__


def _nest(kind: str, depth: int) -> str:
    """``depth`` arrays (``[[[]]]``) or objects (``{"a": {"a": {}}}``), one in the other."""
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a": ' * (depth - 1) + "{}" + "}" * (depth - 1)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with a few bytes replaced, inserted or deleted."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        how = draw(st.sampled_from(["replace", "insert", "delete"]))
        if how == "replace" and at < len(data):
            data[at] = draw(st.integers(0, 255))
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        else:
            del data[at : at + draw(st.integers(1, 16))]
    return bytes(data)


def fuzzed_reports() -> st.SearchStrategy[bytes]:
    """Bytes that are a report's, or nearly: random, mutated, cut short, a node retyped."""
    text = VALID_TEXT.encode()
    return st.one_of(
        st.binary(max_size=200),
        mutated(text),
        mutated(HAND_EDITED),
        st.integers(0, len(HAND_EDITED)).map(lambda n: HAND_EDITED[:n]),
        st.tuples(st.sampled_from(ALL_NODES), json_values).map(
            lambda change: json.dumps(_replaced(*change)).encode()
        ),
    )


def _report_file(directory: Path, data: bytes | str) -> Path:
    """``data`` as ``directory/lab-1.json``, no journal beside it."""
    path = directory / "lab-1.json"
    if isinstance(data, str):
        data = data.encode()
    path.write_bytes(data)
    journal_path(path).unlink(missing_ok=True)
    return path


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory for the fuzzed files, one per module: Hypothesis runs every example of a
    test in one call of it, and each example overwrites the files."""
    return tmp_path_factory.mktemp("fuzz")


# --- reports ----------------------------------------------------------------------------------


class TestReports:
    @settings(FUZZ, max_examples=150)
    @given(data=fuzzed_reports())
    def test_random_and_mutated_bytes_load_or_are_refused_in_one_line(
        self, scratch: Path, data: bytes
    ) -> None:
        path = _report_file(scratch, data)
        _load(path)

    @settings(FUZZ, max_examples=80)
    @given(cut=st.integers(0, len(HAND_EDITED)))
    def test_a_report_cut_short_anywhere_is_refused_as_truncated(
        self, scratch: Path, cut: int
    ) -> None:
        path = _report_file(scratch, HAND_EDITED[:cut])
        loaded = _load(path)
        if HAND_EDITED[:cut].strip() == HAND_EDITED.strip():
            assert isinstance(loaded, PlatformReport)
            assert loaded.results == tuple(RESULTS)
            return
        assert isinstance(loaded, str)
        assert (
            loaded.startswith(f"{path}: not valid JSON (")
            and loaded.endswith("; the file is truncated or corrupted")
        ) or loaded.startswith(f"{path}: cannot read it: 'utf-8' codec can't decode"), loaded

    @settings(FUZZ, max_examples=150)
    @given(where=st.sampled_from(ALL_NODES), data=st.data())
    def test_a_node_of_another_type_loads_exactly_when_the_schema_allows_it(
        self, scratch: Path, where: Where, data: st.DataObject
    ) -> None:
        old_kind = _kind(_at(VALID, where))
        value = data.draw(json_values.filter(lambda v: _kind(v) != old_kind), label="value")
        changed = _replaced(where, value)
        path = _report_file(scratch, json.dumps(changed))
        loaded = _load(path)
        assert isinstance(loaded, PlatformReport) is REFERENCE.is_valid(changed), loaded
        if isinstance(loaded, PlatformReport):
            assert loaded.results == tuple(Result.from_record(r) for r in changed["results"])

    @settings(FUZZ, max_examples=80)
    @given(
        where=st.sampled_from(OBJECTS),
        key=st.text(max_size=12),
        value=json_values,
    )
    def test_an_extra_key_loads_exactly_where_the_schema_allows_one(
        self, scratch: Path, where: Where, key: str, value: Any
    ) -> None:
        changed = copy.deepcopy(VALID)
        _at(changed, where)[key] = value
        path = _report_file(scratch, json.dumps(changed))
        loaded = _load(path)
        assert isinstance(loaded, PlatformReport) is REFERENCE.is_valid(changed), loaded

    @settings(FUZZ, max_examples=50)
    @given(where=st.sampled_from([w for w in OBJECTS if _at(VALID, w)]), data=st.data())
    def test_a_key_twice_in_one_object_is_refused_naming_it(
        self, scratch: Path, where: Where, data: st.DataObject
    ) -> None:
        key = data.draw(st.sampled_from(sorted(_at(VALID, where))), label="key")
        value = data.draw(json_values, label="value")
        changed = copy.deepcopy(VALID)
        _at(changed, where)[MARKER] = value
        text = json.dumps(changed).replace(json.dumps(MARKER), json.dumps(key))
        path = _report_file(scratch, text)
        assert _load(path) == f"{path}: key {key!r} appears twice in one object"

    @settings(FUZZ, max_examples=80, deadline=5000)
    @given(
        where=st.sampled_from(ALL_NODES),
        literal=st.sampled_from(NUMERIC_LITERALS)
        | st.integers(1, 6000).map(lambda n: "9" * n)
        | st.integers(MAX_DIGITS - 2, MAX_DIGITS + 2).map(lambda n: "-" + "1" * n),
    )
    def test_huge_numbers_and_nan_load_or_are_refused_by_name(
        self, scratch: Path, where: Where, literal: str
    ) -> None:
        path = _report_file(scratch, _with_literal(where, literal))
        loaded = _load(path)
        if literal in ("NaN", "Infinity", "-Infinity"):
            assert loaded == f"{path}: not valid JSON ({literal} is not a JSON number)"
        elif literal in ("1e999", "-1e999", NUMERIC_LITERALS[5]):
            assert isinstance(loaded, str) and "is out of range" in loaded, loaded
        elif len(literal.lstrip("-")) > MAX_DIGITS:
            digits = len(literal.lstrip("-"))
            assert loaded == f"{path}: an integer of {digits} digits; at most {MAX_DIGITS} are read"
        else:
            value = json.loads(literal)
            assert isinstance(loaded, PlatformReport) is REFERENCE.is_valid(
                _replaced(where, value)
            ), loaded

    @pytest.mark.parametrize("nest", ["array", "object"])
    @pytest.mark.parametrize(
        "where",
        [
            (),
            ("results", 2, "example"),
            ("results", 2, "message"),
            ("platform", "fingerprint", "extra"),
        ],
        ids=_location,
    )
    @settings(FUZZ, max_examples=12, deadline=5000)
    @given(depth=st.sampled_from([1, 50, 99, 100, 101, 1000, 100_000]))
    def test_deep_nesting_is_refused_past_the_limit_without_a_recursion_error(
        self,
        scratch: Path,
        nest: str,
        where: Where,
        depth: int,
    ) -> None:
        """``depth`` levels of arrays (``[[[...]]]``) or objects (``{"a": {"a": ...}}``) at
        ``where``, so that the document nests ``len(where) + depth`` deep."""
        literal = _nest(nest, depth)
        base = copy.deepcopy(VALID)
        if where:
            _at(base, where[:-1])[where[-1]] = None
        path = _report_file(scratch, _with_literal(where, literal, base))
        loaded = _load(path)
        if len(where) + depth > MAX_DEPTH:
            assert loaded == f"{path}: nested more than {MAX_DEPTH} levels deep"
        else:
            value = json.loads(literal)
            assert isinstance(loaded, PlatformReport) is REFERENCE.is_valid(
                _replaced(where, value, base)
            ), loaded

    @pytest.mark.parametrize(
        "invalid", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80"]
    )
    @settings(FUZZ, max_examples=10)
    @given(at=st.integers(0, len(HAND_EDITED)))
    def test_invalid_utf8_anywhere_is_refused_as_unreadable(
        self, scratch: Path, invalid: bytes, at: int
    ) -> None:
        data = HAND_EDITED[:at] + invalid + HAND_EDITED[at:]
        path = _report_file(scratch, data)
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: cannot read it: 'utf-8' codec can't decode"), loaded

    def test_a_bom_is_read_past_and_a_second_one_is_refused(self, tmp_path: Path) -> None:
        path = _report_file(tmp_path, b"\xef\xbb\xbf" + HAND_EDITED)
        loaded = _load(path)
        assert isinstance(loaded, PlatformReport)
        assert loaded.results == tuple(RESULTS)
        path = _report_file(tmp_path, b"\xef\xbb\xbf" * 2 + HAND_EDITED)
        assert _load(path) == (
            f"{path}: not valid JSON (Unexpected byte order mark: line 1, column 1); "
            "the file is truncated or corrupted"
        )

    @settings(FUZZ, max_examples=50)
    @given(
        where=st.sampled_from(STRINGS),
        in_key=st.booleans(),
        around=st.tuples(st.text(max_size=5), st.text(max_size=5)),
        surrogate=st.integers(0xD800, 0xDFFF).map(chr),
    )
    def test_a_lone_surrogate_in_a_string_or_key_is_refused_naming_where(
        self,
        scratch: Path,
        where: Where,
        in_key: bool,
        around: tuple[str, str],
        surrogate: str,
    ) -> None:
        """``"\\ud800"`` is valid JSON, but no UTF-8 file can hold it: merging such a report
        failed writing the matrix (UnicodeEncodeError)."""
        bad = around[0] + surrogate + around[1]
        if in_key:
            changed = copy.deepcopy(VALID)
            _at(changed, where[:-1])[bad] = 1
            where = where[:-1]
        else:
            changed = _replaced(where, bad)
        path = _report_file(scratch, json.dumps(changed))
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: {_location(where)}: "), loaded
        assert loaded.endswith(" is not Unicode text (it holds a lone surrogate)"), loaded

    @pytest.mark.parametrize("platform_id", ["lab-1\n", "lab-1\n\n", "\nlab-1", "lab 1"])
    def test_a_platform_id_with_a_line_break_is_refused(
        self, tmp_path: Path, platform_id: str
    ) -> None:
        """The id names the report's file and a column: Python's ``$`` matches before a last
        line break, JSON Schema's only at the end, so ``'lab-1\\n'`` used to pass."""
        path = _report_file(tmp_path, json.dumps(_replaced(("platform", "id"), platform_id)))
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: platform.id: {platform_id!r} does not match "), loaded

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ('{"schema": ' + json.dumps("x" * 100_000) + "}", "schema 'xxxxx"),
            ('{"schema": ' + "[" * 99 + "]" * 99 + "}", "schema [[[[[["),
            ('{"schema": ' + "9" * MAX_DIGITS + "}", "schema <14285-bit integer> is not"),
        ],
    )
    def test_a_wrong_schema_value_is_named_briefly(
        self, tmp_path: Path, text: str, problem: str
    ) -> None:
        path = _report_file(tmp_path, text)
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: {problem}") and len(loaded) < len(str(path)) + 200


# --- the journal of a killed run --------------------------------------------------------------

RECORD_LINES = [
    (json.dumps(r.to_record(), ensure_ascii=i != 1) + "\n").encode()
    for i, r in enumerate(JOURNALED)
]
"""The journal's lines as the writer writes them, the second saved unescaped by an editor."""
JOURNAL = b"".join(RECORD_LINES)


def _killed_run(directory: Path, journal: bytes) -> tuple[Path, Path]:
    """An unfinished report with ``journal`` beside it: (report, journal)."""
    path = _report_file(directory, json.dumps(UNFINISHED, indent=2))
    journal_path(path).write_bytes(journal)
    return path, journal_path(path)


class TestJournal:
    @settings(FUZZ, max_examples=80)
    @given(cut=st.integers(0, len(JOURNAL)))
    def test_a_journal_cut_anywhere_keeps_every_whole_line(self, scratch: Path, cut: int) -> None:
        path, _ = _killed_run(scratch, JOURNAL[:cut])
        kept = JOURNAL[:cut].count(b"\n")
        tail = JOURNAL[:cut].rpartition(b"\n")[2]
        if tail and tail == RECORD_LINES[kept].rstrip(b"\n"):
            kept += 1  # cut between the record and its newline: the record is whole
        loaded = _load(path)
        assert isinstance(loaded, PlatformReport), loaded
        assert loaded.complete is False
        assert loaded.results == (*RESULTS[:1], *JOURNALED[:kept])

    @settings(FUZZ, max_examples=100)
    @given(
        index=st.integers(0, len(RECORD_LINES) - 1),
        line=st.binary(max_size=60).filter(lambda b: b"\n" not in b)
        | st.text(max_size=60).filter(lambda t: "\n" not in t).map(str.encode),
        ended=st.booleans(),
    )
    def test_a_garbled_line_is_refused_naming_it_unless_it_is_a_cut_off_last_line(
        self, scratch: Path, index: int, line: bytes, ended: bool
    ) -> None:
        lines = [*RECORD_LINES[:index], line + b"\n", *RECORD_LINES[index + 1 :]]
        journal = b"".join(lines)
        if not ended:
            journal = journal.removesuffix(b"\n")
        path, journal_file = _killed_run(scratch, journal)
        try:
            loaded = load_report(path)
        except ReportError as exc:
            message = _refused_in_one_line(exc, journal_file)
            assert message.startswith(f"{journal_file}: line {index + 1}"), message
            return
        # Only the last line, cut off before its newline, may be left out.
        assert index == len(lines) - 1 and not ended, (index, line)
        assert loaded.results == (*RESULTS[:1], *JOURNALED[:index])

    @settings(FUZZ, max_examples=80)
    @given(index=st.integers(0, len(JOURNALED) - 1), data=st.data())
    def test_a_retyped_record_loads_exactly_when_the_schema_allows_it(
        self, scratch: Path, index: int, data: st.DataObject
    ) -> None:
        record = JOURNALED[index].to_record()
        where = data.draw(st.sampled_from([w for w, _ in _nodes(record)]), label="where")
        old_kind = _kind(_at(record, where))
        value = data.draw(json_values.filter(lambda v: _kind(v) != old_kind), label="value")
        changed = _replaced(where, value, record)
        lines = list(RECORD_LINES)
        lines[index] = (json.dumps(changed) + "\n").encode()
        path, journal_file = _killed_run(scratch, b"".join(lines))
        try:
            loaded = load_report(path)
        except ReportError as exc:
            message = _refused_in_one_line(exc, journal_file)
            assert message.startswith(f"{journal_file}: line {index + 1}: "), message
            assert not RESULT_REFERENCE.is_valid(changed)
            return
        assert RESULT_REFERENCE.is_valid(changed)
        again = Result.from_record(changed)
        assert again in loaded.results or again.key == RESULTS[0].key

    @pytest.mark.parametrize(
        ("line", "problem"),
        [
            (b"\xff\xfe{}", "line 1 is not UTF-8 text (invalid start byte)"),
            (b'{"a": NaN}', "line 1: not valid JSON (NaN is not a JSON number)"),
            (b"[" * 100_000 + b"]" * 100_000, f"line 1: nested more than {MAX_DEPTH} levels"),
            (b'{"a": 1, "a": 2}', "line 1: key 'a' appears twice in one object"),
            (b'"\\udc80"', "line 1: (top level): '\\udc80' is not Unicode text"),
            (b"9" * 5000, "line 1: an integer of 5000 digits"),
            (b"", "line 1 is not valid JSON (Expecting value: line 1, column 1)"),
        ],
    )
    def test_a_bad_line_before_the_last_is_refused_saying_why(
        self, tmp_path: Path, line: bytes, problem: str
    ) -> None:
        path, journal_file = _killed_run(tmp_path, line + b"\n" + JOURNAL)
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{journal_file}: {problem}"), loaded

    def test_a_journal_that_cannot_be_read_is_refused_naming_it(self, tmp_path: Path) -> None:
        path = _report_file(tmp_path, json.dumps(UNFINISHED))
        journal_path(path).mkdir()
        loaded = _load(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{journal_path(path)}: cannot read it: "), loaded


# --- the command line -------------------------------------------------------------------------


def _merge(argv: Sequence[str | Path], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``ptrport report merge ARGV``: the exit status and what it wrote on stderr."""
    capsys.readouterr()
    code = main(["report", "merge", *(str(a) for a in argv)])
    return code, capsys.readouterr().err


def _bad_input_in_one_line(code: int, err: str, path: Path) -> None:
    """Exit status 2 and one line on stderr, ``ptrport: <path>: <problem>``."""
    assert code == 2, err
    assert err.startswith(f"ptrport: {path}: ") and err.endswith("\n"), err
    assert err.splitlines() == [err.removesuffix("\n")], err


class TestCommandLine:
    @settings(FUZZ, max_examples=60, suppress_health_check=WITH_CAPSYS)
    @given(data=fuzzed_reports(), suffix=st.sampled_from([".md", ".html", ".json"]))
    def test_merging_a_fuzzed_report_writes_the_matrix_or_exits_2_in_one_line(
        self,
        scratch: Path,
        capsys: pytest.CaptureFixture[str],
        data: bytes,
        suffix: str,
    ) -> None:
        directory = scratch
        path = _report_file(directory, data)
        out = directory / f"out{suffix}"
        out.unlink(missing_ok=True)
        loads = isinstance(_load(path), PlatformReport)
        code, err = _merge([path, "-o", out], capsys)
        if loads:
            assert (code, err) == (0, "")
            assert out.exists()
        else:
            _bad_input_in_one_line(code, err, path)

    @pytest.mark.parametrize(
        ("report_text", "journal", "toml"),
        [
            ("[" * 100_000 + "]" * 100_000, None, None),
            (_with_literal(("results", 0, "examples"), "9" * 5000), None, None),
            (json.dumps(_replaced(("results", 2, "message"), "\ud800")), None, None),
            (json.dumps(_replaced(("platform", "fingerprint", "backends", "a\nb"), 1)), None, None),
            (json.dumps(UNFINISHED), "a directory", None),
            (json.dumps(UNFINISHED), b"\xff\n" + JOURNAL, None),
            (VALID_TEXT, None, "[[known]]\nsubjects = " + "[" * 100_000 + "]" * 100_000),
            (VALID_TEXT, None, "[[known]]\ncheck = " + "9" * 5000),
            (
                VALID_TEXT,
                None,
                f"[[known]]\ncheck = '{CHECK}'\nreason = 'r'\nissue = 0x{'f' * 5000}",
            ),
        ],
        ids=[
            "deep-report",
            "huge-int-in-report",
            "lone-surrogate",
            "line-break-in-a-key",
            "journal-is-a-directory",
            "journal-not-utf8",
            "deep-expectations",
            "huge-int-in-expectations",
            "huge-issue",
        ],
    )
    def test_inputs_that_crashed_the_command_are_bad_input_in_one_line(
        self,
        tmp_path: Path,
        capsys: pytest.CaptureFixture[str],
        report_text: str,
        journal: bytes | str | None,
        toml: str | None,
    ) -> None:
        """Each of these once ended ``ptrport report merge`` in a traceback (RecursionError,
        ValueError, UnicodeEncodeError writing the matrix, IsADirectoryError,
        UnicodeDecodeError), or in a message of two lines."""
        path = _report_file(tmp_path, report_text)
        named = path
        if journal is not None:
            named = journal_path(path)
            if isinstance(journal, bytes):
                named.write_bytes(journal)
            else:
                named.mkdir()
        argv: list[str | Path] = [path, "-o", tmp_path / "m.md"]
        if toml is not None:
            named = _toml_file(tmp_path, toml)
            argv += ["--expectations", named]
        code, err = _merge(argv, capsys)
        _bad_input_in_one_line(code, err, named)

    @pytest.mark.parametrize("suffix", [".md", ".html", ".json"])
    @pytest.mark.parametrize(
        "literal",
        [
            _nest("array", MAX_DEPTH - 4),
            _nest("object", MAX_DEPTH - 4),
            "9" * MAX_DIGITS,
            json.dumps("\u2028\x85\x1c" * 10_000),
        ],
        ids=["deep-array", "deep-object", "huge-int", "line-separators"],
    )
    def test_the_largest_examples_a_report_may_hold_render(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], literal: str, suffix: str
    ) -> None:
        """A failure's example as deep, long or strange as the reader lets through: every
        format renders it (the Markdown and HTML show examples, by recursion)."""
        where = ("results", 2, "example", "batch")
        path = _report_file(tmp_path, _with_literal(where, literal))
        assert isinstance(_load(path), PlatformReport)
        code, err = _merge([path, "-o", tmp_path / f"m{suffix}"], capsys)
        assert (code, err) == (0, "")

    @settings(FUZZ, max_examples=60, suppress_health_check=WITH_CAPSYS)
    @given(text=st.text(max_size=120) | st.sampled_from(["", "[[known]]\ncheck = 1\n"]))
    def test_merging_with_fuzzed_expectations_exits_0_or_2_in_one_line(
        self,
        scratch: Path,
        capsys: pytest.CaptureFixture[str],
        text: str,
    ) -> None:
        directory = scratch
        report = _report_file(directory, VALID_TEXT)
        toml = directory / "expectations.toml"
        toml.write_text(text, encoding="utf-8")
        code, err = _merge([report, "-o", directory / "m.md", "--expectations", toml], capsys)
        if code == 0:
            assert err == ""
            assert isinstance(_load_expectations(toml), Expectations)
        else:
            _bad_input_in_one_line(code, err, toml)


# --- the expectations file --------------------------------------------------------------------

VALID_TOML = (
    f'[[known]]\ncheck = "{CHECK}"\nsubjects = ["uint64/torch"]\nbackends = ["xpu"]\n'
    'platforms = ["intel-max-1550"]\nreason = "uint64 copy_ is not implemented on XPU"\n'
    'issue = "https://github.com/pytorch/pytorch/issues/12345"\n'
    f'\n[[known]]\ncheck = "{BATCH_CHECK}"\nreason = "Überlauf (溢出)"\n'
).encode()
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _toml_string(text: str) -> str:
    escaped = (
        "\\" + c if c in '"\\' else f"\\u{ord(c):04x}" if ord(c) < 0x20 or c == "\x7f" else c
        for c in text
    )
    return '"' + "".join(escaped) + '"'


def _toml_key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _toml_string(key)


def _toml(value: Any) -> str:
    """``value`` as a TOML value (tomllib only reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)  # inf, -inf and nan are TOML too
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    assert isinstance(value, dict)
    return "{" + ", ".join(f"{_toml_key(k)} = {_toml(v)}" for k, v in value.items()) + "}"


toml_scalars = (
    st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=12)
    | st.datetimes()
    | st.dates()
    | st.sampled_from(["https://x.org/1", "", " ", "http://a b"])
)
toml_values = st.recursive(
    toml_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
good_values: dict[str, st.SearchStrategy[Any]] = {
    "check": st.sampled_from([CHECK, BATCH_CHECK]),
    "reason": st.text(min_size=1, max_size=20).filter(str.strip),
    "issue": st.sampled_from(["https://github.com/pytorch/pytorch/issues/1", "http://x.org/a"]),
    "subjects": st.lists(st.text(max_size=12), min_size=1, max_size=3),
    "backends": st.lists(st.sampled_from(["cpu", "cuda", "xpu"]), min_size=1, max_size=3),
    "platforms": st.lists(st.text(max_size=12), min_size=1, max_size=2),
}


@st.composite
def entries(draw: st.DrawFn) -> dict[str, Any]:
    """A ``[[known]]`` table: each key left out, right, or any TOML value at all."""
    table: dict[str, Any] = {}
    for key, good in good_values.items():
        how = draw(st.sampled_from(["good", "good", "missing", "any"]))
        if how != "missing":
            table[key] = draw(good if how == "good" else toml_values)
    if draw(st.integers(0, 9)) == 0:
        table[draw(st.text(min_size=1, max_size=8))] = draw(toml_values)
    return table


def _problem(index: int, table: dict[str, Any]) -> str | None:
    """What the loader must say about ``known[index]``, in the order it checks; None if the
    entry is fine."""
    where = f"known[{index}]"
    for key in table:
        if key not in good_values:
            return f"{where}: unknown key"
    for key in ("check", "reason"):
        if key not in table:
            return f"{where}: {key!r} is required"
        if not isinstance(table[key], str) or not table[key].strip():
            return f"{where}.{key} must be a non-empty string"
    issue = table.get("issue")
    if not (
        issue is None
        or (
            isinstance(issue, str)
            and issue.startswith(("http://", "https://"))
            and not any(c.isspace() for c in issue)
        )
    ):
        return f"{where}.issue must be an http:// or https:// URL without spaces, not "
    for key in ("subjects", "backends", "platforms"):
        value = table.get(key)
        if key not in table:
            continue
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return f"{where}.{key} must be a list of strings"
        if not value:
            return f"{where}.{key} is empty; leave it out to mean any"
    return None


def _toml_file(directory: Path, data: bytes | str) -> Path:
    path = directory / "expectations.toml"
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


class TestExpectations:
    @settings(FUZZ, max_examples=150)
    @given(
        data=st.binary(max_size=200)
        | st.text(max_size=200).map(str.encode)
        | mutated(VALID_TOML)
        | st.integers(0, len(VALID_TOML)).map(lambda n: VALID_TOML[:n])
    )
    def test_random_and_mutated_files_load_or_are_refused_in_one_line(
        self, scratch: Path, data: bytes
    ) -> None:
        _load_expectations(_toml_file(scratch, data))

    @settings(FUZZ, max_examples=200)
    @given(tables=st.lists(entries(), min_size=1, max_size=3))
    def test_each_key_of_each_type_loads_or_is_refused_naming_the_entry_and_key(
        self, scratch: Path, tables: list[dict[str, Any]]
    ) -> None:
        text = "".join(
            "[[known]]\n" + "".join(f"{_toml_key(k)} = {_toml(v)}\n" for k, v in table.items())
            for table in tables
        )
        path = _toml_file(scratch, text)
        loaded = _load_expectations(path)
        problems = [p for i, t in enumerate(tables) if (p := _problem(i, t)) is not None]
        if problems:
            assert isinstance(loaded, str)
            assert loaded.startswith(f"{path}: {problems[0]}"), (loaded, problems[0])
            return
        assert isinstance(loaded, Expectations), loaded
        assert [
            (e.check, e.reason, e.issue, e.subjects, e.backends, e.platforms)
            for e in loaded.entries
        ] == [
            (
                t["check"],
                t["reason"],
                t.get("issue"),
                tuple(t.get("subjects", ())),
                tuple(t.get("backends", ())),
                tuple(t.get("platforms", ())),
            )
            for t in tables
        ]

    @pytest.mark.parametrize("key", list(good_values))
    @settings(FUZZ, max_examples=12, deadline=5000)
    @given(
        literal=st.integers(1, 6000).map(lambda n: "9" * n)
        | st.integers(1, 6000).map(lambda n: "0x" + "f" * n)
        | st.sampled_from(["1e999", "-1e999", "nan", "+inf", "1" + "0" * 400 + ".0"])
    )
    def test_huge_numbers_for_any_key_are_refused_briefly(
        self, scratch: Path, key: str, literal: str
    ) -> None:
        table = {k: _toml(v) for k, v in (("check", CHECK), ("reason", "r"))} | {key: literal}
        text = "[[known]]\n" + "".join(f"{k} = {v}\n" for k, v in table.items())
        path = _toml_file(scratch, text)
        loaded = _load_expectations(path)
        assert isinstance(loaded, str)
        assert len(loaded) < len(str(path)) + 200, loaded
        if literal.isdigit() and len(literal) > MAX_DIGITS:
            assert loaded == f"{path}: not valid TOML (an integer too long to read)"
        else:
            assert loaded.startswith(f"{path}: known[0].{key} must be "), loaded

    @pytest.mark.parametrize(
        "make",
        [
            lambda n: "[" * n + "]" * n,
            lambda n: "{a = " * n + "1" + "}" * n,
            lambda n: "[{a = " * n + "1" + "}]" * n,
        ],
        ids=["arrays", "inline-tables", "both"],
    )
    @pytest.mark.parametrize("key", ["subjects", "check", "issue", "known", "other"])
    @settings(FUZZ, max_examples=6, deadline=5000)
    @given(depth=st.sampled_from([1, 10, 100, 1000, 100_000]))
    def test_deep_nesting_is_refused_without_a_recursion_error(
        self,
        scratch: Path,
        make: Callable[[int], str],
        key: str,
        depth: int,
    ) -> None:
        if key in ("known", "other"):
            text = f"{key} = {make(depth)}\n"
        else:
            fields = {"check": "'a::b'", "reason": "'r'"} | {key: make(depth)}
            text = "[[known]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items())
        path = _toml_file(scratch, text)
        loaded = _load_expectations(path)
        if depth >= 1000:
            assert loaded == f"{path}: not valid TOML (nested too deeply)"
        else:
            # Only ``known = []`` is a file: one without entries.
            assert isinstance(loaded, str) or loaded.entries == (), loaded

    @pytest.mark.parametrize(
        ("text", "problem"),
        [
            ("[" + ".".join(["a"] * 5000) + "]\n", "unknown top-level key 'a'"),
            ("[[known]]\n" + ".".join(["a"] * 5000) + " = 1\n", "known[0]: unknown key 'a'"),
            ("[[known." + ".".join(["a"] * 5000) + "]]\n", "'known' must be an array of tables"),
            ("[[known]]\n" + "x" * 100_000 + " = 1\n", "known[0]: unknown key 'xxxxx"),
        ],
    )
    def test_deep_and_long_keys_are_named_briefly(
        self, tmp_path: Path, text: str, problem: str
    ) -> None:
        path = _toml_file(tmp_path, text)
        loaded = _load_expectations(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: {problem}") and len(loaded) < len(str(path)) + 200

    @pytest.mark.parametrize("invalid", [b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xc0\xaf"])
    @settings(FUZZ, max_examples=8)
    @given(at=st.integers(0, len(VALID_TOML)))
    def test_invalid_utf8_anywhere_is_refused_as_unreadable(
        self, scratch: Path, invalid: bytes, at: int
    ) -> None:
        path = _toml_file(scratch, VALID_TOML[:at] + invalid + VALID_TOML[at:])
        loaded = _load_expectations(path)
        assert isinstance(loaded, str)
        assert loaded.startswith(f"{path}: cannot read it: 'utf-8' codec can't decode"), loaded

    def test_a_bom_is_read_past(self, tmp_path: Path) -> None:
        with_bom = _load_expectations(_toml_file(tmp_path, b"\xef\xbb\xbf" + VALID_TOML))
        without = _load_expectations(_toml_file(tmp_path, VALID_TOML))
        assert isinstance(with_bom, Expectations) and isinstance(without, Expectations)
        assert with_bom.entries == without.entries and len(without.entries) == 2
