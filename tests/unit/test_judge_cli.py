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
