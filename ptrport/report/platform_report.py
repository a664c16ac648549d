"""Platform reports: one run's results and its platform, as versioned JSON (``ptrport.report/2``;
``ptrport.report/1``, the same without ``verdicts`` and a result's ``where``, is still read).

Written incrementally: when the first result arrives, ``<id>.json`` is written marked
incomplete, and each result is appended to the journal ``<id>.results.jsonl`` beside it; at the
end the full report replaces ``<id>.json`` atomically and the journal goes. A run that is
killed leaves the incomplete report and the journal, and :func:`load_report` reads both. A
partial run (a rerun of some checks) starts the file with the results it keeps from the report
it found (:func:`kept_results`), so that they are in it from the first write on; its own
results replace those of the same checks (:func:`merge_results`).
:func:`rewrite_report` changes a report in place (``ptrport probe`` swaps one scenario's results,
``ptrport bench`` its benchmarks section).
Every read is validated against the schema of its version
(``ptrport/report/schemas/report-2.schema.json``, ``report-1`` for a ``/1`` report); a file that
does not fit is refused with :class:`ReportError`, one line naming the file and the problem.
A ``/1`` report read is written back as ``/2`` (:func:`rewrite_report`).

Pure: records in, files out; no pytest, torch or numpy (reports are read where none is
installed). The layout is documented in ``docs/reference/report-schema.md``.
"""

from __future__ import annotations

import codecs
import json
import math
import os
import re
import secrets
import tempfile
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ptrport.errors import HarnessError
from ptrport.report import schema
from ptrport.report.records import Outcome, Result
from ptrport.report.verdicts import Verdicts

SCHEMA = "ptrport.report/2"
SCHEMA_FILE = "report-2"
READ_SCHEMAS = {"ptrport.report/1": "report-1", SCHEMA: SCHEMA_FILE}
"""The versions this ptrport reads, each with its schema file; it writes :data:`SCHEMA`."""
JOURNAL_SUFFIX = ".results.jsonl"

RUNNING = "running"
FINISHED = "finished"
INTERRUPTED = "interrupted"


class ReportError(HarnessError):
    """A report file that cannot be read: ``<path>: <problem>``."""


@dataclass(frozen=True)
class RunInfo:
    """How the run was made: when, with which selection and Hypothesis settings."""

    started: str
    hypothesis_profile: str
    seed: str
    backend_spec: str
    subjects: tuple[str, ...]
    argv: tuple[str, ...] = ()
    status: str = RUNNING
    finished: str | None = None
    duration_s: float | None = None
    scenarios: dict[str, dict[str, float]] | None = None
    """Per scenario, once the run ends: results, wall time, Hypothesis examples and examples
    per second (:func:`scenario_speed`)."""
    contracts: dict[str, dict[str, int]] | None = None
    """The contracts subjects declared (:mod:`ptrport.check.contracts`), by subject."""
    subject_specs: dict[str, str] | None = None
    """What ``--subject`` named each user subject by (``module:factory``, an entry point), so
    that a repro script loads it again."""

    def to_record(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "started": self.started,
            "finished": self.finished,
            "duration_s": None if self.duration_s is None else round(self.duration_s, 3),
            "hypothesis_profile": self.hypothesis_profile,
            "seed": self.seed,
            "backend_spec": self.backend_spec,
            "subjects": list(self.subjects),
            "argv": list(self.argv),
            **({} if self.scenarios is None else {"scenarios": self.scenarios}),
            **({"contracts": self.contracts} if self.contracts else {}),
            **({"subject_specs": self.subject_specs} if self.subject_specs else {}),
        }


def iso_time(timestamp: float) -> str:
    """A report's time (``RunInfo.started``, ``finished``): ``timestamp`` in UTC, to the
    second, in ISO 8601."""
    return datetime.fromtimestamp(timestamp, tz=UTC).isoformat(timespec="seconds")


def totals(results: Iterable[Result]) -> dict[str, int]:
    """How many results of each outcome, every outcome listed."""
    counted = Counter(r.outcome for r in results)
    return {o.value: counted.get(o, 0) for o in Outcome}


def scenario_speed(results: Iterable[Result]) -> dict[str, dict[str, float]]:
    """How long each scenario's results took and how many Hypothesis examples a second they
    ran, slowest first."""
    found: dict[str, dict[str, float]] = {}
    for r in results:
        entry = found.setdefault(r.scenario, {"results": 0, "wall_s": 0.0, "examples": 0})
        entry["results"] += 1
        entry["wall_s"] += r.duration_s
        entry["examples"] += r.examples
    for entry in found.values():
        wall = entry["wall_s"]
        entry["examples_per_s"] = round(entry["examples"] / wall, 1) if wall > 0 else 0.0
        entry["wall_s"] = round(wall, 3)
    return dict(sorted(found.items(), key=lambda item: -item[1]["wall_s"]))


def build_report(
    *,
    platform_id: str,
    fingerprint: dict[str, Any],
    execution_target: dict[str, Any],
    run: RunInfo,
    results: Sequence[Result],
) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "complete": run.status == FINISHED,
        "platform": {"id": platform_id, "fingerprint": fingerprint},
        "execution_target": execution_target,
        "run": run.to_record(),
        "totals": totals(results),
        "results": [r.to_record() for r in results],
    }


def report_path(directory: Path, platform_id: str) -> Path:
    return directory / f"{platform_id}.json"


def journal_path(report: Path) -> Path:
    return report.with_name(report.name.removesuffix(".json") + JOURNAL_SUFFIX)


def write_json_atomically(path: Path, document: dict[str, Any]) -> None:
    """Write ``document`` as :func:`write_text_atomically` does."""
    write_text_atomically(path, json.dumps(document, indent=2) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` so that a reader sees the old file or the new one, never half, with the
    permissions a plain ``open()`` gives a new file (``0o666`` less the umask)."""
    fd, temporary = _new_file_beside(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _new_file_beside(path: Path) -> tuple[int, Path]:
    """A new file in ``path``'s directory, open for writing. Not ``tempfile.mkstemp``: its
    files are ``0o600`` whatever the umask, and a report is read by others (CI, a web server
    of the reports directory) as ``matrix.html`` beside it is."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(tempfile.TMP_MAX):
        candidate = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(candidate, flags, 0o666), candidate
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name beside {path}")


def write_report(report: dict[str, Any], directory: Path) -> Path:
    """Write a whole report to ``directory/<platform id>.json`` atomically; return the path."""
    directory.mkdir(parents=True, exist_ok=True)
    path = report_path(directory, report["platform"]["id"])
    write_json_atomically(path, report)
    return path


class ReportWriter:
    """Writes one platform's report as its results arrive."""

    def __init__(
        self, directory: Path, header: dict[str, Any], kept: Sequence[Result] = ()
    ) -> None:
        """``header`` is a report from :func:`build_report` with no results yet; ``kept``, the
        results a partial run keeps from the report it replaces (:func:`kept_results`), are
        written with it, before the journal of the new ones starts."""
        self.kept = tuple(kept)
        self._header = header
        self._results: list[Result] = []
        self.path = write_report(self._document(header["run"], complete=False), directory)
        self._journal: IO[str] | None = journal_path(self.path).open("w", encoding="utf-8")

    @property
    def results(self) -> list[Result]:
        """The report's results as it would be written now: the kept ones, this run's in place
        of those of the same checks."""
        return merge_results(self.kept, self._results)

    def add(self, result: Result) -> None:
        self._results.append(result)
        if self._journal is not None:
            self._journal.write(json.dumps(result.to_record()) + "\n")
            self._journal.flush()

    def finish(self, run: RunInfo, verdicts: Verdicts | None = None) -> Path:
        """Replace the report with the complete one (or, for an interrupted run, with what it
        has, marked incomplete), with the run's ``verdicts`` where it has them, and remove the
        journal."""
        report = self._document(run.to_record(), complete=run.status == FINISHED)
        if verdicts is not None:
            report["verdicts"] = verdicts.to_record()
        write_json_atomically(self.path, report)
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        journal_path(self.path).unlink(missing_ok=True)
        return self.path

    def _document(self, run: dict[str, Any], *, complete: bool) -> dict[str, Any]:
        results = self.results
        return {
            **self._header,
            "complete": complete,
            "run": run,
            "totals": totals(results),
            "results": [r.to_record() for r in results],
        }


def kept_results(report: PlatformReport) -> tuple[Result, ...]:
    """The results of ``report`` as a partial run keeps them: each names the run it came from
    (``from_run``), its own where it was kept before."""
    origin = {
        "started": str(report.run.get("started", "")),
        "hypothesis_profile": str(report.run.get("hypothesis_profile", "")),
        "seed": str(report.run.get("seed", "")),
    }
    return tuple(
        r if r.from_run is not None else replace(r, from_run=origin) for r in report.results
    )


def merge_results(kept: Sequence[Result], new: Sequence[Result]) -> list[Result]:
    """``kept`` with ``new`` in place of the results of the same checks (:attr:`Result.key`:
    check, subject, backend), in ``kept``'s order; the new results of other checks follow."""
    replacing: dict[tuple[str, str | None, str], list[Result]] = {}
    for result in new:
        replacing.setdefault(result.key, []).append(result)
    merged: list[Result] = []
    placed: set[tuple[str, str | None, str]] = set()
    for result in kept:
        if result.key not in replacing:
            merged.append(result)
        elif result.key not in placed:
            merged.extend(replacing[result.key])
            placed.add(result.key)
    merged.extend(r for key, rs in replacing.items() if key not in placed for r in rs)
    return merged


@dataclass(frozen=True)
class PlatformReport:
    """A report as read back: its platform, how complete it is, its results."""

    path: Path
    platform_id: str
    fingerprint: dict[str, Any]
    execution_target: dict[str, Any]
    run: dict[str, Any]
    complete: bool
    results: tuple[Result, ...]
    benchmarks: dict[str, Any] | None = None
    """The ``benchmarks`` section (``ptrport bench``) as written, if the report has one."""
    verdicts: Verdicts | None = None
    """The verdict by difference on the user's tests, where the run made one
    (:mod:`ptrport.report.verdicts`)."""

    @property
    def totals(self) -> dict[str, int]:
        return totals(self.results)

    def versions(self) -> dict[str, str]:
        """The versions that identify this platform's software and runtime, by name."""
        found: dict[str, str] = {}
        for name, value in self.fingerprint.get("software", {}).items():
            if value is not None and name not in ("ptrport", "torch_built_for"):
                found[name] = str(value)
        target = self.execution_target
        for name, value in target.get("runtime", {}).items():
            if value is not None:
                found[name] = str(value)
        if target.get("driver"):
            found["driver"] = str(target["driver"])
        if target.get("device_model"):
            found["device"] = str(target["device_model"])
        return found

    def to_record(self) -> dict[str, Any]:
        """The report as a document again (complete or not, journal included)."""
        return {
            "schema": SCHEMA,
            "complete": self.complete,
            "platform": {"id": self.platform_id, "fingerprint": self.fingerprint},
            "execution_target": self.execution_target,
            "run": self.run,
            "totals": self.totals,
            "results": [r.to_record() for r in self.results],
            **({} if self.verdicts is None else {"verdicts": self.verdicts.to_record()}),
            **({} if self.benchmarks is None else {"benchmarks": self.benchmarks}),
        }


MAX_DEPTH = 100
"""How deep a report's JSON may nest, the top level counting 1 (a real report nests about 8):
a deeper one is refused before anything walks it with recursion (``json`` itself, a
renderer)."""
MAX_DIGITS = 4300
"""The most digits an integer may have (Python's own limit on converting one)."""
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Unreadable(Exception):
    """Why a JSON text is not one ptrport reads: ``problem`` follows the file's name in a
    message; ``syntax`` is the parser's complaint when the text is not JSON at all (the usual
    sign of a file cut short)."""

    def __init__(self, problem: str, *, syntax: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.syntax = syntax


def _decode(text: str) -> Any:
    """``text`` as JSON, strictly: no ``NaN`` or ``Infinity`` (Python's extension), no number
    too large for a float or of more than :data:`MAX_DIGITS` digits, no key twice in one
    object, no lone surrogate in a string (it cannot be written out as UTF-8 again), no
    nesting deeper than :data:`MAX_DEPTH`. Raises :class:`_Unreadable`."""
    try:
        document = json.loads(
            text,
            object_pairs_hook=_object,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except json.JSONDecodeError as exc:
        # The one BOM a file may start with is gone by now; json's advice for another is moot.
        problem = (
            "Unexpected byte order mark" if exc.msg.startswith("Unexpected UTF-8 BOM") else exc.msg
        )
        where = f"{problem}: line {exc.lineno}, column {exc.colno}"
        raise _Unreadable(f"not valid JSON ({where})", syntax=where) from None
    except RecursionError:
        raise _Unreadable(f"nested more than {MAX_DEPTH} levels deep") from None
    _check_tree(document)
    return document


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _Unreadable(f"key {schema.short(key)} appears twice in one object")
            seen.add(key)
    return found


def _constant(name: str) -> Any:
    raise _Unreadable(f"not valid JSON ({name} is not a JSON number)")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        shown = text if len(text) <= 30 else text[:27] + "..."
        raise _Unreadable(f"number {shown} is out of range")
    return value


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_DIGITS:
        raise _Unreadable(f"an integer of {digits} digits; at most {MAX_DIGITS} are read")
    return int(text)


def _check_tree(document: Any) -> None:
    """Refuse nesting deeper than :data:`MAX_DEPTH` and strings (keys too) that hold a lone
    surrogate, walking without recursion; a problem is named at its location."""
    pending: list[tuple[Any, tuple[str | int, ...]]] = [(document, ())]
    while pending:
        value, where = pending.pop()
        if isinstance(value, str):
            _check_text(value, where)
            continue
        if isinstance(value, dict):
            children: list[tuple[str | int, Any]] = list(value.items())
        elif isinstance(value, list):
            children = list(enumerate(value))
        else:
            continue
        if len(where) >= MAX_DEPTH:
            raise _Unreadable(f"nested more than {MAX_DEPTH} levels deep")
        for key, _ in children:
            if isinstance(key, str):
                _check_text(key, where, key=True)
        pending.extend((item, (*where, key)) for key, item in reversed(children))


def _check_text(text: str, where: tuple[str | int, ...], *, key: bool = False) -> None:
    if text.isascii() or not _SURROGATE.search(text):
        return
    location = ""
    for part in where:
        location = schema.member(location, part) if isinstance(part, str) else f"{location}[{part}]"
    what = f"key {schema.short(text)}" if key else schema.short(text)
    raise _Unreadable(
        f"{location or '(top level)'}: {what} is not Unicode text (it holds a lone surrogate)"
    )


def _parse(path: Path, text: str) -> Any:
    try:
        return _decode(text)
    except _Unreadable as exc:
        if exc.syntax is not None:
            raise ReportError(
                f"{path}: not valid JSON ({exc.syntax}); the file is truncated or corrupted"
            ) from None
        raise ReportError(f"{path}: {exc.problem}") from None


def report_from_document(document: Any, path: Path) -> PlatformReport:
    """Validate a parsed report document and read it; ``path`` names it in errors."""
    if not isinstance(document, dict) or "schema" not in document:
        raise ReportError(f"{path}: not a ptrport report (no 'schema' field)")
    version = document["schema"]
    if not isinstance(version, str) or version not in READ_SCHEMAS:
        raise ReportError(
            f"{path}: schema {schema.short(version)} is not supported; "
            f"this ptrport reads {' and '.join(sorted(READ_SCHEMAS, reverse=True))}"
        )
    problems = schema.errors(document, schema.load_schema(READ_SCHEMAS[version]))
    if problems:
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        raise ReportError(f"{path}: {problems[0]}{more}")
    return PlatformReport(
        path=path,
        platform_id=document["platform"]["id"],
        fingerprint=document["platform"]["fingerprint"],
        execution_target=document["execution_target"],
        run=document["run"],
        complete=document["complete"],
        results=tuple(Result.from_record(r) for r in document["results"]),
        benchmarks=document.get("benchmarks"),
        verdicts=Verdicts.from_record(document["verdicts"]) if "verdicts" in document else None,
    )


def _journal_results(path: Path) -> list[Result]:
    """Results from a killed run's journal, one JSON record a line, each line written whole
    with its newline. A kill in the middle of a write leaves a last line without its newline
    that is not (yet) JSON: that one is left out. Any other line that is not a result is
    refused, naming its number."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReportError(f"{path}: cannot read it: {exc}") from None
    *lines, last = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    if last:
        lines.append(last)
    result_schema = {"$ref": "#/$defs/result", **_defs()}
    found = []
    for number, line in enumerate(lines, 1):
        cut_off = number == len(lines) and bool(last)
        try:
            record = _decode(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            if cut_off:
                break
            raise ReportError(f"{path}: line {number} is not UTF-8 text ({exc.reason})") from None
        except _Unreadable as exc:
            if exc.syntax is None:
                raise ReportError(f"{path}: line {number}: {exc.problem}") from None
            if cut_off:
                break
            raise ReportError(f"{path}: line {number} is not valid JSON ({exc.syntax})") from None
        problems = schema.errors(record, result_schema)
        if problems:
            raise ReportError(f"{path}: line {number}: {problems[0]}")
        found.append(Result.from_record(record))
    return found


def _defs() -> dict[str, Any]:
    return {"$defs": schema.load_schema(SCHEMA_FILE)["$defs"]}


def _read_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ReportError(f"{path}: cannot read it: {exc}") from None
    return _parse(path, text)


def load_report(path: Path) -> PlatformReport:
    """Read and validate one platform report, with its journal if the run did not finish."""
    return _with_journal(report_from_document(_read_json(path), path))


def _with_journal(report: PlatformReport) -> PlatformReport:
    """An unfinished report with its journal's results, each in place of a result of the same
    check in the file (those a killed partial run kept from the report before it)."""
    path = report.path
    journal = journal_path(path)
    if report.complete or not journal.exists():
        return report
    results = merge_results(report.results, _journal_results(journal))
    return replace(report, complete=False, results=tuple(results))


def rewrite_report(
    path: Path, change: Callable[[PlatformReport], PlatformReport]
) -> PlatformReport:
    """Replace the report at ``path`` with ``change`` of it as read, journal included; return
    the report as written.

    The new document is validated, then replaces the file at ``path`` atomically (whatever
    platform id it holds). A journal beside an unfinished report is folded into the file and
    removed, so that its results survive and ones ``change`` replaced do not come back from it.
    Raises :class:`ReportError` for a file that cannot be read or a change that does not fit
    the schema."""
    new = change(load_report(path))
    document = new.to_record()
    report_from_document(document, path)
    write_json_atomically(path, document)
    journal_path(path).unlink(missing_ok=True)
    return new


def replace_scenario_results(
    path: Path, scenario: str, backends: Collection[str], results: Sequence[Result]
) -> PlatformReport:
    """Replace the results of ``scenario`` on ``backends`` in the report at ``path`` with
    ``results``, keeping every other result as it was (:func:`rewrite_report`); return the
    report as written. Raises :class:`ReportError` for a file that cannot be read, and
    ``ValueError`` for ``results`` of another scenario or backend."""
    stray = [r for r in results if r.scenario != scenario or r.backend not in backends]
    if stray:
        raise ValueError(
            f"result {stray[0].check} on {stray[0].backend} is not of scenario {scenario!r} "
            f"on {', '.join(sorted(backends))}"
        )

    def with_results(old: PlatformReport) -> PlatformReport:
        kept = [r for r in old.results if r.scenario != scenario or r.backend not in backends]
        return replace(old, results=(*kept, *results))

    return rewrite_report(path, with_results)


MATRIX_SCHEMA = "ptrport.matrix/1"
"""A merged compatibility matrix; it carries the platform reports it was made from."""


def _reports_in(path: Path, *, in_directory: bool = False) -> list[PlatformReport]:
    if path.is_dir():
        files = sorted(p for p in path.glob("*.json") if p.is_file())
        found = [r for p in files for r in _reports_in(p, in_directory=True)]
        if not found:
            raise ReportError(f"{path}: no reports (*.json) in this directory")
        return found
    document = _read_json(path)
    if isinstance(document, dict) and document.get("schema") == MATRIX_SCHEMA:
        if in_directory:
            # A matrix merged from the reports beside it would name each platform twice.
            return []
        embedded = document.get("reports")
        if not isinstance(embedded, list):
            raise ReportError(f"{path}: a matrix without its 'reports' list")
        return [
            report_from_document(d, Path(f"{path}#reports[{i}]")) for i, d in enumerate(embedded)
        ]
    return [_with_journal(report_from_document(document, path))]


def by_platform(reports: Sequence[PlatformReport]) -> dict[str, PlatformReport]:
    """The reports by platform id; two with the same id are refused, naming both files."""
    found: dict[str, PlatformReport] = {}
    for report in reports:
        if report.platform_id in found:
            raise ReportError(
                f"{report.path}: platform id {report.platform_id!r} is also the id of "
                f"{found[report.platform_id].path}; give each platform its own --platform-name"
            )
        found[report.platform_id] = report
    return found


def load_reports(paths: Sequence[Path]) -> list[PlatformReport]:
    """Every platform report named: report files, directories of them, or merged matrices.
    Two reports with the same platform id are refused, naming both files."""
    if not paths:
        raise ReportError("no report files given")
    found = [report for path in paths for report in _reports_in(path)]
    by_platform(found)
    return found
