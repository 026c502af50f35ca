"""The in-process bus path (``evalloop demo``) and the real-Kafka path (``evalloop up``) give the
same results on the same replayed input: the same events stored, the same negative cases, the
same monitor windows and the same re-evaluation jobs.

Both paths run the unchanged service classes (recorder, monitor) against their own fresh
PostgreSQL database; the input is one seeded replay slice (two FeedbackQA agents, one with an
incident, plus the tau-bench episodes; late events included), produced straight to
``feedback.events.v1`` keyed by ``agent_id``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import asyncpg
from faststream import TestApp
from kafka_lag import wait_caught_up

from evalloop.adapters.postgres import connect_pool, create_database
from evalloop.replay.corpus import load_sample
from evalloop.replay.loop import in_process_loop
from evalloop.replay.producer import deliver, kafka_sink
from evalloop.replay.schedule import AgentPlan, IncidentPlan, SchedulePlan, build_schedule
from evalloop.settings import PostgresSettings, Settings
from evalloop.topics import GROUP_MONITOR, GROUP_RECORDER, Topics
from services.monitor.app import build_app as monitor_app
from services.monitor.service import MonitorService
from services.recorder.app import build_app as recorder_app
from services.recorder.service import RecorderService

WAIT_S = 180.0  # bound on delivery through Kafka on a loaded 2-core machine (not asserted)
END = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
PLAN = SchedulePlan(
    span_hours=24,
    agents=(AgentPlan("covid-qa-uk", 900), AgentPlan("covid-qa-who", 600, utc_offset_h=2)),
    incident=IncidentPlan("covid-qa-uk", start_fraction=0.4, duration_h=8, p_negative=0.1),
    late_fraction=0.01,
)

QUERIES = {
    # received_at: the wall-clock time the event reached the recorder, different per run.
    "events": "SELECT event_id, event_type, agent_id, conversation_id, turn_id, occurred_at,"
              " payload - 'received_at' AS payload FROM events ORDER BY event_id",
    "negative_cases": "SELECT case_id, agent_id, conversation_id, turn_id, occurred_at,"
                      " confidence, signals, evidence_event_ids, question, answer, comment,"
                      " expected_answer FROM negative_cases ORDER BY case_id",
    "reeval_jobs": "SELECT job_id, agent_id, trigger, reason, request - 'requested_at' AS request"
                   " FROM reeval_jobs ORDER BY job_id",
    "monitor_buckets": "SELECT * FROM monitor_buckets WHERE turns <> 0 OR served <> 0"
                       " ORDER BY agent_id, bucket_start",
    "monitor_turns": "SELECT agent_id, conversation_id, turn_id, served_bucket, signal_bucket,"
                     " negative FROM monitor_turns ORDER BY 1, 2, 3",
    "monitor_state": "SELECT agent_id, phase, fired_at, newest_event_at, last_negatives,"
                     " last_turns FROM monitor_state ORDER BY agent_id",
}


async def _snapshot(dsn: str) -> dict[str, list[dict[str, Any]]]:
    conn = await asyncpg.connect(dsn)
    try:
        await conn.set_type_codec("jsonb", schema="pg_catalog", encoder=json.dumps,
                                  decoder=json.loads)
        return {name: [dict(r) for r in await conn.fetch(q)] for name, q in QUERIES.items()}
    finally:
        await conn.close()


async def test_in_process_and_kafka_paths_store_the_same(
    settings: Settings, topics: Topics, db_dsn: str, pg_dsn: str, template_db: str
) -> None:
    schedule = build_schedule(load_sample(), PLAN, end=END, seed=11)
    events = schedule.events
    assert schedule.agents["covid-qa-uk"].first_crossing is not None  # the input has a crossing

    # -- in-process: the demo's path, on its own fresh database
    inproc_dsn = await create_database(
        pg_dsn, f"{template_db}_inproc"[:60].replace("template", "t"), template=template_db
    )
    inproc_settings = settings.model_copy(update={"postgres": PostgresSettings(dsn=inproc_dsn)})
    try:
        pool = await connect_pool(inproc_dsn, min_size=1, max_size=4)
        try:
            async with in_process_loop(
                inproc_settings, pool, [RecorderService, MonitorService]
            ) as loop:
                await deliver(events, loop.bus_sink(), batch_size=300)
                await loop.drain(timeout_s=WAIT_S)
        finally:
            await pool.close()
        expected = await _snapshot(inproc_dsn)
    finally:
        admin = await asyncpg.connect(pg_dsn)
        try:
            name = urlsplit(inproc_dsn).path.lstrip("/")
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await admin.close()

    # -- real Kafka: each service as its own FastStream app (what `evalloop up` runs)
    async with TestApp(recorder_app(settings)), TestApp(monitor_app(settings)):
        async with kafka_sink(settings) as sink:
            await deliver(events, sink, batch_size=300)
        # recorder on the raw stream first, then the monitor on what the recorder published
        await wait_caught_up(settings.kafka.bootstrap, [
            (topics.feedback_events, [GROUP_RECORDER]),
            (topics.feedback_recorded, [GROUP_MONITOR]),
        ], WAIT_S)
    actual = await _snapshot(db_dsn)

    n_events = len({s.event.event_id for s in events})
    assert len(expected["events"]) == n_events
    assert len(expected["negative_cases"]) == sum(
        a.negative_turns for a in schedule.agents.values()
    )
    assert [j["agent_id"] for j in expected["reeval_jobs"]].count("covid-qa-uk") == 1
    for name in QUERIES:
        assert len(actual[name]) == len(expected[name]), name
        for a, e in zip(actual[name], expected[name], strict=True):
            diff = {k: (a[k], e[k]) for k in a if a[k] != e[k]}
            if isinstance(a.get("payload"), dict):
                diff["payload"] = {k: (a["payload"].get(k), e["payload"].get(k))
                                   for k in a["payload"] | e["payload"]
                                   if a["payload"].get(k) != e["payload"].get(k)}
            assert a == e, f"{name} differ between the two paths: {diff}"
