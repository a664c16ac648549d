"""``benchmarks/real_engines.py``: its labels parser, the matching of findings with labels, the
precision and recall it reports, and its exits that need no network (bad labels, no wheels)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests import benchmark_scripts

real_engines = benchmark_scripts.load("real_engines")
Label = real_engines.Label
Finding = real_engines.Finding

HEADER = "package,version,path,line,rule,site,idiom,reason\n"
ROW = "vllm,0.34.0,vllm/a.py,12,signed-storage,true,,pointer list built as int64 tensor\n"


def label(path: str, line: int, *, site: bool = True, rule: str = "signed-storage") -> Label:
    return Label("vllm", "0.34.0", path, line, rule, site, "", "a reason")


def finding(path: str, line: int, rule: str = "signed-storage", package: str = "vllm") -> Finding:
    return Finding(package, path, line, rule)


class TestLabels:
    def test_it_reads_each_row_of_the_labels_file(self) -> None:
        text = HEADER + ROW + "sglang,0.5.23,sglang/b.py,3,bad-bitcast,false,,a bit test\n"
        labels = real_engines.parse_labels(text, "labels.csv")
        assert labels == [
            Label(
                "vllm",
                "0.34.0",
                "vllm/a.py",
                12,
                "signed-storage",
                True,
                "",
                "pointer list built as int64 tensor",
            ),
            Label("sglang", "0.5.23", "sglang/b.py", 3, "bad-bitcast", False, "", "a bit test"),
        ]

    def test_it_skips_blank_rows_and_quotes_a_reason_with_commas(self) -> None:
        text = HEADER + "\n" + 'lmcache,0.5.6,lmcache/c.py,7,float-storage,true,other,"a, b"\n'
        (only,) = real_engines.parse_labels(text, "labels.csv")
        assert (only.reason, only.idiom, only.site) == ("a, b", "other", True)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("", "labels.csv:1: the header must be"),
            ("package,version\n", "labels.csv:1: the header must be"),
            (HEADER + "vllm,0.34.0,vllm/a.py,12\n", "labels.csv:2: 4 columns, expected 8"),
            (HEADER + ROW.replace("vllm,", "tgi,", 1), "labels.csv:2: unknown package 'tgi'"),
            (HEADER + ROW.replace("0.34.0", "0.33.0"), "labels.csv:2: vllm 0.33.0 is not the"),
            (HEADER + ROW.replace("vllm/a.py", "/abs/a.py"), "labels.csv:2: the path must be"),
            (HEADER + ROW.replace(",12,", ",x,"), "labels.csv:2: line 'x' is not a positive"),
            (HEADER + ROW.replace(",12,", ",0,"), "labels.csv:2: line '0' is not a positive"),
            (HEADER + ROW.replace("signed-storage", "nope"), "labels.csv:2: unknown rule 'nope'"),
            (HEADER + ROW.replace(",true,", ",yes,"), "labels.csv:2: site must be true or false"),
            (HEADER + ROW.replace("true,,", "true,guess,"), "labels.csv:2: unknown idiom"),
            (
                HEADER + ROW.replace("pointer list built as int64 tensor", ""),
                "labels.csv:2: the reason is empty",
            ),
            (HEADER + ROW + ROW, "labels.csv:3: a second row for vllm/a.py:12 signed-storage"),
        ],
    )
    def test_a_malformed_file_names_the_file_and_row(self, text: str, message: str) -> None:
        with pytest.raises(real_engines.LabelError, match="^" + re.escape(message)):
            real_engines.parse_labels(text, "labels.csv")

    def test_the_committed_labels_parse(self) -> None:
        labels = real_engines.parse_labels(
            real_engines.LABELS.read_text(encoding="utf-8"), str(real_engines.LABELS)
        )
        assert {lb.package for lb in labels} == {engine.name for engine in real_engines.ENGINES}
        assert all(lb.idiom in ("", *real_engines.IDIOMS) for lb in labels)

    def test_the_committed_labels_of_the_unseen_packages_parse_and_cover_each(self) -> None:
        labels = real_engines.parse_labels(
            real_engines.UNSEEN_LABELS.read_text(encoding="utf-8"),
            str(real_engines.UNSEEN_LABELS),
            real_engines.UNSEEN,
        )
        assert {lb.package for lb in labels} == {engine.name for engine in real_engines.UNSEEN}
        assert sum(lb.site for lb in labels) >= 10
        seen = {engine.name for engine in real_engines.ENGINES}
        assert seen.isdisjoint(engine.name for engine in real_engines.UNSEEN)

    def test_a_label_of_an_unseen_package_is_refused_among_the_tuned_ones(self) -> None:
        text = HEADER + ROW.replace("vllm,0.34.0", "sgl-kernel,0.3.21")
        with pytest.raises(real_engines.LabelError, match="unknown package 'sgl-kernel'"):
            real_engines.parse_labels(text, "labels.csv")


class TestFindings:
    def test_it_reads_reported_findings_and_leaves_out_suppressed_ones(self) -> None:
        base = {"column": 1, "end_line": 5, "end_column": 9, "message": "m", "fix": "f"}
        document = {
            "findings": [
                {**base, "path": "vllm/a.py", "line": 5, "rule": "signed-storage"},
                {**base, "path": "vllm/b.py", "line": 6, "rule": "signed-storage",
                 "suppressed": "accepted"},
            ]
        }  # fmt: skip
        found = real_engines.parse_findings(json.dumps(document), "vllm")
        assert found == [Finding("vllm", "vllm/a.py", 5, "signed-storage", "m")]


class TestComparison:
    def test_findings_match_labels_on_package_path_line_and_rule_exactly(self) -> None:
        labels = [
            label("vllm/a.py", 10),
            label("vllm/a.py", 20, site=False),
            label("vllm/a.py", 30),
            label("vllm/b.py", 5, rule="bad-bitcast", site=False),
        ]
        findings = [
            finding("vllm/a.py", 10),
            finding("vllm/a.py", 20),
            finding("vllm/a.py", 31),
            finding("vllm/a.py", 10, rule="inferred-int64"),
            finding("vllm/a.py", 10, package="sglang"),
        ]
        result = real_engines.compare(labels, findings)
        overall = result.overall
        assert (overall.true_positives, overall.false_positives) == (1, 1)
        assert (overall.unlabelled, overall.missed) == (3, 1)
        assert [lb.line for lb in result.missed] == [30]
        assert {(f.package, f.line, f.rule) for f in result.unlabelled} == {
            ("vllm", 31, "signed-storage"),
            ("vllm", 10, "inferred-int64"),
            ("sglang", 10, "signed-storage"),
        }
        assert result.packages["sglang"].unlabelled == 1
        assert result.rules["signed-storage"].missed == 1
        assert "bad-bitcast" not in result.rules

    def test_precision_and_recall_count_labelled_findings_and_true_rows(self) -> None:
        labels = [label("vllm/a.py", n) for n in range(1, 10)] + [label("vllm/b.py", 1, site=False)]
        findings = [finding("vllm/a.py", n) for n in range(1, 7)] + [finding("vllm/b.py", 1)]
        score = real_engines.compare(labels, findings).overall
        assert score.findings == 7
        assert score.precision == pytest.approx(6 / 7)
        assert score.recall == pytest.approx(6 / 9)
        assert not score.passes()

    @pytest.mark.parametrize(
        ("tp", "fp", "unlabelled", "missed", "passes"),
        [
            (19, 1, 0, 2, True),  # precision 0.95, recall 19/21 > 0.9
            (18, 1, 0, 2, False),  # precision 18/19 < 0.95
            (9, 0, 0, 2, False),  # recall 9/11 < 0.9
            (20, 0, 1, 0, False),  # an unlabelled finding
            (0, 0, 0, 0, True),  # nothing found and nothing to find
        ],
    )
    def test_the_gate_needs_precision_recall_and_no_unlabelled_finding(
        self, tp: int, fp: int, unlabelled: int, missed: int, passes: bool
    ) -> None:
        assert real_engines.Score(tp, fp, unlabelled, missed).passes() is passes

    def test_undefined_ratios_are_none_and_print_as_n_a(self) -> None:
        score = real_engines.Score(missed=3)
        assert (score.precision, score.recall) == (None, 0.0)
        table = real_engines.score_table("rule", {"signed-storage": score}, {})
        assert table.splitlines()[1].split()[-2:] == ["n/a", "0.00"]

    def test_the_markdown_table_has_a_row_per_package(self) -> None:
        result = real_engines.compare(
            [label("vllm/a.py", 1), label("vllm/a.py", 2), label("vllm/a.py", 3, site=False)],
            [finding("vllm/a.py", 1), finding("vllm/a.py", 3)],
        )
        lines = real_engines.markdown(result, {"vllm": "0.34.0"}).splitlines()
        assert lines[0] == "| package | version | findings | true | false | missed |"
        assert lines[2:] == ["| vllm | 0.34.0 | 2 | 1 | 1 | 1 |"]

    def test_the_report_groups_missed_sites_by_idiom(self) -> None:
        missed = Label("vllm", "0.34.0", "vllm/a.py", 4, "signed-storage", True, "ipc", "why")
        text = real_engines.report(real_engines.compare([missed], []), {"vllm": 1.5})
        assert "missed true sites (1), by idiom:\n  ipc (1):\n    vllm vllm/a.py:4" in text


class TestMain:
    def test_a_malformed_labels_file_exits_2_with_one_line(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        labels = tmp_path / "labels.csv"
        labels.write_text(HEADER + ROW.replace(",true,", ",maybe,"), encoding="utf-8")
        assert real_engines.main(["--labels", str(labels), "--cache", str(tmp_path)]) == 2
        err = capsys.readouterr().err
        assert err == f"{labels}:2: site must be true or false, not 'maybe'\n"

    def test_without_cached_wheels_skip_download_skips_and_exits_0(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = real_engines.main(["--skip-download", "--cache", str(tmp_path / "empty")])
        assert code == 0
        out = capsys.readouterr().out
        assert out.startswith("skipped: vllm-0.34.0-") and "--skip-download" in out

    def test_unseen_reads_its_own_labels_and_wheels(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code = real_engines.main(["--unseen", "--skip-download", "--cache", str(tmp_path)])
        assert code == 0
        out = capsys.readouterr().out
        assert out.startswith("skipped: mooncake_transfer_engine-0.3.13.post1-")
