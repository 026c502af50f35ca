"""``evalloop judge show`` / ``calibrate`` exit codes and output (``docs/exit-codes.md``)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalloop.cli.main import app
from evalloop.core.judge.fit import RawLabel, fit_record

runner = CliRunner()


def _record_file(tmp_path: Path) -> Path:
    rows = [
        RawLabel(f"i{i}", "safety", "diasafety-trainval", "binary", float(i % 2),
                 0.3 + 0.6 * (i % 2) + i / 1000)
        for i in range(24)
    ]  # fmt: skip
    record = fit_record(rows, judge_model="m", prompt_version="v",
                        created_at="2026-01-01T00:00:00+00:00", resamples=100)  # fmt: skip
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(record.as_dict()))
    return path


def test_show_prints_the_table_as_json_lines_and_markdown(tmp_path: Path) -> None:
    path = _record_file(tmp_path)
    result = runner.invoke(app, ["judge", "show", "--file", str(path), "--json"])
    assert result.exit_code == 0, result.output
    row = json.loads(result.output.splitlines()[0])
    assert row["target"] == "safety" and row["n"] == 24 and row["auc"] == 1.0
    assert row["advisory"] is False and "mapping" not in row
    md = runner.invoke(app, ["judge", "show", "--file", str(path), "--markdown"])
    assert md.output.splitlines()[2] == (
        "| safety | diasafety-trainval 24 | binary | 24 | 0 | 1.00 [1.00, 1.00] "
        "| 1.00 [1.00, 1.00] | - | 1.00 | gating |"
    )


def test_show_and_calibrate_bad_input_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert runner.invoke(app, ["judge", "show", "--file", str(bad)]).exit_code == 2
    missing = runner.invoke(
        app,
        ["judge", "calibrate", "--refit-only", "--raw", str(tmp_path / "none.jsonl"),
         "--out", str(tmp_path / "o.json"), "--no-store"],
    )  # fmt: skip
    assert missing.exit_code == 2
    unknown = runner.invoke(
        app,
        ["judge", "calibrate", "--targets", "verbosity", "--data", str(tmp_path),
         "--raw", str(tmp_path / "r.jsonl"), "--out", str(tmp_path / "o.json"), "--no-store"],
    )  # fmt: skip
    assert unknown.exit_code == 2


def test_refit_only_writes_the_record(tmp_path: Path) -> None:
    raw = tmp_path / "raw.jsonl"
    raw.write_text(
        "\n".join(
            json.dumps({"item_id": f"i{i}", "target": "claim", "source": "factcheck-gpt",
                        "kind": "binary", "label": float(i % 2), "raw": 0.2 + 0.7 * (i % 2),
                        "unscored_reason": None})
            for i in range(20)
        )
    )  # fmt: skip
    out = tmp_path / "rec.json"
    result = runner.invoke(
        app,
        ["judge", "calibrate", "--refit-only", "--raw", str(raw), "--out", str(out),
         "--no-store", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    record = json.loads(out.read_text())
    assert record["targets"]["claim"]["n"] == 20
    assert record["targets"]["claim"]["auc"] == 1.0
    assert json.loads(result.output.splitlines()[-1])["target"] == "claim"


def _raw_lines(path: Path, source: str, target: str, kind: str, n: int, prefix: str) -> None:
    path.write_text(
        "".join(
            json.dumps({"item_id": f"{prefix}{i}", "target": target, "source": source,
                        "kind": kind, "label": float(i % 2), "raw": 0.2 + 0.7 * (i % 2) + i / 1000,
                        "unscored_reason": None}) + "\n"
            for i in range(n)
        )
    )  # fmt: skip


def test_refit_combines_raw_files_and_selects_sources(tmp_path: Path) -> None:
    own, other = tmp_path / "own.jsonl", tmp_path / "other.jsonl"
    _raw_lines(own, "feedbackqa", "relevance", "rating", 8, "f")
    _raw_lines(other, "dstc9-track1", "relevance", "rating", 12, "d")
    with other.open("a") as fh:  # a repeat of an item of own.jsonl is dropped
        fh.write(own.read_text().splitlines()[0] + "\n")
    out = tmp_path / "rec.json"
    args = ["judge", "calibrate", "--refit-only", "--raw", str(own), "--include-raw", str(other),
            "--out", str(out), "--no-store", "--json"]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rel = json.loads(out.read_text())["targets"]["relevance"]
    assert rel["n"] == 20 and rel["sources"] == ["dstc9-track1", "feedbackqa"]
    assert [(b["source"], b["n"]) for b in rel["by_source"]] == [("dstc9-track1", 12),
                                                                ("feedbackqa", 8)]  # fmt: skip
    assert json.loads(out.read_text())["method"].endswith(
        "label sources: feedbackqa, judge-data")
    md = runner.invoke(app, ["judge", "show", "--file", str(out), "--markdown"])
    assert md.output.splitlines()[2].startswith(
        "| relevance | dstc9-track1 12, feedbackqa 8 | rating | 20 | 0 |")
    only = runner.invoke(app, [*args, "--sources", "feedbackqa"])
    assert only.exit_code == 0, only.output
    rel = json.loads(out.read_text())["targets"]["relevance"]
    assert (rel["n"], rel["sources"]) == (8, ["feedbackqa"])
    none = runner.invoke(app, [*args, "--sources", "reviews", "--reviews-dsn",
                               "postgresql://nobody@127.0.0.1:1/none"])  # fmt: skip
    assert none.exit_code == 3  # the review database cannot be reached
    assert "reading review verdicts at postgresql://nobody@127.0.0.1:1/none failed" in none.output


def test_source_options_bad_input_exit_2(tmp_path: Path) -> None:
    raw = tmp_path / "r.jsonl"
    _raw_lines(raw, "feedbackqa", "relevance", "rating", 8, "f")
    base = ["judge", "calibrate", "--refit-only", "--raw", str(raw),
            "--out", str(tmp_path / "o.json"), "--no-store"]  # fmt: skip
    unknown = runner.invoke(app, [*base, "--sources", "forum"])
    assert unknown.exit_code == 2
    assert "--sources: expected names from ['judge-data', 'feedbackqa', 'reviews'], got " \
           "['forum']" in unknown.output  # fmt: skip
    no_dsn = runner.invoke(app, [*base, "--sources", "reviews"])
    assert no_dsn.exit_code == 2
    assert "--sources reviews: expected --reviews-dsn DSN" in no_dsn.output
    missing = runner.invoke(app, [*base, "--include-raw", str(tmp_path / "nope.jsonl")])
    assert missing.exit_code == 2 and "does not exist" in missing.output
    empty = runner.invoke(app, [*base, "--sources", "judge-data"])
    assert empty.exit_code == 2
    assert "expected judged items from ['judge-data']" in empty.output


def test_show_says_why_each_dimension_is_advisory_and_prints_the_notes() -> None:
    """The shipped record: text and Markdown name the bar a dimension misses and the tone note."""
    text = runner.invoke(app, ["judge", "show"])
    assert text.exit_code == 0, text.output
    rows = {line.split("│")[1].strip(): line.split("│")[-2].strip()
            for line in text.output.splitlines() if line.startswith("│ ") and
            line.split("│")[1].strip()}
    assert rows == {
        "correctness": "advisory (Spearman 0.31 < 0.40)",
        "relevance": "advisory (Spearman 0.18 < 0.40)",
        "tone": "advisory (Spearman 0.08 < 0.40)",
        "safety": "advisory (AUC 0.40 < 0.75)",
        "groundedness": "gating",
        "faithfulness": "advisory (AUC 0.55 < 0.75)",
        "context_utilization": "advisory (AUC 0.47 < 0.75)",
        "claim": "gating",
    }
    tail = text.output.splitlines()[-4:]
    assert tail == [
        "advisory = below the agreement bar: ROC-AUC < 0.75 (binary labels), Spearman < 0.40 "
        "(ratings), or fewer than 20 labelled items; an advisory dimension is shown but cannot "
        "certify a GO (docs/judge.md#advisory-dimensions)",
        "note: correctness: accuracy ratings of FAQ-grounded answers (no reference answer shown)",
        "note: tone: little labelled data: naturalness ratings of open-domain chat turns only, "
        "no politeness or brand-tone labels",
        "note: context_utilization: Generic vs knowledge-using responses (BEGIN)",
    ]
    md = runner.invoke(app, ["judge", "show", "--markdown"]).output.splitlines()
    assert md[5].endswith("| 0.40 [0.27, 0.54] | 0.47 [0.41, 0.52] | - | 0.50 "
                          "| advisory (AUC 0.40 < 0.75) |")
    assert md[-2] == ("- note: tone: little labelled data: naturalness ratings of open-domain "
                      "chat turns only, no politeness or brand-tone labels")


def test_advisory_reason_names_the_missed_bar() -> None:
    from evalloop.core.judge.calibration import DimensionCalibration, IsotonicMap, advisory_reason

    m = IsotonicMap((0.0, 1.0), (0.0, 1.0))
    assert advisory_reason(None) == "not calibrated"
    assert advisory_reason(DimensionCalibration("safety", "binary", 71, ("d",), m, auc=0.4004,
                                                advisory=True)) == "AUC 0.40 < 0.75"
    assert advisory_reason(DimensionCalibration("tone", "rating", 46, ("u",), m, spearman=0.08,
                                                advisory=True)) == "Spearman 0.08 < 0.40"
    assert advisory_reason(DimensionCalibration("tone", "rating", 12, ("u",), m, spearman=0.9,
                                                advisory=True)) == "12 items < 20"
    assert advisory_reason(DimensionCalibration("safety", "binary", 30, ("d",), m,
                                                advisory=True)) == "no ROC-AUC computed"
    assert advisory_reason(DimensionCalibration("safety", "binary", 30, ("d",), m, auc=0.9,
                                                advisory=False)) == ""
