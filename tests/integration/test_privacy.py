"""Retention and erasure on real PostgreSQL, over data the real services stored (ingest with its
key -> recorder -> monitor -> triage, in process), and the optional redaction step at ingest."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid5

import asyncpg
from typer.testing import CliRunner

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.embedder import HashingEmbedder
from evalloop.adapters.postgres import connect_pool
from evalloop.adapters.privacy_store import erase_conversations, prune
from evalloop.cli.main import app
from evalloop.events import AgentResponse, FeedbackEvent, UserRating
from evalloop.replay.loop import in_process_loop
from evalloop.runtime import Deps
from evalloop.settings import (
    IngestSettings,
    PostgresSettings,
    RetentionSettings,
    Settings,
    TriageSettings,
)
from evalloop.topics import Topics
from services.monitor.service import MonitorService
from services.recorder.service import RecorderService
from services.retention.service import RetentionService
from services.triage.service import TriageService

NS = UUID("6f1c1f5e-2b9a-4c39-9a51-0d7e1f0c2a11")
T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
QUESTIONS = [
    "How many vacation days do I get as a new employee this year?",
    "How many vacation days does a new employee get in the first year?",
    "As a new employee, how many vacation days do I get?",
]
TABLES = ("events", "negative_cases", "monitor_turns", "monitor_buckets", "triage_cases",
          "review_queue", "eval_runs", "eval_results", "reeval_jobs", "dead_letters")


def turn(conv: str, n: int, at: datetime, user: str | None = None,
         comment: str = "wrong number of days") -> list[FeedbackEvent]:
    common: dict[str, Any] = {"agent_id": "hr", "conversation_id": conv, "turn_id": f"t{n}",
                              "user_id": user}
    q = QUESTIONS[n % 3]
    return [
        AgentResponse(event_id=uuid5(NS, f"{conv}/{n}/r"), occurred_at=at, question=q,
                      answer="You get 10 vacation days.", **common),
        UserRating(event_id=uuid5(NS, f"{conv}/{n}/d"), occurred_at=at + timedelta(seconds=30),
                   thumbs="down", comment=comment, question=q,
                   answer="You get 10 vacation days.", **common),
    ]


def settings_for(dsn: str, **ingest: Any) -> Settings:
    return Settings(
        postgres=PostgresSettings(dsn=dsn), ingest=IngestSettings(**ingest),
        triage=TriageSettings(embedder="hashing", recluster_every=1000, min_cluster_size=3,
                              recluster_check_s=3600, duplicate_similarity=0.999),
    )


async def run_loop(settings: Settings, pool: asyncpg.Pool, events: list[FeedbackEvent]) -> None:
    async with in_process_loop(settings, pool, [RecorderService, MonitorService, TriageService],
                               extras={"embedder": HashingEmbedder()}) as loop:
        async with loop.ingest_sink() as sink:
            await sink.send(events)
        await loop.drain(timeout_s=120)
        triage = next(s for s in loop.services if isinstance(s, TriageService))
        await triage.recluster("hr")
        await loop.drain(timeout_s=120)


async def counts(pool: asyncpg.Pool) -> dict[str, int]:
    return {t: await pool.fetchval(f"SELECT count(*) FROM {t}") for t in TABLES}


def dataset() -> list[FeedbackEvent]:
    events: list[FeedbackEvent] = []
    for n in range(3):
        events += turn("c-other", n, T0 + timedelta(days=3, minutes=n), user="u-12",
                       comment="not what the policy says")
        events += turn("c-jo", n, T0 + timedelta(days=3, minutes=10 + n), user="u-77")
        events += turn("c-old", n, T0 + timedelta(minutes=n))
    return events


# ------------------------------------------------------------------ erasure


async def test_erase_by_user_removes_the_persons_text_everywhere(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    before = await counts(pool)
    assert {k: before[k] for k in ("events", "negative_cases", "monitor_turns", "triage_cases")
            } == {"events": 18, "negative_cases": 9, "monitor_turns": 9, "triage_cases": 9}
    erase_cases = {r["case_id"] for r in await pool.fetch(
        "SELECT case_id FROM negative_cases WHERE conversation_id = 'c-jo'")}
    # triage proposed Jo's turns as golden-set candidates
    assert {r["case_id"] for r in await pool.fetch("SELECT case_id FROM review_queue")} \
        == erase_cases

    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["erase", "--user", "u-77", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn})
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    UUID(report.pop("erase_id"))
    assert report == {"conversations": ["c-jo"], "deleted": {
        "review_queue": 3, "triage_cases": 3, "monitor_turns": 3,
        "negative_cases": 3, "events": 6}, "redacted": {"golden_cases": 0}}
    after = await counts(pool)
    assert after["events"] == 12 and after["negative_cases"] == 6
    assert after["triage_cases"] == 6 and after["review_queue"] == 0
    assert await pool.fetchval("SELECT count(*) FROM events WHERE payload->>'user_id' = 'u-77'"
                               " OR conversation_id = 'c-jo'") == 0
    for table in ("triage_cases", "review_queue"):
        left = await pool.fetchval(
            f"SELECT count(*) FROM {table} WHERE case_id = ANY($1::uuid[])",
            list(erase_cases))
        assert left == 0, table
    # erasing again finds nothing
    again = await erase_conversations(pool, ["c-jo"])
    assert again.deleted == dict.fromkeys(
        ("review_queue", "triage_cases", "monitor_turns", "negative_cases", "events"), 0)
    assert again.redacted == {"golden_cases": 0}


async def test_erase_by_conversation_of_one_agent_only(pool: asyncpg.Pool, db_dsn: str) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    other = [e.model_copy(update={"agent_id": "cdc", "event_id": uuid5(NS, f"cdc/{e.event_id}")})
             for e in turn("c-jo", 0, T0 + timedelta(days=3))]
    await run_loop(settings_for(db_dsn), pool, other)
    deleted = (await erase_conversations(pool, ["c-jo"], agent_id="cdc")).deleted
    assert (deleted["events"], deleted["negative_cases"], deleted["monitor_turns"]) == (2, 1, 1)
    assert await pool.fetchval("SELECT count(*) FROM events WHERE conversation_id = 'c-jo'") \
        == 6  # hr's copy of the conversation id is another conversation


async def test_erase_needs_a_target() -> None:
    result = CliRunner().invoke(app, ["erase"])
    assert result.exit_code == 2
    assert "give --conversation ID (repeatable) or --user ID" in result.output


# ------------------------------------------------------------------ retention


async def test_prune_deletes_only_what_is_older_than_retention(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset())
    await pool.execute("UPDATE events SET stored_at = $1 WHERE conversation_id = 'c-old'",
                       datetime.now(UTC) - timedelta(days=100))
    await pool.execute("UPDATE negative_cases SET updated_at = $1"
                       " WHERE conversation_id = 'c-old'", datetime.now(UTC) - timedelta(days=100))
    old_cases = [r["case_id"] for r in await pool.fetch(
        "SELECT case_id FROM negative_cases WHERE conversation_id = 'c-old'")]
    await pool.execute("UPDATE triage_cases SET updated_at = $1 WHERE case_id = ANY($2)",
                       datetime.now(UTC) - timedelta(days=100), old_cases)
    # the queue: three old candidates, one of them confirmed (kept: a reviewer's decision)
    await pool.execute("UPDATE review_queue SET updated_at = $1",
                       datetime.now(UTC) - timedelta(days=100))
    await pool.execute("UPDATE review_queue SET status = 'confirmed' WHERE candidate_id ="
                       " (SELECT min(candidate_id::text)::uuid FROM review_queue)")
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 3
    # results: a 400-day-old run with 2 results is the baseline of a recent one
    old_run, new_run = UUID(int=1), UUID(int=2)
    for run, age, baseline in ((old_run, 400, None), (new_run, 10, old_run)):
        await pool.execute(
            "INSERT INTO eval_runs (run_id, agent_id, source, started_at, finished_at, status,"
            " baseline_run_id) VALUES ($1, 'hr', 'endpoint', $2, $2, 'passed', $3)",
            run, datetime.now(UTC) - timedelta(days=age), baseline)
    for case in ("r1", "r2"):
        await pool.execute(
            "INSERT INTO eval_results (run_id, case_id, position, category, input, should_refuse,"
            " should_escalate, status) VALUES ($1, $2, 0, 'routine', 'q', false, false,"
            " 'passed')", old_run, case)
    await pool.execute(
        "INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, request, status,"
        " finished_at) VALUES ($1, 'hr', 'manual', 'old', '{}', 'succeeded', $2)",
        UUID(int=3), datetime.now(UTC) - timedelta(days=400))
    for n, (age, published) in enumerate([(400, True), (400, False), (1, True)]):
        # an old published letter goes; an unpublished one (the outbox) and a new one stay
        await pool.execute(
            "INSERT INTO dead_letters (letter_id, reason, detail, record_value, source_topic,"
            " source_partition, source_offset, created_at, published_at)"
            " VALUES ($1, 'malformed_json', '{}', $2, 't', 0, $3, $4, $5)",
            UUID(int=100 + n), b'{"comment": "my e-mail is x@y.z"', n,
            datetime.now(UTC) - timedelta(days=age), datetime.now(UTC) if published else None)
    before = await counts(pool)

    retention = RetentionSettings(events_days=90, monitor_turns_days=2, triage_days=90,
                                  results_days=365, batch_rows=2)
    deleted = await prune(pool, retention, now=datetime.now(UTC))
    assert deleted == {
        "events": 6, "negative_cases": 3, "dead_letters": 1,
        # c-old's turns are 3 days before the agent's newest event (event time); 2 buckets
        "monitor_turns": 3, "monitor_buckets": 1,
        "triage_cases": 3, "review_queue": 2,
        "eval_runs": 1, "eval_results": 2, "reeval_jobs": 1,
    }
    after = await counts(pool)
    assert {t: before[t] - after[t] for t in TABLES} == deleted
    assert await pool.fetchval("SELECT baseline_run_id FROM eval_runs WHERE run_id = $1",
                               new_run) is None
    # nothing kept for ever is touched, and a second run finds nothing
    assert set((await prune(pool, retention, now=datetime.now(UTC))).values()) == {0}
    keep_all = RetentionSettings(events_days=None, monitor_turns_days=None, triage_days=None,
                                 results_days=None)
    assert await prune(pool, keep_all, now=datetime.now(UTC) + timedelta(days=9999)) == {}


async def test_prune_command_prints_counts_per_table(pool: asyncpg.Pool, db_dsn: str) -> None:
    await run_loop(settings_for(db_dsn), pool, dataset()[:6])
    result = await asyncio.to_thread(
        CliRunner().invoke, app, ["prune", "--json"],
        env={"EVALLOOP_POSTGRES__DSN": db_dsn, "EVALLOOP_RETENTION__EVENTS_DAYS": "90"})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"deleted": {
        "events": 0, "negative_cases": 0, "dead_letters": 0, "monitor_turns": 0,
        "monitor_buckets": 0, "triage_cases": 0, "review_queue": 0, "eval_runs": 0,
        "eval_results": 0, "reeval_jobs": 0}}


# ------------------------------------------------------------------ redaction at ingest


async def test_redaction_at_ingest_means_nothing_downstream_holds_the_identifiers(
    pool: asyncpg.Pool, db_dsn: str
) -> None:
    events = turn("c-pii", 0, T0, comment="wrong! mail me at jo@example.org or +44 20 7946 0958")
    await run_loop(settings_for(db_dsn, redact_pii=True), pool, events)
    payloads = [r["payload"] for r in await pool.fetch(
        "SELECT payload FROM events ORDER BY event_type")]
    assert [p.get("comment") for p in payloads] == [None, "wrong! mail me at [email] or [phone]"]
    assert await pool.fetchval("SELECT comment FROM negative_cases") == (
        "wrong! mail me at [email] or [phone]")
    assert await pool.fetchval("SELECT comment FROM triage_cases") == (
        "wrong! mail me at [email] or [phone]")


async def test_without_redaction_text_is_stored_as_sent(pool: asyncpg.Pool, db_dsn: str) -> None:
    events = turn("c-pii", 0, T0, comment="mail me at jo@example.org")
    await run_loop(settings_for(db_dsn), pool, events)
    assert await pool.fetchval("SELECT comment FROM negative_cases") == "mail me at jo@example.org"


# ------------------------------------------------------------------ the periodic job


def _retention_service(pool: asyncpg.Pool, interval_s: float) -> RetentionService:
    settings = Settings(postgres=PostgresSettings(dsn="postgresql://unused@localhost/x"),
                        retention=RetentionSettings(interval_s=interval_s))
    return RetentionService(Deps(settings=settings, pool=pool, bus=InProcessBus(),
                                 topics=Topics()))


async def test_the_retention_service_prunes_periodically(pool: asyncpg.Pool) -> None:
    await pool.execute(
        "INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, request, status,"
        " finished_at) VALUES ($1, 'hr', 'manual', 'old', '{}', 'failed', $2)",
        UUID(int=9), datetime.now(UTC) - timedelta(days=400))
    svc = _retention_service(pool, interval_s=0.05)
    await svc.start()
    try:
        async with asyncio.timeout(30):
            while svc.runs < 3:  # noqa: ASYNC110 (state owned by the service's task)
                await asyncio.sleep(0.02)
    finally:
        await svc.stop()
    assert svc.last_error is None
    assert await pool.fetchval("SELECT count(*) FROM reeval_jobs") == 0


async def test_a_failing_run_is_logged_and_retried_not_fatal(db_dsn: str) -> None:
    broken = await connect_pool(db_dsn, min_size=1, max_size=1)
    await broken.close()  # every query now fails
    svc = _retention_service(broken, interval_s=0.05)
    await svc.start()
    try:
        async with asyncio.timeout(30):
            while svc.last_error is None:  # noqa: ASYNC110
                await asyncio.sleep(0.02)
        await asyncio.sleep(0.1)
        assert svc._background is not None and not svc._background.done()  # still alive
    finally:
        await svc.stop()
    assert svc.runs == 0
    assert svc.last_error.startswith("StorageError: pruning events failed")
