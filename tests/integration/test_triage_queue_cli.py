"""``evalloop queue list`` on real PostgreSQL, filled by the triage service."""

from __future__ import annotations

import asyncio
import json

import asyncpg
from test_triage import TOPICS, all_cases
from typer.testing import CliRunner

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.embedder import HashingEmbedder
from evalloop.cli.main import app
from evalloop.events import dump_event
from evalloop.runtime import Deps
from evalloop.settings import Settings, TriageSettings
from evalloop.topics import Topics
from services.triage.service import TriageService


def _run(db_dsn: str, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["queue", "list", *args], env={"EVALLOOP_POSTGRES__DSN": db_dsn, "COLUMNS": "240"}
    )
    return result.exit_code, result.output


async def test_queue_list_by_cluster_table_json_and_filters(
    pg_settings: Settings, pool: asyncpg.Pool, db_dsn: str
) -> None:
    cfg = pg_settings.model_copy(update={"triage": TriageSettings(
        embedder="hashing", recluster_every=15, candidates_per_cluster=2)})
    bus = InProcessBus()
    svc = TriageService(Deps(settings=cfg, pool=pool, bus=bus, topics=Topics()),
                        embedder=HashingEmbedder(256))
    for c in all_cases():
        await bus.publish(Topics().feedback_negative, dump_event(c), key=c.agent_id)
    await svc.on_negative_cases(bus.messages(Topics().feedback_negative))
    await pool.execute(
        "UPDATE review_queue SET status = 'rejected' WHERE candidate_id = (SELECT candidate_id "
        "FROM review_queue WHERE question LIKE 'Can my dog%' ORDER BY confidence DESC LIMIT 1)")

    code, out = await asyncio.to_thread(_run, db_dsn, "--json")
    assert code == 0, out
    rows = [json.loads(line) for line in out.splitlines()]  # JSON lines: one per candidate
    assert set(rows[0]) == {
        "agent_id", "cluster_id", "cluster_label", "cluster_size", "covered", "candidate_id",
        "question", "answer_given", "expected_answer", "confidence", "evidence_count", "status",
        "proposed_at", "expected_answer_source", "explanation", "row_version"}
    clusters = [(r["cluster_label"], r["cluster_size"], r["covered"]) for r in rows]
    assert clusters == [
        ("How can I get a refund for cancelled flight number 2?", 6, False),
        ("How can I get a refund for cancelled flight number 2?", 6, False),
        ("What is the checked baggage allowance on route 2?", 5, False),
        ("What is the checked baggage allowance on route 2?", 5, False),
        ("Can my dog travel in the cabin on trip 2?", 4, False),  # the other one: rejected
    ]
    top = rows[0]
    assert top["expected_answer"] == "Cancelled flights are refunded in full."
    assert top["evidence_count"] == 2
    assert top["answer_given"] == TOPICS["refund"][2]
    assert rows[0]["confidence"] >= rows[1]["confidence"]

    code, out = await asyncio.to_thread(_run, db_dsn)
    assert code == 0, out
    assert "review queue: 5 pending candidate(s) in 3 cluster(s)" in out
    assert ("How can I get a refund for cancelled flight number 2?  (size 6, covered by golden "
            "set: no)") in out
    assert "Cancelled flights are refunded in full." in out
    assert "clusters the golden set does not cover: 3" in out

    code, out = await asyncio.to_thread(_run, db_dsn, "--status", "rejected", "--json")
    assert code == 0, out
    rejected = [json.loads(line) for line in out.splitlines()]
    assert [r["status"] for r in rejected] == ["rejected"]

    code, out = await asyncio.to_thread(_run, db_dsn, "--agent", "nobody", "--json")
    assert (code, out) == (0, "")
    code, out = await asyncio.to_thread(_run, db_dsn, "--limit", "1", "--json")
    assert len(out.splitlines()) == 1

    code, out = await asyncio.to_thread(_run, db_dsn, "--status", "maybe")
    assert code == 2 and "expected one of pending" in out
