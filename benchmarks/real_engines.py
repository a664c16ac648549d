"""``ptrport lint`` on real inference engines: pinned wheels of vLLM, SGLang and LMCache are
fetched with ``pip download --no-deps``, their ``*.py`` files unpacked and linted, and the
findings compared with hand-made labels of those files.

    python benchmarks/real_engines.py [--cache DIR] [--labels FILE] [--skip-download] [--markdown]
    python benchmarks/real_engines.py --unseen [--skip-download]

``--unseen`` measures the packages of :data:`UNSEEN` instead (kernel and transfer libraries the
lint was not written or tuned on: mooncake, NIXL, sgl-kernel, flashinfer's ``comm``), against
``benchmarks/unseen_engines_labels.csv``, with the thresholds precision >= 0.97, recall >= 0.95.

The labels file (``benchmarks/real_engines_labels.csv``) is CSV with the header
``package,version,path,line,rule,site,idiom,reason``, one row per site:

- ``package``, ``version``: one of the pinned releases in :data:`ENGINES`;
- ``path``: the file inside the unpacked wheel (``vllm/v1/worker/utils.py``), ``line`` the line
  the lint reports (where the storage call or the store statement starts);
- ``rule``: a rule of ``ptrport lint``; ``site``: ``true`` for a real site (the address can reach
  ``2**63`` and the storage cannot hold it), ``false`` for a finding or near miss that is no site;
- ``idiom``: for a true site the lint should find, what it would take (``dataclass``,
  ``annotated-parameter``, ``factory-parameter``, ``cross-module``, ``symm-mem``, ``ipc``,
  ``numpy-ctypes``, ``other``); empty otherwise;
- ``reason``: one line, in our words (no code of theirs).

A finding matching a true row (same package, path, line and rule) is a true positive, one
matching a false row a false positive; a finding with no row is "unlabelled" and listed so that
someone labels it; a true row with no finding is missed. The script prints precision and recall
per package and per rule, the lint time of each package, and the unlabelled and missed sites.

Exit status: 0 when precision >= 0.95 and recall >= 0.9 overall and nothing is unlabelled, or
when the wheels cannot be had (it prints ``skipped: <reason>``; ``--skip-download`` uses only
the cache); 1 when a threshold is missed; 2 for a malformed labels file (one line naming the
file and row) or a lint that fails to run.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
import zipfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import csv_table

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ptrport.lint.rules import RULES  # noqa: E402

LABELS = Path(__file__).resolve().parent / "real_engines_labels.csv"
CACHE = Path(os.environ.get("PTRPORT_REAL_ENGINES_CACHE", "~/.cache/ptrport/real-engines"))
MIN_PRECISION = 0.95
MIN_RECALL = 0.9
COLUMNS = ("package", "version", "path", "line", "rule", "site", "idiom", "reason")
IDIOMS = (
    "dataclass",
    "annotated-parameter",
    "factory-parameter",
    "cross-module",
    "symm-mem",
    "ipc",
    "numpy-ctypes",
    "other",
)


@dataclass(frozen=True)
class Engine:
    """One pinned wheel: pip is asked for exactly this file (its tags, then its hash)."""

    name: str
    version: str
    wheel: str
    sha256: str
    abi: str
    platform: str
    trees: tuple[str, ...] = ()
    """The folders of the unpacked wheel that are linted (``name`` where none is given)."""

    @property
    def unpacked(self) -> str:
        return f"{self.name}-{self.version}"


ENGINES = (
    Engine(
        "vllm",
        "0.34.0",
        "vllm-0.34.0-cp38-abi3-manylinux_2_28_x86_64.whl",
        "79ca4b3cd74aec08c4bf476bdf0cb15735b605ae5368526a2faae1e30f044ca2",
        "abi3",
        "manylinux_2_28_x86_64",
    ),
    Engine(
        "sglang",
        "0.5.23",
        "sglang-0.5.23-cp311-cp311-manylinux_2_34_x86_64.whl",
        "00b3cd5b265ac76c64185fbb6b95424f324ddd9f428d0306b77bc9db9d859937",
        "cp311",
        "manylinux_2_34_x86_64",
    ),
    Engine(
        "lmcache",
        "0.5.6",
        "lmcache-0.5.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
        "14530ff72b96056e894c9b8dc70c10d019e7802799bbfde9cec298700b799194",
        "cp311",
        "manylinux_2_28_x86_64",
    ),
)

UNSEEN = (
    Engine(
        "mooncake-transfer-engine",
        "0.3.13.post1",
        "mooncake_transfer_engine-0.3.13.post1-cp311-cp311-manylinux_2_28_x86_64.whl",
        "81e6d425a097b4915bdc9efbe2fe89d779dc2bd70e48a5a69c248cc9b250bafe",
        "cp311",
        "manylinux_2_28_x86_64",
        ("mooncake",),
    ),
    Engine(
        "nixl-cu12",
        "1.5.1",
        "nixl_cu12-1.5.1-cp311-cp311-manylinux_2_28_x86_64.whl",
        "341d0dfa499f941c054614252f1d8047d1380e33f29c87707372ff5ec7d3779a",
        "cp311",
        "manylinux_2_28_x86_64",
        ("nixl_cu12", "nixl_ep_cu12"),
    ),
    Engine(
        "sgl-kernel",
        "0.3.21",
        "sgl_kernel-0.3.21-cp310-abi3-manylinux2014_x86_64.whl",
        "57dfb3a2a3cd759f499c32e2bad5f6489b7c58f7f9a84ee00c53ec92d303aaab",
        "abi3",
        "manylinux2014_x86_64",
        ("sgl_kernel", "deep_gemm", "flash_attn_origin", "triton_kernels"),
    ),
    Engine(
        "flashinfer-python",
        "0.7.2.post1",
        "flashinfer_python-0.7.2.post1-py3-none-any.whl",
        "bfdc18b9e1e4d8d0730fe4343dc0e284cd0c160086de80f99888bc4867922d49",
        "none",
        "any",
        ("flashinfer/comm",),
    ),
)
"""Engine and kernel packages the lint was not written or tuned on, labelled (in
:data:`UNSEEN_LABELS`) by reading their code before the lint first ran on them."""
UNSEEN_LABELS = Path(__file__).resolve().parent / "unseen_engines_labels.csv"
UNSEEN_PRECISION = 0.97
UNSEEN_RECALL = 0.95


class LabelError(ValueError):
    """A malformed labels file; the message names the file and row."""


class Unavailable(RuntimeError):
    """A wheel that cannot be had here (no network, not cached with --skip-download)."""


Site = tuple[str, str, int, str]
"""(package, path, line, rule)."""


@dataclass(frozen=True)
class Label:
    package: str
    version: str
    path: str
    line: int
    rule: str
    site: bool
    idiom: str
    reason: str

    @property
    def key(self) -> Site:
        return (self.package, self.path, self.line, self.rule)


@dataclass(frozen=True)
class Finding:
    package: str
    path: str
    line: int
    rule: str
    message: str = ""

    @property
    def key(self) -> Site:
        return (self.package, self.path, self.line, self.rule)


def parse_labels(text: str, source: str, engines: Iterable[Engine] = ENGINES) -> list[Label]:
    """The rows of a labels file; :class:`LabelError` names ``source`` and the row (the header
    is row 1) of the first bad one."""
    pinned = {engine.name: engine.version for engine in engines}
    labels: list[Label] = []
    seen: set[Site] = set()
    for where, cells in csv_table.rows(text, source, COLUMNS, LabelError):
        package, version, path, line, rule, site, idiom, reason = cells
        if package not in pinned:
            raise LabelError(f"{where}: unknown package {package!r} (pinned: {sorted(pinned)})")
        if version != pinned[package]:
            raise LabelError(f"{where}: {package} {version} is not the pinned {pinned[package]}")
        if not path or path.startswith("/"):
            raise LabelError(f"{where}: the path must be relative to the unpacked wheel")
        if not line.isdigit() or int(line) < 1:
            raise LabelError(f"{where}: line {line!r} is not a positive integer")
        if rule not in RULES:
            raise LabelError(f"{where}: unknown rule {rule!r}")
        if site not in ("true", "false"):
            raise LabelError(f"{where}: site must be true or false, not {site!r}")
        if idiom and idiom not in IDIOMS:
            raise LabelError(f"{where}: unknown idiom {idiom!r} (one of {', '.join(IDIOMS)})")
        if not reason:
            raise LabelError(f"{where}: the reason is empty")
        label = Label(package, version, path, int(line), rule, site == "true", idiom, reason)
        if label.key in seen:
            raise LabelError(f"{where}: a second row for {path}:{line} {rule}")
        seen.add(label.key)
        labels.append(label)
    return labels


def parse_findings(document: str, package: str) -> list[Finding]:
    """The reported findings of ``ptrport lint --format=json`` (suppressed ones left out)."""
    data = json.loads(document)
    return [
        Finding(package, Path(f["path"]).as_posix(), int(f["line"]), f["rule"], f["message"])
        for f in data["findings"]
        if f.get("suppressed") is None
    ]


@dataclass
class Score:
    true_positives: int = 0
    false_positives: int = 0
    unlabelled: int = 0
    missed: int = 0

    @property
    def findings(self) -> int:
        return self.true_positives + self.false_positives + self.unlabelled

    @property
    def precision(self) -> float | None:
        """Over labelled findings; ``None`` when there is none."""
        judged = self.true_positives + self.false_positives
        return self.true_positives / judged if judged else None

    @property
    def recall(self) -> float | None:
        """Over true rows; ``None`` when there is none."""
        expected = self.true_positives + self.missed
        return self.true_positives / expected if expected else None

    def passes(self, min_precision: float = MIN_PRECISION, min_recall: float = MIN_RECALL) -> bool:
        precision = 1.0 if self.precision is None else self.precision
        recall = 1.0 if self.recall is None else self.recall
        return precision >= min_precision and recall >= min_recall and not self.unlabelled


@dataclass
class Comparison:
    overall: Score = field(default_factory=Score)
    packages: dict[str, Score] = field(default_factory=dict)
    rules: dict[str, Score] = field(default_factory=dict)
    false_findings: list[Finding] = field(default_factory=list)
    unlabelled: list[Finding] = field(default_factory=list)
    missed: list[Label] = field(default_factory=list)

    def _count(self, package: str, rule: str, kind: str) -> None:
        for score in (
            self.overall,
            self.packages.setdefault(package, Score()),
            self.rules.setdefault(rule, Score()),
        ):
            setattr(score, kind, getattr(score, kind) + 1)


def compare(labels: Iterable[Label], findings: Iterable[Finding]) -> Comparison:
    """Findings against labels, matched exactly on package, path, line and rule."""
    by_key = {label.key: label for label in labels}
    result = Comparison()
    for package in sorted({label.package for label in by_key.values()}):
        result.packages.setdefault(package, Score())
    found: set[Site] = set()
    for finding in sorted(set(findings), key=lambda f: f.key):
        found.add(finding.key)
        label = by_key.get(finding.key)
        if label is None:
            result.unlabelled.append(finding)
            result._count(finding.package, finding.rule, "unlabelled")
        elif label.site:
            result._count(finding.package, finding.rule, "true_positives")
        else:
            result.false_findings.append(finding)
            result._count(finding.package, finding.rule, "false_positives")
    for label in sorted(by_key.values(), key=lambda lb: lb.key):
        if label.site and label.key not in found:
            result.missed.append(label)
            result._count(label.package, label.rule, "missed")
    return result


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


def score_table(title: str, scores: dict[str, Score], times: dict[str, float]) -> str:
    """A plain-text table of ``scores`` (and the lint time of each row, where known)."""
    header = f"{title:<22} {'found':>5} {'TP':>4} {'FP':>4} {'unlab':>5} {'missed':>6}"
    header += f" {'precision':>9} {'recall':>6}" + (f" {'lint s':>7}" if times else "")
    lines = [header]
    for name, score in scores.items():
        line = (
            f"{name:<22} {score.findings:>5} {score.true_positives:>4} "
            f"{score.false_positives:>4} {score.unlabelled:>5} {score.missed:>6} "
            f"{_ratio(score.precision):>9} {_ratio(score.recall):>6}"
        )
        if times:
            line += f" {times[name]:>7.1f}" if name in times else f" {'':>7}"
        lines.append(line)
    return "\n".join(lines)


def markdown(comparison: Comparison, versions: dict[str, str]) -> str:
    """One Markdown table, a row per package: findings, true, false, missed."""
    lines = [
        "| package | version | findings | true | false | missed |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, score in comparison.packages.items():
        lines.append(
            f"| {name} | {versions.get(name, '')} | {score.findings} | "
            f"{score.true_positives} | {score.false_positives} | {score.missed} |"
        )
    return "\n".join(lines)


def report(comparison: Comparison, times: dict[str, float], labels: str = LABELS.name) -> str:
    parts = [
        score_table(
            "package",
            {**comparison.packages, "all": comparison.overall},
            {**times, "all": sum(times.values())} if times else {},
        ),
        score_table("rule", dict(sorted(comparison.rules.items())), {}),
    ]
    if comparison.unlabelled:
        rows = [f"unlabelled findings ({len(comparison.unlabelled)}): label them in {labels}"]
        rows += [
            f"  {f.package} {f.path}:{f.line} {f.rule}: {f.message}" for f in comparison.unlabelled
        ]
        parts.append("\n".join(rows))
    if comparison.false_findings:
        rows = [f"false findings ({len(comparison.false_findings)}):"]
        rows += [f"  {f.package} {f.path}:{f.line} {f.rule}" for f in comparison.false_findings]
        parts.append("\n".join(rows))
    if comparison.missed:
        by_idiom: dict[str, list[Label]] = {}
        for label in comparison.missed:
            by_idiom.setdefault(label.idiom or "unclassified", []).append(label)
        rows = [f"missed true sites ({len(comparison.missed)}), by idiom:"]
        for idiom, labels in sorted(by_idiom.items()):
            rows.append(f"  {idiom} ({len(labels)}):")
            rows += [
                f"    {lb.package} {lb.path}:{lb.line} {lb.rule}: {lb.reason}" for lb in labels
            ]
        parts.append("\n".join(rows))
    return "\n\n".join(parts) + "\n"


# Fetching, unpacking and linting: the parts that need pip, the network and the disk.


def fetch(engine: Engine, cache: Path, *, download: bool) -> Path:
    """The engine's wheel in ``cache/wheels``, downloaded with pip unless ``download`` is off."""
    wheels = cache / "wheels"
    wheel = wheels / engine.wheel
    if not wheel.is_file():
        if not download:
            raise Unavailable(f"{engine.wheel} is not in {wheels} and --skip-download was given")
        wheels.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--only-binary=:all:", "--python-version", "3.11", "--implementation", "cp",
            "--abi", engine.abi, "--platform", engine.platform,
            f"{engine.name}=={engine.version}", "--dest", str(wheels),
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0 or not wheel.is_file():
            errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
            why = errors[-1] if errors else f"pip exited {done.returncode}"
            raise Unavailable(f"pip download {engine.name}=={engine.version}: {why}")
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    if digest != engine.sha256:
        raise Unavailable(f"{wheel} has sha256 {digest}, not the pinned {engine.sha256}")
    return wheel


def unpack(engine: Engine, wheel: Path, cache: Path) -> Path:
    """The wheel's ``*.py`` files under ``cache/unpacked/NAME-VERSION`` (unpacked once)."""
    root = cache / "unpacked" / engine.unpacked
    done = root / ".unpacked"
    if not done.is_file():
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.namelist():
                if member.endswith(".py") and ".." not in Path(member).parts:
                    archive.extract(member, root)
        done.write_text(engine.wheel + "\n", encoding="utf-8")
    return root


def lint(engine: Engine, root: Path) -> tuple[list[Finding], float]:
    """The findings of ``ptrport lint`` on the unpacked package, and its wall time."""
    trees = list(engine.trees or (engine.name,))
    command = [sys.executable, "-m", "ptrport.cli", "lint", *trees, "--format=json"]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - start
    if done.returncode not in (0, 1):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"ptrport lint failed on {engine.name} (exit {done.returncode}): {last}")
    return parse_findings(done.stdout, engine.name), seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cache", type=Path, default=CACHE, help="wheels and unpacked files")
    parser.add_argument("--labels", type=Path, help="the labels CSV")
    parser.add_argument(
        "--unseen",
        action="store_true",
        help=f"the packages the lint was not tuned on ({UNSEEN_LABELS.name}; thresholds "
        f"precision {UNSEEN_PRECISION}, recall {UNSEEN_RECALL})",
    )
    parser.add_argument(
        "--skip-download", action="store_true", help="use cached wheels only (offline)"
    )
    parser.add_argument(
        "--markdown", action="store_true", help="also print a Markdown table per package"
    )
    args = parser.parse_args(argv)
    engines = UNSEEN if args.unseen else ENGINES
    labels_file: Path = args.labels or (UNSEEN_LABELS if args.unseen else LABELS)
    thresholds = (UNSEEN_PRECISION, UNSEEN_RECALL) if args.unseen else (MIN_PRECISION, MIN_RECALL)

    try:
        labels = parse_labels(labels_file.read_text(encoding="utf-8"), str(labels_file), engines)
    except OSError as error:
        print(f"{labels_file}: cannot read the labels: {error.strerror}", file=sys.stderr)
        return 2
    except LabelError as error:
        print(error, file=sys.stderr)
        return 2

    cache = args.cache.expanduser()
    try:
        roots = [
            (engine, unpack(engine, fetch(engine, cache, download=not args.skip_download), cache))
            for engine in engines
        ]
    except Unavailable as error:
        print(f"skipped: {error}")
        return 0

    findings: list[Finding] = []
    times: dict[str, float] = {}
    for engine, root in roots:
        try:
            found, times[engine.name] = lint(engine, root)
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 2
        findings += found

    comparison = compare(labels, findings)
    rows = Counter((label.package, label.site) for label in labels)
    for engine in engines:
        print(
            f"{engine.name} {engine.version}: {rows[engine.name, True]} true and "
            f"{rows[engine.name, False]} false rows"
        )
    print()
    print(report(comparison, times, labels_file.name), end="")
    if args.markdown:
        print()
        print(markdown(comparison, {engine.name: engine.version for engine in engines}))
    return 0 if comparison.overall.passes(*thresholds) else 1


if __name__ == "__main__":
    sys.exit(main())
