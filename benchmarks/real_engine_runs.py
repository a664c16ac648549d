"""ptrport at run time on real inference engines: the engines' own code paths, each in the
release that ships it fixed and in a release that had the bug, run as marked tests on the four
CPU backends, and every outcome compared with an expectations table.

    python benchmarks/real_engine_runs.py [--json FILE] [--markdown FILE] [--require]
                                          [--engine NAME[,NAME]] [--cache DIR] [--prune]

The corpus (``benchmarks/real_engine_runs/``) holds:

- ``engines.toml``: the pinned releases and how each installs here (below);
- ``<engine>/test_*.py``: marked tests (``pytest.mark.ptrport``) that drive the engine's own
  buffers and kernels, with ``ptrport_device.place()`` where the engine's own unit tests fake a
  high address;
- ``<engine>/expectations.csv``: header ``version,test,backend,expected,path,reason,message``,
  one row per test of a release (``test`` is the node id inside the engine's folder;
  ``backend`` is one of the four CPU backends, or ``*`` for all four, a row naming one backend
  overriding ``*``). Only the tests listed for a release run against it. ``path`` names the
  code path, the same for every release of it; ``reason`` cites the engine's issue or PR, or
  starts ``open in VERSION:`` for a bug the newest release pinned still has (an *open
  finding*). ``message``, for a ``failed`` row only and required there, is a regular expression
  that the failure's message must match (searched): a red counts as expected only when it
  fails for its reason, and its message names an address at or above 2**63 (ptrport writes
  the addresses it placed or presented into it), unless its reason starts ``at any address:``
  (the release fails there at low addresses too: no address bug, and no red of the path).

Each release gets a virtualenv under the cache (``~/.cache/ptrport/engine-venvs/`` unless
``--cache`` or ``PTRPORT_ENGINE_VENVS`` says otherwise), built once and reused while its recipe
is unchanged. A release's virtualenv sits over a *base*: a shared virtualenv with the heavy
packages (torch, Triton, the engine's requirements), reached through a ``.pth`` file, so that a
torch build of several GB lies once on disk for all releases that can run on it. A release then
installs either its own requirements from its wheel's metadata, less the ones its recipe leaves
out (``deps = "requirements"``), or nothing of them (``deps = "none"``), plus the recipe's
``add`` list; then the release itself ``--no-deps``; then ptrport, non-editable, from this
checkout, fresh on every run.

The script prints one line per test and release with the outcome on each backend (``!`` marks
an unexpected one), the time per check and per release, and the cache's size; ``--json FILE``
writes one row per test, release and backend: ``engine``, ``version``, ``test``, ``backend``,
``seconds``, ``reason``, ``path``, ``expected``, ``outcome`` (ptrport's words: ``passed``,
``failed``, ``crashed``, ``timed out``, ``error``, ``skipped``), ``message``, ``pattern`` (the
row's ``message``), ``wrong_reason`` (why a failure that was expected failed for another
reason) and ``installed_as`` (what of the release's requirements was left out or added);
``--markdown FILE`` the table per engine, release and path (the one in docs/real-engines.md).
It ends with the most the disk grew during the run, and the paths the corpus counts: release
pairs (a release that passes on all four backends, one that fails on an upper-half one) and
open findings.

The releases run grouped by base. ``--prune`` removes a release's virtualenv once its tests
have run, and a base's once its last release has, so that the disk holds one base and one
release at a time (the nightly sets it); pip keeps no cache, and a downloaded wheel is removed
once installed.

Exit status: 0 when every outcome is the expected one; a release that cannot be installed here
prints ``skipped: <reason>``, and its rows are ``skipped``, which is exit 0 too unless
``--require`` is given; 1 for an unexpected outcome (or a skip under ``--require``); 2 for a
malformed corpus (one line naming the file and row), bad arguments, or a checkout whose
ptrport does not build.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import zipfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import csv_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "real_engine_runs"
CACHE = Path(os.environ.get("PTRPORT_ENGINE_VENVS", "~/.cache/ptrport/engine-venvs"))
BACKENDS = ("cpu", "cpu-usm", "cpu-tbi", "cpu-placed")
OUTCOMES = ("passed", "failed", "crashed", "timed out", "error", "skipped")
COLUMNS = ("version", "test", "backend", "expected", "path", "reason", "message")
DEPS = ("requirements", "none")
RUN_TIMEOUT_S = 3600
"""The longest one release's tests may take, all backends together."""
UPPER_HALF_ADDRESS = re.compile(r"0x[89a-f][0-9a-f]{15}\b")
"""An address at or above 2**63, as ptrport writes it into a failure's message."""
OPEN = "open in "
"""How the reason of an open finding starts: ``open in VERSION: ...``, a bug the newest
release pinned still has (counted apart from the fixed paths)."""
ANY_ADDRESS = "at any address: "
"""How the reason of a failure that is no address bug starts: the release fails there at low
addresses too (its message need not name an upper-half address; it counts as no red)."""
PIP_INSTALL = ("install", "-q", "--no-cache-dir")
"""pip keeps no cache of its own: the virtualenvs are the cache, and a second copy of every
wheel would not fit a hosted runner's disk."""


class CorpusError(ValueError):
    """A malformed ``engines.toml`` or expectations file; the message names the file and row."""


class CannotInstall(RuntimeError):
    """A release, or its base, that cannot be installed or imported here."""


@dataclass(frozen=True)
class Base:
    """A shared virtualenv: ``packages`` installed as given, or the requirements of
    ``requirements_of`` (``NAME==VERSION``, read from its wheel) less ``leave_out``."""

    name: str
    packages: tuple[str, ...] = ()
    requirements_of: str = ""
    leave_out: tuple[str, ...] = ()

    def recipe(self) -> dict[str, object]:
        return {
            "packages": list(self.packages),
            "requirements_of": self.requirements_of,
            "leave_out": list(self.leave_out),
        }


@dataclass(frozen=True)
class Release:
    """One pinned engine release and how it installs over its base."""

    engine: str
    version: str
    base: Base
    deps: str
    leave_out: tuple[str, ...] = ()
    add: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.engine}-{self.version}"

    def recipe(self) -> dict[str, object]:
        return {
            "base": self.base.name,
            "base_recipe": self.base.recipe(),
            "deps": self.deps,
            "leave_out": list(self.leave_out),
            "add": list(self.add),
        }

    def installed_as(self) -> str:
        """How this release was installed, in a few words, for the table and the JSON."""
        how = (
            "its requirements" + (f" less {', '.join(self.leave_out)}" if self.leave_out else "")
            if self.deps == "requirements"
            else "--no-deps"
        )
        plus = f" plus {', '.join(self.add)}" if self.add else ""
        return f"{how}{plus}, over {self.base.name}"


@dataclass(frozen=True)
class Expectation:
    engine: str
    version: str
    test: str
    backend: str
    expected: str
    path: str
    reason: str
    message: str = ""
    """For a ``failed`` row: a regular expression that the failure's message must match (searched),
    so that only a failure for its reason is the expected one."""

    @property
    def open(self) -> bool:
        """An open finding: the newest release pinned still has the bug."""
        return self.reason.startswith(OPEN)

    @property
    def any_address(self) -> bool:
        """A failure that is no address bug: the release fails so at low addresses too."""
        return self.reason.startswith(ANY_ADDRESS)


@dataclass
class Row:
    """One outcome: what the JSON holds."""

    engine: str
    version: str
    test: str
    backend: str
    seconds: float
    reason: str
    path: str
    expected: str
    outcome: str
    message: str = ""
    installed: bool = True
    """False where the release could not be installed: the row is ``skipped``, which is no
    unexpected outcome (``--require`` makes it a failure of the run)."""
    installed_as: str = ""
    """How the release was installed here: what of its requirements was left out or added."""
    pattern: str = ""
    """What the message of an expected failure must match (the table's ``message``)."""

    @property
    def wrong_reason(self) -> str:
        """Why an expected failure failed for another reason than its row's, or ``""``: its
        message does not match the row's pattern, or names no address at or above 2**63."""
        if self.expected != "failed" or self.outcome != "failed":
            return ""
        if not re.search(self.pattern, self.message):
            return f"its message does not match {self.pattern!r}"
        if not self.reason.startswith(ANY_ADDRESS) and not UPPER_HALF_ADDRESS.search(self.message):
            return "its message names no address at or above 2**63"
        return ""

    @property
    def unexpected(self) -> bool:
        return self.installed and (self.outcome != self.expected or bool(self.wrong_reason))

    def as_json(self) -> dict[str, object]:
        return {
            "engine": self.engine,
            "version": self.version,
            "test": self.test,
            "backend": self.backend,
            "seconds": round(self.seconds, 3),
            "reason": self.reason,
            "path": self.path,
            "expected": self.expected,
            "outcome": self.outcome,
            "message": self.message,
            "pattern": self.pattern,
            "wrong_reason": self.wrong_reason,
            "installed_as": self.installed_as,
        }


@dataclass
class ReleaseRun:
    """What happened to one release: its rows, and where the time went."""

    release: Release
    rows: list[Row] = field(default_factory=list)
    skipped: str = ""
    install_s: float = 0.0
    cached: bool = False
    run_s: float = 0.0


# --- the corpus --------------------------------------------------------------------------------


def _strings(value: object, where: str, key: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise CorpusError(f"{where}: {key} must be a list of non-empty strings")
    return tuple(value)


def parse_engines(text: str, source: str) -> list[Release]:
    """The releases of ``engines.toml``; :class:`CorpusError` names ``source`` and the entry."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{source}: {exc}") from None
    unknown = set(data) - {"bases", "releases"}
    if unknown:
        raise CorpusError(f"{source}: unknown table {sorted(unknown)[0]!r} (bases, releases)")
    bases: dict[str, Base] = {}
    for name, spec in data.get("bases", {}).items():
        where = f"{source}: bases.{name}"
        if not isinstance(spec, dict) or set(spec) - {"packages", "requirements_of", "leave_out"}:
            raise CorpusError(f"{where}: keys are packages, requirements_of, leave_out")
        packages = _strings(spec.get("packages", []), where, "packages")
        requirements_of = spec.get("requirements_of", "")
        if not isinstance(requirements_of, str) or (
            requirements_of and "==" not in requirements_of
        ):
            raise CorpusError(f"{where}: requirements_of must be NAME==VERSION")
        if not packages and not requirements_of:
            raise CorpusError(f"{where}: give packages or requirements_of")
        leave_out = _strings(spec.get("leave_out", []), where, "leave_out")
        bases[name] = Base(name, packages, requirements_of, leave_out)
    releases: list[Release] = []
    seen: set[str] = set()
    keys = {"engine", "version", "base", "deps", "leave_out", "add", "env"}
    for number, spec in enumerate(data.get("releases", []), start=1):
        where = f"{source}: releases[{number}]"
        if not isinstance(spec, dict) or set(spec) - keys:
            raise CorpusError(f"{where}: keys are {', '.join(sorted(keys))}")
        engine, version = spec.get("engine"), spec.get("version")
        if not isinstance(engine, str) or not isinstance(version, str) or not engine or not version:
            raise CorpusError(f"{where}: engine and version are required strings")
        base = spec.get("base")
        if base not in bases:
            raise CorpusError(f"{where}: base {base!r} is not one of {sorted(bases)}")
        deps = spec.get("deps", "requirements")
        if deps not in DEPS:
            raise CorpusError(f"{where}: deps must be one of {', '.join(DEPS)}, not {deps!r}")
        env = spec.get("env", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise CorpusError(f"{where}: env must be a table of strings")
        release = Release(
            engine,
            version,
            bases[base],
            deps,
            _strings(spec.get("leave_out", []), where, "leave_out"),
            _strings(spec.get("add", []), where, "add"),
            tuple(sorted(env.items())),
        )
        if release.name in seen:
            raise CorpusError(f"{where}: a second entry for {engine} {version}")
        seen.add(release.name)
        releases.append(release)
    return releases


def parse_expectations(
    text: str, source: str, engine: str, versions: Iterable[str]
) -> list[Expectation]:
    """The rows of one engine's expectations file, ``*`` expanded to the four backends, a row
    naming one backend overriding ``*``; :class:`CorpusError` names ``source`` and the row (the
    header is row 1)."""
    pinned = set(versions)
    general: dict[tuple[str, str, str], Expectation] = {}
    specific: dict[tuple[str, str, str], Expectation] = {}
    for where, cells in csv_table.rows(text, source, COLUMNS, CorpusError):
        version, test, backend, expected, path, reason, message = cells
        if version not in pinned:
            raise CorpusError(
                f"{where}: {engine} {version} is not pinned in engines.toml ({sorted(pinned)})"
            )
        if "::" not in test or test.startswith("/"):
            raise CorpusError(f"{where}: test {test!r} is not a node id (FILE::TEST[PARAMS])")
        if backend != "*" and backend not in BACKENDS:
            raise CorpusError(f"{where}: backend {backend!r} is not * or one of {BACKENDS}")
        if expected not in OUTCOMES:
            raise CorpusError(f"{where}: expected {expected!r} is not one of {OUTCOMES}")
        if not path or not reason:
            raise CorpusError(f"{where}: the path and the reason must not be empty")
        if expected == "failed":
            if not message:
                raise CorpusError(f"{where}: a failed row needs the message it fails with")
            try:
                re.compile(message)
            except re.error as exc:
                raise CorpusError(
                    f"{where}: message {message!r} is no regular expression: {exc}"
                ) from None
        elif message:
            raise CorpusError(f"{where}: a message is for failed rows only, not {expected}")
        table = general if backend == "*" else specific
        for name in BACKENDS if backend == "*" else (backend,):
            key = (version, test, name)
            if key in table:
                raise CorpusError(f"{where}: a second row for {test} on {name} in {version}")
            table[key] = Expectation(engine, version, test, name, expected, path, reason, message)
    merged = {**general, **specific}
    paths: dict[tuple[str, str], set[str]] = {}
    for e in merged.values():
        paths.setdefault((e.version, e.test), set()).add(e.path)
    for (version, test), named in paths.items():
        if len(named) > 1:
            raise CorpusError(f"{source}: {test} in {version} has two paths: {sorted(named)}")
    return sorted(merged.values(), key=lambda e: (e.version, e.test, BACKENDS.index(e.backend)))


def load_corpus(corpus: Path) -> tuple[list[Release], list[Expectation]]:
    source = corpus / "engines.toml"
    try:
        releases = parse_engines(source.read_text(), str(source))
    except OSError as exc:
        raise CorpusError(f"{source}: {exc.strerror}") from None
    expectations: list[Expectation] = []
    for engine in sorted({release.engine for release in releases}):
        table = corpus / engine / "expectations.csv"
        versions = [release.version for release in releases if release.engine == engine]
        try:
            text = table.read_text()
        except OSError as exc:
            raise CorpusError(f"{table}: {exc.strerror}") from None
        rows = parse_expectations(text, str(table), engine, versions)
        for name in sorted({e.test.split("::", 1)[0] for e in rows}):
            if not (corpus / engine / name).is_file():
                raise CorpusError(f"{table}: no test file {engine}/{name}")
        expectations += rows
    return releases, expectations


def counted_paths(
    expectations: Iterable[Expectation],
) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """The paths the corpus counts: the release pairs, ``(engine, path)`` with a release that
    passes on all four backends (a variant it no longer has may skip) and one that fails on an
    upper-half backend; and the open findings, ``(engine, path, version)`` where a release's
    failure is an open bug (its reason starts ``open in``)."""
    by_release: dict[tuple[str, str, str], list[Expectation]] = {}
    for e in expectations:
        by_release.setdefault((e.engine, e.path, e.version), []).append(e)
    green, red, found = set(), set(), set()
    for (engine, path, version), rows in by_release.items():
        outcomes = {e.expected for e in rows}
        if (
            outcomes <= {"passed", "skipped"}
            and "passed" in outcomes
            and ({e.backend for e in rows} == set(BACKENDS))
        ):
            green.add((engine, path))
        failing = [
            e for e in rows if e.expected == "failed" and e.backend != "cpu" and not e.any_address
        ]
        if any(e.open for e in failing):
            found.add((engine, path, version))
        elif failing:
            red.add((engine, path))
    return sorted(green & red), sorted(found)


# --- virtualenvs -------------------------------------------------------------------------------


def _run(command: Sequence[str | Path], what: str, **kwargs: object) -> str:
    """Runs an install step; :class:`CannotInstall` with ``what`` and the error's last line."""
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )
    if done.returncode != 0:
        lines = [line for line in (done.stderr + done.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if "error" in line.lower()]
        raise CannotInstall(f"{what}: {(errors or lines or ['no output'])[-1].strip()}")
    return done.stdout


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def _site_packages(venv: Path) -> Path:
    found = sorted((venv / "lib").glob("python3*/site-packages"))
    if not found:
        raise CannotInstall(f"{venv}: no site-packages")
    return found[0]


def _normalized(requirement: str) -> str:
    """The project a requirement (or a bare name) names, normalized as the index's simple
    pages name it (PEP 503)."""
    name = requirement
    for stop in "<>=!~;[ (":
        name = name.split(stop, 1)[0]
    return re.sub(r"[-_.]+", "-", name.strip()).lower()


def wheel_requirements(wheel: Path) -> list[str]:
    """The wheel's ``Requires-Dist`` entries that are not behind an extra (pip evaluates the
    other markers)."""
    with zipfile.ZipFile(wheel) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    return [
        line.split(":", 1)[1].strip()
        for line in text.splitlines()
        if line.startswith("Requires-Dist:") and "extra ==" not in line
    ]


def _download(spec: str, downloads: Path) -> Path:
    """The wheel of ``spec`` (``NAME==VERSION``), under ``downloads`` until what it installs
    is in place (:func:`_remove_wheels`)."""
    into = downloads / spec.replace("==", "-")
    into.mkdir(parents=True, exist_ok=True)
    command = ["pip", "download", "-q", "--no-cache-dir", "--no-deps", spec, "-d", str(into)]
    _run([sys.executable, "-m", *command], f"pip download {spec}")
    wheels = sorted(into.glob("*.whl"))
    if not wheels:
        raise CannotInstall(f"pip download {spec}: no wheel (only a source distribution?)")
    return wheels[0]


def _requirements_file(requirements: Iterable[str], leave_out: Iterable[str], into: Path) -> Path:
    """The requirements less those named in ``leave_out``; an entry of ``leave_out`` that the
    requirements do not name is an error (the recipe has gone stale)."""
    requirements = list(requirements)
    names = {_normalized(r) for r in requirements}
    for name in leave_out:
        if _normalized(name) not in names:
            raise CannotInstall(f"leave_out names {name}, which the requirements do not")
    dropped = {_normalized(name) for name in leave_out}
    kept = [r for r in requirements if _normalized(r) not in dropped]
    into.write_text("".join(f"{r}\n" for r in kept))
    return into


def _stamp_matches(venv: Path, recipe: dict[str, object]) -> bool:
    stamp = venv / "ptrport-recipe.json"
    try:
        return bool(json.loads(stamp.read_text()) == recipe and _python(venv).exists())
    except (OSError, ValueError):
        return False


def _fresh_venv(venv: Path) -> None:
    if venv.exists():
        shutil.rmtree(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", venv], f"python -m venv {venv}")
    _run(
        [_python(venv), "-m", "pip", *PIP_INSTALL, "--upgrade", "pip"],
        f"{venv.name}: pip install --upgrade pip",
    )


def _pip(venv: Path, *args: str | Path, what: str) -> None:
    _run([_python(venv), "-m", "pip", *PIP_INSTALL, *args], f"{venv.name}: {what}")


def ensure_base(base: Base, cache: Path, downloads: Path) -> tuple[Path, bool]:
    """The base's virtualenv and whether it was there already."""
    venv = cache / "bases" / base.name
    recipe = base.recipe()
    if _stamp_matches(venv, recipe):
        return venv, True
    _fresh_venv(venv)
    if base.packages:
        _pip(venv, *base.packages, what=f"pip install {' '.join(base.packages)}")
    if base.requirements_of:
        # Apart from the releases' wheels: the same release's wheel may be being installed.
        wheel = _download(base.requirements_of, downloads / "bases")
        listed = _requirements_file(
            wheel_requirements(wheel), base.leave_out, downloads / f"{base.name}.txt"
        )
        _pip(venv, "-r", listed, what=f"the requirements of {base.requirements_of}")
        _remove_wheels(wheel)
    (venv / "ptrport-recipe.json").write_text(json.dumps(recipe))
    return venv, False


def ensure_release(release: Release, cache: Path, downloads: Path) -> tuple[Path, bool]:
    """The release's virtualenv (over its base) and whether both were there already."""
    venv = cache / release.name
    recipe = release.recipe()
    if _stamp_matches(cache / "bases" / release.base.name, release.base.recipe()) and (
        _stamp_matches(venv, recipe)
    ):
        return venv, True
    # The release's wheel first: a release that is not on the index fails in a second.
    wheel = _download(f"{release.engine}=={release.version}", downloads)
    base, _ = ensure_base(release.base, cache, downloads)
    _fresh_venv(venv)
    (_site_packages(venv) / "ptrport-base.pth").write_text(f"{_site_packages(base)}\n")
    if release.deps == "requirements":
        listed = _requirements_file(
            wheel_requirements(wheel), release.leave_out, downloads / f"{release.name}.txt"
        )
        _pip(venv, "-r", listed, what=f"the requirements of {release.name}")
    if release.add:
        _pip(venv, *release.add, what=f"pip install {' '.join(release.add)}")
    _pip(venv, "--no-deps", wheel, what=f"pip install --no-deps {wheel.name}")
    _remove_wheels(wheel)
    return venv, False


def _remove_wheels(wheel: Path) -> None:
    """The downloaded wheel's folder, once what it installs is in place (a release's wheel
    is fetched again only when its virtualenv is rebuilt)."""
    shutil.rmtree(wheel.parent, ignore_errors=True)


def stamp(venv: Path, release: Release) -> None:
    """Mark the release's virtualenv as built and checked: later runs reuse it while its
    recipe is the same."""
    (venv / "ptrport-recipe.json").write_text(json.dumps(release.recipe()))


def install_ptrport(venv: Path, wheel: Path) -> None:
    """This checkout's ptrport, non-editable, with what it needs that the base lacks."""
    _pip(venv, "--force-reinstall", "--no-deps", wheel, what="pip install ptrport")
    _pip(venv, wheel, what="ptrport's requirements")


def check_collection(venv: Path, release: Release, corpus: Path, files: Iterable[str]) -> None:
    """The release's test files collect, their engine modules imported as in a run: a
    virtualenv whose engine does not import is no install (checked when it is built, not again
    while it is cached)."""
    command = _pytest(venv, release, corpus, files, "--collect-only", "--backend=cpu")
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env=_environment(release)
    )
    if done.returncode != 0:
        lines = (done.stdout + done.stderr).splitlines()
        raised = [line[1:].strip() for line in lines if re.match(r"E\s+\w+(Error|Exception)", line)]
        last = (raised or [line for line in lines if line.strip()] or ["no output"])[0]
        raise CannotInstall(f"its tests do not collect: {last}")


def _pytest(
    venv: Path, release: Release, corpus: Path, files: Iterable[str], *options: str
) -> list[str]:
    """pytest in the release's virtualenv on its test ``files``, with the corpus's own
    configuration (node ids relative to the corpus, ``vllm/test_....py::test``)."""
    corpus = corpus.resolve()
    return [
        str(_python(venv)), "-m", "pytest", "-q", "-p", "no:cacheprovider",
        "-c", str(corpus / "pytest.ini"), "--rootdir", str(corpus), *options,
        *(str(corpus / release.engine / name) for name in files),
    ]  # fmt: skip


def _environment(release: Release) -> dict[str, str]:
    """The run's environment: the release's variables, and the ``ci`` Hypothesis profile
    (derandomized: the same draws on every run) unless the caller chose one."""
    return {
        "HYPOTHESIS_PROFILE": "ci",
        **os.environ,
        **dict(release.env),
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def build_ptrport(into: Path) -> Path:
    into.mkdir(parents=True, exist_ok=True)
    _run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", ROOT, "-w", into],
        "pip wheel ptrport",
    )
    return next(into.glob("ptrport-*.whl"))


# --- running -----------------------------------------------------------------------------------


def _results(report_dir: Path) -> Iterator[dict[str, object]]:
    for report in sorted(report_dir.glob("*.json")):
        data = json.loads(report.read_text())
        yield from data.get("results", [])


def _files(expectations: Iterable[Expectation]) -> list[str]:
    return sorted({e.test.split("::", 1)[0] for e in expectations})


def run_release(
    release: Release,
    venv: Path,
    expectations: list[Expectation],
    corpus: Path,
    scratch: Path,
) -> tuple[list[Row], float]:
    """Runs the files of the release's listed tests on the four backends: a row per
    expectation, ``error`` where a test left no result (the message says why), a row expecting
    ``not listed`` for a result the table does not list, and the run's wall time."""
    files = _files(expectations)
    # Run from the scratch folder: Hypothesis keeps its database where a run starts.
    scratch.mkdir(parents=True, exist_ok=True)
    report_dir = scratch / f"reports-{release.name}"
    command = _pytest(
        venv, release, corpus, files,
        f"--backend={','.join(BACKENDS)}", f"--report-dir={report_dir}",
        f"--platform-name={release.name}",
    )  # fmt: skip
    start = time.perf_counter()
    try:
        done = subprocess.run(
            command, cwd=scratch, env=_environment(release), capture_output=True, text=True,
            check=False, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
        problem = "" if done.returncode in (0, 1) else f"pytest exited {done.returncode}: {tail[0]}"
    except subprocess.TimeoutExpired:
        problem = f"the run took over {RUN_TIMEOUT_S} s"
    wall = time.perf_counter() - start
    found: dict[tuple[str, str], dict[str, object]] = {}
    if report_dir.is_dir():
        prefix = f"{release.engine}/"
        for result in _results(report_dir):
            check = str(result["check"])
            found[(check.removeprefix(prefix), str(result["backend"]))] = result
    rows = []
    listed = {(e.test, e.backend) for e in expectations}
    for test, backend in sorted(set(found) - listed):
        result = found[(test, backend)]
        rows.append(
            Row(release.engine, release.version, test, backend,
                float(result["duration_s"]), "", "-", "not listed",  # type: ignore[arg-type]
                str(result["outcome"]), str(result.get("message") or ""))
        )  # fmt: skip
    for e in expectations:
        result = found.get((e.test, e.backend))
        if result is None:
            outcome, seconds = "error", 0.0
            message = problem or "no result: the test was not collected (a typo in the table?)"
        else:
            outcome = str(result["outcome"])
            seconds = float(result["duration_s"])  # type: ignore[arg-type]
            message = str(result.get("message") or "")
        rows.append(
            Row(e.engine, e.version, e.test, e.backend, seconds, e.reason, e.path, e.expected,
                outcome, message, pattern=e.message)
        )  # fmt: skip
    return rows, wall


def skipped_rows(expectations: Iterable[Expectation], why: str) -> list[Row]:
    return [
        Row(e.engine, e.version, e.test, e.backend, 0.0, e.reason, e.path, e.expected,
            "skipped", why, installed=False, pattern=e.message)
        for e in expectations
    ]  # fmt: skip


# --- output ------------------------------------------------------------------------------------


def _short(outcome: str) -> str:
    return {"passed": "pass", "failed": "FAIL", "timed out": "t/o"}.get(outcome, outcome)


def table(runs: Sequence[ReleaseRun]) -> str:
    """One line per test (its function and parameters) and release: its path, the outcome per
    backend (``!`` where it is not the expected one) and the mean seconds per check."""
    lines = []
    width = max((len(r.test.split("::", 1)[-1]) for run in runs for r in run.rows), default=4)
    head = f"{'release':<16} {'path':<28} {'test':<{width}} " + " ".join(
        f"{b:<11}" for b in BACKENDS
    )
    lines += [head + " s/check", "-" * (len(head) + 8)]
    for run in runs:
        if run.skipped:
            lines.append(f"{run.release.name:<16} skipped: {run.skipped}")
            continue
        by_test: dict[str, list[Row]] = {}
        for row in run.rows:
            by_test.setdefault(row.test.split("::", 1)[-1], []).append(row)
        for test, rows in by_test.items():
            cells = {r.backend: _short(r.outcome) + ("!" if r.unexpected else "") for r in rows}
            mean = sum(r.seconds for r in rows) / len(rows)
            lines.append(
                f"{run.release.name:<16} {rows[0].path:<28} {test:<{width}} "
                + " ".join(f"{cells.get(b, '-'):<11}" for b in BACKENDS)
                + f" {mean:.2f}"
            )
    return "\n".join(lines)


def markdown(rows: Sequence[Row]) -> str:
    """The table per engine, release and path: on each backend how its tests came out (``2
    failed, 1 passed`` where they differ; ``(unexpected)`` where any was not the expected
    outcome), and the mean seconds per check."""
    groups: dict[tuple[str, str, str], list[Row]] = {}
    for row in rows:
        groups.setdefault((row.engine, row.version, row.path), []).append(row)
    lines = [
        "| engine | version | path | " + " | ".join(f"`{b}`" for b in BACKENDS) + " | s/check |",
        "| --- | --- | --- | " + " | ".join("---" for _ in BACKENDS) + " | ---: |",
    ]
    for (engine, version, path), group in groups.items():
        cells = []
        for backend in BACKENDS:
            mine = [r for r in group if r.backend == backend]
            counts: dict[str, int] = {}
            for r in mine:
                counts[r.outcome] = counts.get(r.outcome, 0) + 1
            if len(counts) == 1:
                cell = next(iter(counts))
            else:
                cell = ", ".join(f"{n} {o}" for o, n in sorted(counts.items()))
            cells.append(cell + (" (unexpected)" if any(r.unexpected for r in mine) else ""))
        mean = sum(r.seconds for r in group) / len(group)
        lines.append(f"| {engine} | {version} | {path} | {' | '.join(cells)} | {mean:.2f} |")
    return "\n".join(lines)


def cache_size(cache: Path) -> int:
    """Bytes on disk under ``cache`` (hard links counted once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for folder, _, files in os.walk(cache):
        for name in files:
            try:
                stat = os.lstat(os.path.join(folder, name))
            except OSError:
                continue
            if (stat.st_dev, stat.st_ino) not in seen:
                seen.add((stat.st_dev, stat.st_ino))
                total += stat.st_blocks * 512
    return total


class DiskPeak:
    """The most the disk holding ``where`` filled beyond what it held at the start, sampled
    every ``every_s`` seconds on a thread of its own while the run builds and runs (whatever
    writes there counts: the virtualenvs, pip's unpacked wheels, the reports)."""

    def __init__(self, where: Path, every_s: float = 0.5) -> None:
        self._where = where
        self._every_s = every_s
        self._stop = threading.Event()
        self.start = self._used()
        self.peak = self.start
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _used(self) -> int:
        where = self._where
        while not where.exists():
            where = where.parent
        return shutil.disk_usage(where).used

    def _sample(self) -> None:
        while not self._stop.wait(self._every_s):
            self.peak = max(self.peak, self._used())

    def __enter__(self) -> DiskPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._used())

    @property
    def grew(self) -> int:
        """Bytes: the peak over the start."""
        return self.peak - self.start


def by_base(releases: Sequence[Release]) -> list[Release]:
    """The releases, those over one base together (bases in the order they first appear), so
    that a run that prunes holds one base at a time."""
    order = {name: n for n, name in reversed(list(enumerate(r.base.name for r in releases)))}
    return sorted(releases, key=lambda release: order[release.base.name])


def prune(cache: Path, releases: Sequence[Release], number: int) -> None:
    """Removes the virtualenv of the ``number``-th of ``releases`` (grouped by base), and its
    base's when it is the last over it."""
    release = releases[number]
    shutil.rmtree(cache / release.name, ignore_errors=True)
    last = number + 1 == len(releases) or releases[number + 1].base != release.base
    if last:
        shutil.rmtree(cache / "bases" / release.base.name, ignore_errors=True)


def only_engines(
    releases: list[Release], spec: str | None, parser: argparse.ArgumentParser, listed_in: str
) -> list[Release]:
    """The releases of the engines ``--engine`` names (all of them without it); an engine
    ``listed_in`` does not have is bad input."""
    if not spec:
        return releases
    wanted = {name.strip() for name in spec.split(",")}
    unknown = wanted - {release.engine for release in releases}
    if unknown:
        parser.error(f"--engine: no engine {sorted(unknown)[0]!r} in {listed_in}")
    return [release for release in releases if release.engine in wanted]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="real_engine_runs.py", description=__doc__.split("\n\n", 1)[0]
    )
    parser.add_argument("--json", type=Path, help="write the rows to this file")
    parser.add_argument(
        "--require", action="store_true", help="a release that cannot be installed is a failure"
    )
    parser.add_argument("--markdown", type=Path, help="write the table per path, as Markdown")
    parser.add_argument("--engine", help="only these engines (comma-separated)")
    parser.add_argument("--cache", type=Path, default=CACHE, help=f"virtualenvs (default {CACHE})")
    parser.add_argument(
        "--prune",
        action="store_true",
        help="remove each release's virtualenv once it has run, and its base's after the last "
        "release over it (a disk that holds one base at a time, such as a hosted runner's)",
    )
    parser.add_argument("--corpus", type=Path, default=CORPUS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    try:
        releases, expectations = load_corpus(args.corpus)
    except CorpusError as exc:
        print(f"real_engine_runs.py: {exc}", file=sys.stderr)
        return 2
    releases = by_base(only_engines(releases, args.engine, parser, "engines.toml"))
    cache = args.cache.expanduser()
    start = time.perf_counter()
    runs: list[ReleaseRun] = []
    disk = DiskPeak(cache)
    with disk, tempfile.TemporaryDirectory(prefix="ptrport-engine-runs-") as scratch_name:
        scratch = Path(scratch_name)
        wheel: Path | None = None
        for number, release in enumerate(releases):
            if args.prune and number:
                prune(cache, releases, number - 1)
            listed = [
                e
                for e in expectations
                if (e.engine, e.version) == (release.engine, release.version)
            ]
            run = ReleaseRun(release)
            runs.append(run)
            if not listed:
                continue
            installing = time.perf_counter()
            try:
                venv, run.cached = ensure_release(release, cache, cache / "downloads")
                if wheel is None:
                    try:
                        wheel = build_ptrport(scratch / "wheel")
                    except CannotInstall as exc:  # this checkout's fault, not the engine's
                        print(f"real_engine_runs.py: {exc}", file=sys.stderr)
                        return 2
                install_ptrport(venv, wheel)
                if not run.cached:
                    check_collection(venv, release, args.corpus, _files(listed))
                    stamp(venv, release)
            except CannotInstall as exc:
                run.skipped = str(exc)
                run.rows = skipped_rows(listed, run.skipped)
                print(f"skipped: {release.name}: {run.skipped}", flush=True)
                continue
            finally:
                run.install_s = time.perf_counter() - installing
            run.rows, run.run_s = run_release(release, venv, listed, args.corpus, scratch)
            print(
                f"{release.name}: {len(run.rows)} checks in {run.run_s:.1f} s "
                f"(installed {'from the cache' if run.cached else 'now'} in "
                f"{run.install_s:.1f} s: {release.installed_as()})",
                flush=True,
            )
        if args.prune and releases:
            prune(cache, releases, len(releases) - 1)
    total = time.perf_counter() - start
    for run in runs:
        for row in run.rows:
            row.installed_as = run.release.installed_as()
    rows = [row for run in runs for row in run.rows]
    print(table([run for run in runs if run.rows]))
    ran = [row for row in rows if row.installed]
    unexpected = [row for row in rows if row.unexpected]
    for row in unexpected:
        what = (
            f"failed for another reason ({row.wrong_reason})"
            if row.wrong_reason
            else f"{row.outcome}, expected {row.expected}"
        )
        print(
            f"UNEXPECTED {row.engine} {row.version} {row.test} on {row.backend}: {what} "
            f"({row.reason})" + (f": {row.message.splitlines()[0]}" if row.message else "")
        )
    checks_s = sum(row.seconds for row in ran)
    print(
        f"{len(ran)} checks, {checks_s / max(len(ran), 1):.2f} s per check; whole run "
        f"{total:.1f} s; cache {cache_size(cache) / 2**30:.1f} GiB in {cache}"
        + (", pruned" if args.prune else "")
    )
    print(f"disk: at most {disk.grew / 2**30:.1f} GiB more than at the start, during the run")
    engines = {release.engine for release in releases}
    pairs, found = counted_paths(e for e in expectations if e.engine in engines)
    print(
        f"paths: {len(pairs)} release pairs from {len({engine for engine, _ in pairs})} engines, "
        f"{len(found)} open findings"
        + "".join(f"\n  open: {engine} {path} in {version}" for engine, path, version in found)
    )
    if args.json:
        args.json.write_text(json.dumps([row.as_json() for row in rows], indent=1) + "\n")
    if args.markdown:
        args.markdown.write_text(markdown(rows) + "\n")
    skipped = [run for run in runs if run.skipped]
    if unexpected:
        return 1
    if skipped and args.require:
        print(f"--require: {len(skipped)} release(s) skipped", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
