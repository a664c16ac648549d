"""The engines' own test files, unchanged, under ptrport: each file of an engine release's
source distribution runs with ``--ptrport-all --ptrport-stand-in=cuda`` on the four CPU
backends, and the verdict by difference is counted per file.

    python benchmarks/engine_suites.py [--json FILE] [--markdown FILE] [--engine NAME[,NAME]]
                                       [--files GLOB] [--cache DIR] [--timeout S]

What runs is listed in ``benchmarks/engine_suites/suites.toml``: per release of
``benchmarks/real_engine_runs/engines.toml`` (whose virtualenv, under the same cache, this
script shares with ``real_engine_runs.py``), the test files, folders or globs inside its source
distribution, each with its reason and, for a historic bug, what it must show (``expect``).

The source distribution is fetched by its link on the index's simple page (the JSON form of
``https://pypi.org/simple/<name>/``; ``pip download`` of vLLM's sdist builds its metadata, which
fails on a machine without CUDA), checked against the page's sha256 and kept under the cache's
``sdists/``. Only its ``tests/`` tree and the file that holds its pytest configuration are
extracted: the engine is the installed release, never the source tree beside its tests.

Each file runs alone, as the engine runs it: pytest in the release's virtualenv with the
engine's own configuration (``-c``, ``--rootdir`` the extracted root, which is on
``PYTHONPATH`` so that ``tests.utils`` imports) and every ``conftest.py`` of the engine that
imports here. Where one does not (vLLM's root ``tests/conftest.py`` imports test-only packages
that the release does not require), the file is run again with ``--confcutdir`` just below it,
and later files under that conftest start there; a conftest in the file's own folder that does
not import means ``--noconftest``. The output names the choice per file. A file whose module
does not import here is listed with the collection error's last line.

The options are ``--ptrport-all --ptrport-stand-in=cuda
--backend=cpu,cpu-usm,cpu-tbi,cpu-placed -p no:cacheprovider``, the default isolation, a
report directory of its own, and the release's environment from ``engines.toml``
(``CUDA_VISIBLE_DEVICES=``). The counts come from the results of the platform report the run
writes (``<report-dir>/<release>.json``, or its journal where the run was cut off), per test
(a check, all backends together):

- collected: distinct tests;
- runnable: passed on ``cpu``;
- address-sensitive: passed on ``cpu``, failed (or errored, crashed, timed out) on ``cpu-usm``,
  ``cpu-tbi`` or ``cpu-placed``; each is listed with those backends, its first error line and
  its frame ``file:line`` (the result's ``where``, else the crash line pytest printed), said to
  be in the engine's code or in the test's;
- cannot run here: failed on ``cpu``; skipped: skipped on ``cpu`` (with the commonest reason).

A file that does not run says why instead (its ``status``): ``cannot import`` (the collection
error's last line naming the exception), ``module skipped`` (the module skips itself here, and
its reason), ``release skipped`` (the release cannot be installed, or its sdist fetched);
``cut off`` where it ran past ``--timeout`` (what it finished is counted).

The script prints a line per file (and one per address-sensitive test), ``--json FILE`` writes
one object per file (``kind`` ``file``: the counts, ``skipped_because``, ``seconds``,
``conftest``, ``status``, ``problem``, ``reason``, ``expect`` and ``unmet``) and one per
address-sensitive test (``kind`` ``address-sensitive``: ``test``, ``backends``, ``message``,
``where``, ``in`` the ``engine``'s code or the ``test``'s), ``--markdown FILE`` a table per
entry of ``suites.toml`` and one per file, each with its reason.

Exit status: 0; 1 when a file with an ``expect`` shows otherwise; 2 for bad arguments, a
malformed ``suites.toml`` or ``engines.toml`` (one line naming the file and entry), or a
checkout whose ptrport does not build. A release that cannot be installed, or whose source
distribution cannot be fetched, prints ``skipped: <release>: <reason>`` and is no failure.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import real_engine_runs as engine_runs

SUITES = Path(__file__).resolve().parent / "engine_suites" / "suites.toml"
SIMPLE = "https://pypi.org/simple/{name}/"
SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"
REFERENCE = "cpu"
SHIFTED = ("cpu-usm", "cpu-tbi", "cpu-placed")
BACKENDS = (REFERENCE, *SHIFTED)
FAILING = ("failed", "error", "crashed", "timed out")
EXPECT = ("address-sensitive", "green")
CONFIGS = (
    ("pytest.ini", "[pytest]"),
    (".pytest.ini", "[pytest]"),
    ("pyproject.toml", "[tool.pytest"),
    ("tox.ini", "[pytest]"),
    ("setup.cfg", "[tool:pytest]"),
)
"""pytest's configuration files, in the order it looks for them, and what makes one count."""
FILE_TIMEOUT_S = 1800
"""The longest one file may take, all backends together."""


class SuitesError(ValueError):
    """A malformed ``suites.toml``; the message names the file and entry."""


@dataclass(frozen=True)
class Entry:
    """One ``[[files]]`` entry: a file, folder or glob of a release's source distribution."""

    engine: str
    version: str
    path: str
    reason: str
    expect: str = ""

    @property
    def release(self) -> str:
        return f"{self.engine}-{self.version}"


@dataclass(frozen=True)
class Finding:
    """An address-sensitive test: passed on ``cpu``, failed on ``backends``."""

    test: str
    backends: tuple[str, ...]
    message: str
    where: str
    in_tests: bool | None
    """Whether the frame is in the test's code (``None``: no frame)."""

    @property
    def in_code(self) -> str:
        return {True: "test", False: "engine", None: "?"}[self.in_tests]


@dataclass
class Counts:
    """The verdicts of one file's tests, from its report's results."""

    collected: int = 0
    runnable: int = 0
    cannot_run: int = 0
    skipped: int = 0
    findings: list[Finding] = field(default_factory=list)
    skip_reasons: Counter[str] = field(default_factory=Counter)
    """Why the tests skipped on ``cpu`` skipped, and how many of them."""

    @property
    def skipped_because(self) -> str:
        """The commonest reason a test skipped on ``cpu``, with how many it holds for."""
        if not self.skip_reasons:
            return ""
        reason, n = self.skip_reasons.most_common(1)[0]
        return f"{n} of {self.skipped}: {reason}" if n < self.skipped else reason


@dataclass
class FileRun:
    """What happened to one file."""

    entry: Entry
    file: str
    conftest: str = ""
    """How the engine's conftests were taken: ``all``, ``--confcutdir=DIR (why)``, ..."""
    seconds: float = 0.0
    counts: Counts = field(default_factory=Counts)
    status: str = "ran"
    """``ran``; ``cut off`` (it ran past the timeout; what it finished is counted);
    ``module skipped`` (the module skips itself here); ``cannot import`` (a collection error);
    ``release skipped`` (the release cannot be installed or fetched here)."""
    problem: str = ""
    """Why, where the status is not ``ran``: the skip's reason, the collection error's last
    line, the timeout, the install's error."""

    @property
    def unmet(self) -> str:
        """What its entry expects and it does not show, or ``""``."""
        if not self.entry.expect or self.status == "release skipped":
            return ""
        in_engine = [f for f in self.counts.findings if f.in_tests is not True]
        if self.entry.expect == "address-sensitive" and not in_engine:
            return "no test is address-sensitive in the engine's code"
        if self.entry.expect == "green" and (in_engine or not self.counts.runnable):
            return (
                f"{len(in_engine)} address-sensitive in the engine's code"
                if in_engine
                else "no test runs"
            )
        return ""

    def as_json(self) -> list[dict[str, object]]:
        head: dict[str, object] = {
            "engine": self.entry.engine,
            "version": self.entry.version,
            "file": self.file,
        }
        rows: list[dict[str, object]] = [
            {
                "kind": "file",
                **head,
                "reason": self.entry.reason,
                "expect": self.entry.expect,
                "conftest": self.conftest,
                "collected": self.counts.collected,
                "runnable": self.counts.runnable,
                "address_sensitive": len(self.counts.findings),
                "cannot_run_here": self.counts.cannot_run,
                "skipped": self.counts.skipped,
                "skipped_because": self.counts.skipped_because,
                "seconds": round(self.seconds, 1),
                "status": self.status,
                "problem": self.problem,
                "unmet": self.unmet,
            }
        ]
        rows += [
            {
                "kind": "address-sensitive",
                **head,
                "test": f.test,
                "backends": list(f.backends),
                "message": f.message,
                "where": f.where,
                "in": f.in_code,
            }
            for f in self.counts.findings
        ]
        return rows


# --- the configuration -------------------------------------------------------------------------


def parse_suites(text: str, source: str, releases: Iterable[engine_runs.Release]) -> list[Entry]:
    """The entries of ``suites.toml``, each naming a release of ``releases``; :class:`SuitesError`
    names ``source`` and the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuitesError(f"{source}: {exc}") from None
    if set(data) - {"files"}:
        raise SuitesError(f"{source}: unknown table {sorted(set(data) - {'files'})[0]!r} (files)")
    pinned = sorted(release.name for release in releases)
    keys = {"engine", "version", "path", "reason", "expect"}
    entries: list[Entry] = []
    for number, spec in enumerate(data.get("files", []), start=1):
        where = f"{source}: files[{number}]"
        if not isinstance(spec, dict) or set(spec) - keys:
            raise SuitesError(f"{where}: keys are {', '.join(sorted(keys))}")
        values = {key: spec.get(key, "") for key in keys}
        if not all(isinstance(value, str) for value in values.values()):
            raise SuitesError(f"{where}: {', '.join(sorted(keys))} are strings")
        entry = Entry(**values)
        if not entry.engine or not entry.version or not entry.path or not entry.reason:
            raise SuitesError(f"{where}: engine, version, path and reason are required")
        if entry.release not in pinned:
            raise SuitesError(
                f"{where}: {entry.engine} {entry.version} is not a release of engines.toml "
                f"({', '.join(pinned)})"
            )
        path = PurePosixPath(entry.path)
        if path.is_absolute() or ".." in path.parts:
            raise SuitesError(f"{where}: path {entry.path!r} is not inside the sdist")
        if entry.expect and entry.expect not in EXPECT:
            raise SuitesError(f"{where}: expect must be one of {', '.join(EXPECT)}")
        entries.append(entry)
    return entries


def load(
    suites: Path, corpus: Path
) -> tuple[list[engine_runs.Release], list[Entry], dict[str, list[str]]]:
    """The releases of ``corpus/engines.toml`` that ``suites`` names, its entries, and per
    release the corpus's test files (what a virtualenv built here is checked with)."""
    releases, expectations = engine_runs.load_corpus(corpus)
    try:
        text = suites.read_text()
    except OSError as exc:
        raise SuitesError(f"{suites}: {exc.strerror}") from None
    entries = parse_suites(text, str(suites), releases)
    named = {entry.release for entry in entries}
    files = {
        release.name: engine_runs._files(
            e for e in expectations if (e.engine, e.version) == (release.engine, release.version)
        )
        for release in releases
    }
    return [release for release in releases if release.name in named], entries, files


# --- source distributions ----------------------------------------------------------------------


def sdist_link(document: Mapping[str, object], name: str, version: str) -> tuple[str, str]:
    """The URL and sha256 of the ``.tar.gz`` of ``name`` ``version`` on a simple page (its JSON
    form, PEP 691); :class:`engine_runs.CannotInstall` where the page lists none."""
    files = document.get("files")
    if not isinstance(files, list):
        raise engine_runs.CannotInstall(f"the simple page of {name} lists no files")
    for listed in files:
        filename = str(listed.get("filename", ""))
        if not filename.endswith(".tar.gz"):
            continue
        project, _, release = filename.removesuffix(".tar.gz").rpartition("-")
        if engine_runs._normalized(project) != engine_runs._normalized(name) or release != version:
            continue
        sha256 = (listed.get("hashes") or {}).get("sha256", "")
        if not sha256:
            raise engine_runs.CannotInstall(f"{filename}: the simple page gives no sha256")
        return str(listed["url"]), str(sha256)
    raise engine_runs.CannotInstall(
        f"no source distribution of {name} {version} on the index (wheels only?)"
    )


def _get(url: str, accept: str = "") -> bytes:
    request = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return bytes(response.read())
    except (urllib.error.URLError, OSError) as exc:
        raise engine_runs.CannotInstall(f"{url}: {exc}") from None


def fetch_sdist(name: str, version: str, into: Path) -> Path:
    """The source distribution of ``name`` ``version``, kept under ``into`` (fetched once)."""
    page = json.loads(_get(SIMPLE.format(name=engine_runs._normalized(name)), SIMPLE_JSON))
    url, sha256 = sdist_link(page, name, version)
    path = into / url.rsplit("/", 1)[-1].split("#", 1)[0]
    if path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256:
        return path
    data = _get(url)
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise engine_runs.CannotInstall(f"{url} has sha256 {digest}, the index says {sha256}")
    into.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    partial.replace(path)
    return path


def extract_tests(sdist: Path, into: Path) -> Path:
    """``tests/`` and the pytest configuration of ``sdist``, in ``into`` (once per sdist)."""
    stamp = into / "ptrport-extracted"
    if stamp.is_file() and stamp.read_text() == sdist.name:
        return into
    keep = {name for name, _ in CONFIGS}
    with tarfile.open(sdist) as archive:
        members = []
        for member in archive.getmembers():
            _, _, inside = member.name.partition("/")
            if inside.startswith("tests/") or inside in keep:
                member.name = inside
                members.append(member)
        if not members:
            raise engine_runs.CannotInstall(f"{sdist.name} ships no tests/")
        archive.extractall(into, members=members, filter="data")
    stamp.write_text(sdist.name)
    return into


def pytest_config(root: Path) -> Path | None:
    """The file that holds the engine's pytest configuration, as pytest would pick it."""
    for name, section in CONFIGS:
        path = root / name
        if path.is_file() and (name == "pytest.ini" or section in path.read_text()):
            return path
    return None


def expand(entries: Iterable[Entry], root: Path) -> list[tuple[Entry, str]]:
    """Each test file the entries name, relative to ``root``, under the first entry naming it;
    an entry that names none is kept with its own path (it then has nothing to run)."""
    found: list[tuple[Entry, str]] = []
    seen: set[str] = set()
    for entry in entries:
        target = root / entry.path
        if target.is_dir():
            paths = sorted(target.rglob("test_*.py"))
        elif any(c in entry.path for c in "*?["):
            paths = sorted(p for p in root.glob(entry.path) if p.is_file())
        else:
            paths = [target] if target.is_file() else []
        names = [p.relative_to(root).as_posix() for p in paths]
        if not names:
            found.append((entry, entry.path))
        for name in names:
            if name not in seen:
                seen.add(name)
                found.append((entry, name))
    return found


# --- counting ----------------------------------------------------------------------------------


def report_results(report_dir: Path, platform: str) -> list[dict[str, object]]:
    """The results of ``<report_dir>/<platform>.json``, with those of its journal where the run
    was cut off before it wrote them (a last line cut in half is left out)."""
    results: list[dict[str, object]] = []
    report = report_dir / f"{platform}.json"
    with contextlib.suppress(OSError, ValueError):
        results += json.loads(report.read_text()).get("results", [])
    journal = report_dir / f"{platform}.results.jsonl"
    if journal.is_file():
        for line in journal.read_text().splitlines():
            try:
                results.append(json.loads(line))
            except ValueError:
                continue
    return results


def _frame(where: str, root: Path | None = None) -> str:
    """``file:line`` relative to the engine's sdist root or to site-packages."""
    if root is not None and where.startswith(f"{root}/"):
        return where.removeprefix(f"{root}/")
    return where.rpartition("site-packages/")[2] if "site-packages/" in where else where


def crash_frames(output: str, root: Path | None = None) -> dict[str, str]:
    """Per failure section of pytest's output (``TestClass.test[params]``), the line of the
    crash, ``file:line``."""
    frames: dict[str, str] = {}
    title = ""
    for line in output.splitlines():
        head = re.fullmatch(r"_{3,} (\S.*?) _{3,}", line)
        if head:
            title = head.group(1)
            continue
        crash = re.fullmatch(r"(\S[^:\s]*):(\d+): [A-Za-z_][\w.]*", line)
        if crash and title:
            frames[title] = _frame(f"{crash.group(1)}:{crash.group(2)}", root)
    return frames


def _section(nodeid: str) -> str:
    return nodeid.split("::", 1)[-1].replace("::", ".")


def count(
    results: Iterable[Mapping[str, object]],
    frames: Mapping[str, str] | None = None,
    root: Path | None = None,
) -> Counts:
    """The verdict of each test (a ``check``, its results on every backend): runnable where it
    passed on ``cpu``, address-sensitive where it then failed on an upper-half or placed
    backend, cannot run here where it failed on ``cpu``, skipped otherwise. A finding's frame is
    its first failure's ``where``, else that failure's crash line in ``frames``
    (:func:`crash_frames`); it is in the test's code where it is a file of ``root`` (the
    extracted tests; without one, under ``tests/``)."""
    by_test: dict[str, dict[str, Mapping[str, object]]] = {}
    for result in results:
        by_test.setdefault(str(result["check"]), {})[str(result["backend"])] = result
    counts = Counts(collected=len(by_test))
    for test, on in sorted(by_test.items()):
        reference = str(on.get(REFERENCE, {}).get("outcome", ""))
        if reference in FAILING:
            counts.cannot_run += 1
            continue
        if reference != "passed":
            counts.skipped += 1
            why = str(on.get(REFERENCE, {}).get("message") or "").strip().splitlines()
            counts.skip_reasons[why[0] if why else reference or "no result on cpu"] += 1
            continue
        counts.runnable += 1
        failed = [on[b] for b in SHIFTED if str(on.get(b, {}).get("outcome", "")) in FAILING]
        if not failed:
            continue
        first = failed[0]
        where = _frame(str(first.get("where") or ""), root) or (frames or {}).get(
            _section(str(first.get("nodeid", ""))), ""
        )
        path = where.rpartition(":")[0]
        if root is None:
            in_tests = path.startswith("tests/")
        else:
            in_tests = not Path(path).is_absolute() and (root / path).is_file()
        counts.findings.append(
            Finding(
                test,
                tuple(str(r["backend"]) for r in failed),
                (str(first.get("message") or "").strip().splitlines() or [""])[0],
                where,
                in_tests if where else None,
            )
        )
    return counts


# --- running -----------------------------------------------------------------------------------


def _collection_error(output: str) -> str:
    """The last line of a collection error that names the exception (``E   ModuleNotFoundError:
    ...``), else its last line, or ``""``."""
    section = output.partition(" ERROR collecting ")[2]
    raised = [line[1:].strip() for line in section.splitlines() if re.match(r"E\s", line)]
    named = [line for line in raised if re.match(r"[\w.]+(Error|Exception|Exit)\b", line)]
    return (named or raised or [""])[-1]


def _broken_conftest(output: str, root: Path) -> tuple[str, str] | None:
    """The conftest (relative to ``root``) that did not import, and its error's last line."""
    found = re.search(r"ImportError while loading conftest '([^']+)'", output)
    if not found:
        return None
    raised = [line[1:].strip() for line in output.splitlines() if re.match(r"E\s", line)]
    conftest = Path(found.group(1))
    name = conftest.relative_to(root).as_posix() if conftest.is_relative_to(root) else str(conftest)
    return name, raised[-1] if raised else "ImportError"


def conftest_options(file: str, broken: Mapping[str, str], root: Path) -> tuple[list[str], str]:
    """The options that leave out the deepest ``broken`` conftest on ``file``'s path (both
    relative to ``root``), and the words that say so (``all`` where none is broken)."""
    folder = PurePosixPath(file).parent
    on_path = [c for c in broken if PurePosixPath(c).parent in (folder, *folder.parents)]
    if not on_path:
        return [], "all"
    deepest = max(on_path, key=lambda c: len(PurePosixPath(c).parts))
    why = f"{deepest}: {broken[deepest]}"
    if PurePosixPath(deepest).parent == folder:
        return ["--noconftest"], f"--noconftest ({why})"
    cut = PurePosixPath(*folder.parts[: len(PurePosixPath(deepest).parent.parts) + 1])
    return [f"--confcutdir={root / cut}"], f"--confcutdir={cut} ({why})"


def _run_pytest(
    command: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> tuple[int | None, str]:
    """pytest's exit status (``None`` when it took over ``timeout``) and its output; on a
    timeout its process group is ended (the isolation's children end with it)."""
    with subprocess.Popen(
        command, cwd=cwd, env=dict(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, start_new_session=True,
    ) as process:  # fmt: skip
        try:
            output, _ = process.communicate(timeout=timeout)
            return process.returncode, output
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            output, _ = process.communicate()
            return None, output


def run_file(
    release: engine_runs.Release,
    venv: Path,
    root: Path,
    entry: Entry,
    file: str,
    broken: dict[str, str],
    scratch: Path,
    timeout: float = FILE_TIMEOUT_S,
) -> FileRun:
    """Runs one test file of the engine on the four backends; ``broken`` (the conftests found
    not to import, with why) grows where this file meets another."""
    run = FileRun(entry, file)
    if not (root / file).is_file():
        run.status, run.problem = "cannot import", f"no such file in the sdist: {file}"
        return run
    config = pytest_config(root)
    env = dict(engine_runs._environment(release))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    start = time.perf_counter()
    while True:
        options, run.conftest = conftest_options(file, broken, root)
        report_dir = Path(tempfile.mkdtemp(prefix="reports-", dir=scratch))
        command = [
            str(venv / "bin" / "python"), "-m", "pytest", "-p", "no:cacheprovider",
            *(["-c", str(config)] if config else []), f"--rootdir={root}", *options,
            "-rfEs", "--ptrport-all", "--ptrport-stand-in=cuda", f"--backend={','.join(BACKENDS)}",
            f"--report-dir={report_dir}", f"--platform-name={release.name}", str(root / file),
        ]  # fmt: skip
        status, output = _run_pytest(command, scratch, env, timeout)
        conftest = _broken_conftest(output, root) if status not in (0, 1) else None
        if conftest is None or conftest[0] in broken:
            break
        broken[conftest[0]] = conftest[1]
    run.seconds = time.perf_counter() - start
    results = report_results(report_dir, release.name)
    run.counts = count(results, crash_frames(output, root), root)
    if status is None:
        run.status = "cut off"
        run.problem = f"cut off after {timeout:.0f} s ({len(results)} results kept)"
    elif not results and status not in (0, 1):
        skips = re.findall(r"^SKIPPED \[\d+\] \S+:\d+: (.*)$", output, re.MULTILINE)
        tail = [line for line in output.splitlines() if line.strip()] or ["no output"]
        if status == 5 and skips:
            run.status, run.problem = "module skipped", skips[0]
        else:
            error = _collection_error(output)
            run.status = "cannot import"
            run.problem = error or f"pytest exited {status}: {tail[-1].strip()}"
    return run


# --- output ------------------------------------------------------------------------------------


def _counted(run: FileRun) -> bool:
    return run.status in ("ran", "cut off")


def table(runs: Sequence[FileRun]) -> str:
    """A line per file: its counts and seconds, how its conftests were taken, why its tests
    skipped on ``cpu`` (the commonest reason), and a line under it per address-sensitive test
    (backends, frame, first error line)."""
    width = max((len(r.file) for r in runs), default=4)
    head = (
        f"{'release':<15} {'file':<{width}} {'tests':>5} {'runs':>5} {'addr':>5} "
        f"{'cannot':>6} {'skip':>5} {'s':>7}  conftests"
    )
    lines = [head, "-" * len(head)]
    for run in runs:
        start = f"{run.entry.release:<15} {run.file:<{width}}"
        if not _counted(run):
            how = f" [{run.conftest}]" if run.status == "cannot import" else ""
            lines.append(f"{start} {run.status}: {run.problem}{how}")
            continue
        c = run.counts
        lines.append(
            f"{start} {c.collected:>5} {c.runnable:>5} {len(c.findings):>5} {c.cannot_run:>6} "
            f"{c.skipped:>5} {run.seconds:>7.1f}  {run.conftest}"
            + (f"; {run.problem}" if run.problem else "")
            + (f"; skipped on cpu: {c.skipped_because}" if c.skipped else "")
        )
        for f in c.findings:
            lines.append(
                f"    address-sensitive ({f.in_code}'s code) {f.test.split('::', 1)[-1]} on "
                f"{','.join(f.backends)} at {f.where or '?'}: {f.message}"
            )
    return "\n".join(lines)


def markdown(runs: Sequence[FileRun]) -> str:
    """The table per file, as in docs/real-engines.md, with each entry's reason (or why the
    file did not run)."""
    lines = [
        "| release | file | collected | runnable | address-sensitive | cannot run here | "
        "skipped | seconds | reason |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for run in runs:
        c = run.counts
        if not _counted(run):
            why = f"{run.status}: {run.problem}".replace("|", "/")
            lines.append(f"| {run.entry.release} | `{run.file}` | - | - | - | - | - | - | {why} |")
            continue
        lines.append(
            f"| {run.entry.release} | `{run.file}` | {c.collected} | {c.runnable} | "
            f"{len(c.findings)} | {c.cannot_run} | {c.skipped} | {run.seconds:.0f} | "
            f"{run.entry.reason.replace('|', '/')} |"
        )
    return "\n".join(lines)


def summary(runs: Sequence[FileRun]) -> str:
    """The table per ``suites.toml`` entry, as Markdown: its files by status, the counts of
    the files that ran (or were cut off) summed, their seconds, and the entry's reason."""
    by_entry: dict[Entry, list[FileRun]] = {}
    for run in runs:
        by_entry.setdefault(run.entry, []).append(run)
    lines = [
        "| release | entry | files | collected | runnable | address-sensitive | "
        "cannot run here | skipped | seconds | reason |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for entry, mine in by_entry.items():
        statuses = Counter(run.status for run in mine)
        files = ", ".join(f"{n} {status}" for status, n in statuses.items())
        counted = [run for run in mine if _counted(run)]
        total = [
            sum(getattr(run.counts, name) for run in counted) for name in ("collected", "runnable")
        ]
        found = sum(len(run.counts.findings) for run in counted)
        cannot = sum(run.counts.cannot_run for run in counted)
        skipped = sum(run.counts.skipped for run in counted)
        seconds = sum(run.seconds for run in mine)
        lines.append(
            f"| {entry.release} | `{entry.path}` | {files} | {total[0]} | {total[1]} | {found} | "
            f"{cannot} | {skipped} | {seconds:.0f} | {entry.reason.replace('|', '/')} |"
        )
    return "\n".join(lines)


def _release_runs(
    release: engine_runs.Release,
    entries: list[Entry],
    corpus: Path,
    corpus_files: list[str],
    cache: Path,
    wheel: Path,
    scratch: Path,
    only: str,
    timeout: float,
) -> list[FileRun]:
    """The files of one release, each run, or each skipped with why; a virtualenv built here
    is checked with the real-engine corpus's ``corpus_files`` before it is stamped."""
    try:
        sdist = fetch_sdist(release.engine, release.version, cache / "sdists")
        root = extract_tests(sdist, cache / "sdists" / release.name)
        venv, cached = engine_runs.ensure_release(release, cache, cache / "downloads")
        engine_runs.install_ptrport(venv, wheel)
        if not cached:  # checked as real_engine_runs.py checks the releases it builds
            if corpus_files:
                engine_runs.check_collection(venv, release, corpus, corpus_files)
            engine_runs.stamp(venv, release)
    except engine_runs.CannotInstall as exc:
        print(f"skipped: {release.name}: {exc}", flush=True)
        return [
            FileRun(entry, entry.path, status="release skipped", problem=str(exc))
            for entry in entries
        ]
    broken: dict[str, str] = {}
    runs = []
    for entry, file in expand(entries, root):
        if only and not fnmatch.fnmatch(file, only):
            continue
        run = run_file(release, venv, root, entry, file, broken, scratch, timeout)
        runs.append(run)
        c = run.counts
        print(
            f"{release.name} {file}: {c.collected} tests, {c.runnable} runnable, "
            f"{len(c.findings)} address-sensitive, {c.cannot_run} cannot run here "
            f"in {run.seconds:.1f} s" + (f" ({run.status}: {run.problem})" if run.problem else ""),
            flush=True,
        )
    return runs


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="engine_suites.py", description=__doc__.split("\n\n", 1)[0]
    )
    parser.add_argument("--json", type=Path, help="write an object per file and finding")
    parser.add_argument("--markdown", type=Path, help="write the table per file, as Markdown")
    parser.add_argument("--engine", help="only these engines (comma-separated)")
    parser.add_argument("--files", default="", help="only the test files matching this glob")
    parser.add_argument(
        "--cache", type=Path, default=engine_runs.CACHE,
        help=f"virtualenvs and sdists (default {engine_runs.CACHE})",
    )  # fmt: skip
    parser.add_argument(
        "--timeout", type=float, default=FILE_TIMEOUT_S,
        help=f"seconds one file may take (default {FILE_TIMEOUT_S})",
    )  # fmt: skip
    parser.add_argument("--suites", type=Path, default=SUITES, help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, default=engine_runs.CORPUS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.timeout <= 0:
        parser.error(f"--timeout: {args.timeout:g} is not a positive number of seconds")
    try:
        releases, entries, corpus_files = load(args.suites, args.corpus)
    except (SuitesError, engine_runs.CorpusError) as exc:
        print(f"engine_suites.py: {exc}", file=sys.stderr)
        return 2
    releases = engine_runs.only_engines(releases, args.engine, parser, args.suites.name)
    cache = args.cache.expanduser()
    start = time.perf_counter()
    runs: list[FileRun] = []
    with tempfile.TemporaryDirectory(prefix="ptrport-engine-suites-") as scratch_name:
        scratch = Path(scratch_name)
        try:
            wheel = engine_runs.build_ptrport(scratch / "wheel")
        except engine_runs.CannotInstall as exc:  # this checkout's fault, not the engine's
            print(f"engine_suites.py: {exc}", file=sys.stderr)
            return 2
        for release in releases:
            mine = [entry for entry in entries if entry.release == release.name]
            runs += _release_runs(
                release, mine, args.corpus, corpus_files[release.name], cache, wheel, scratch,
                args.files, args.timeout,
            )  # fmt: skip
    print(table(runs))
    unmet = [run for run in runs if run.unmet]
    for run in unmet:
        print(
            f"UNEXPECTED {run.entry.release} {run.file}: expected {run.entry.expect}, "
            f"{run.unmet} ({run.entry.reason})"
        )
    ran = [run for run in runs if _counted(run)]
    print(
        f"{len(ran)} files, {sum(r.counts.collected for r in ran)} tests, "
        f"{sum(r.counts.runnable for r in ran)} runnable, "
        f"{sum(len(r.counts.findings) for r in ran)} address-sensitive; whole run "
        f"{time.perf_counter() - start:.1f} s"
    )
    if args.json:
        rows = [row for run in runs for row in run.as_json()]
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(summary(runs) + "\n\n" + markdown(runs) + "\n")
    return 1 if unmet else 0


if __name__ == "__main__":
    sys.exit(main())
