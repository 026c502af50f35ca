"""schemas/ is generated: it must equal a fresh `evalloop schemas generate` (no broker needed)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from evalloop.cli import schemas
from evalloop.cli.up import available_services

ROOT = Path(__file__).resolve().parents[2] / "schemas"


def test_committed_schemas_are_up_to_date() -> None:
    stale = schemas.stale_files(ROOT)
    assert stale == [], f"stale files under schemas/: {stale}; run `evalloop schemas generate`"


def test_every_event_and_every_service_has_a_file() -> None:
    files = schemas.render()
    assert {f"events/{n}.json" for n in schemas.EVENT_MODELS} <= set(files)
    # every service with a Kafka side; the web app has none (its pages read PostgreSQL)
    kafka_services = {n for n in available_services() if n != "web"}
    assert {f"asyncapi/{n}.json" for n in kafka_services} == {
        p for p in files if p.startswith("asyncapi/")}
    union = json.loads(files["events/feedback_event.json"])
    assert sorted(union["discriminator"]["mapping"]) == [
        "agent_changed", "agent_response", "conversation_outcome", "escalation",
        "operator_correction", "safety_trigger", "user_rating",
    ]
    ingest = json.loads(files["asyncapi/ingest.json"])
    assert ingest["asyncapi"].startswith("3.")
    assert [c["address"] for c in ingest["channels"].values()] == ["feedback.events.v1"]


def test_output_is_deterministic_sorted_json() -> None:
    first, second = schemas.render(), schemas.render()
    assert first == second
    for text in first.values():
        assert text == json.dumps(json.loads(text), indent=2, sort_keys=True,
                                  ensure_ascii=False) + "\n"


def test_check_lists_stale_and_left_over_files_and_generate_fixes_them(tmp_path: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(schemas.app, ["generate", "--root", str(tmp_path)]).exit_code == 0
    assert runner.invoke(schemas.app, ["check", "--root", str(tmp_path)]).exit_code == 0
    (tmp_path / "events" / "user_rating.json").write_text("{}\n")
    (tmp_path / "asyncapi" / "retired.json").write_text("{}\n")
    result = runner.invoke(schemas.app, ["check", "--root", str(tmp_path)])
    assert result.exit_code == 1
    assert "events/user_rating.json" in result.output
    assert "asyncapi/retired.json" in result.output
    assert runner.invoke(schemas.app, ["generate", "--root", str(tmp_path)]).exit_code == 0
    assert schemas.stale_files(tmp_path) == []
    assert not (tmp_path / "asyncapi" / "retired.json").exists()
