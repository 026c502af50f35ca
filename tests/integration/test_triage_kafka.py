"""The triage app through real Kafka and PostgreSQL: ``feedback.negative.v1`` in,
clusters + review queue in PostgreSQL, ``golden.candidate.proposed.v1`` out (once each, even
when the input is sent twice)."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg
from faststream import TestApp
from kafka_lag import wait_caught_up
from test_triage import all_cases

from evalloop.adapters.bus import Record
from evalloop.adapters.kafka import KafkaBus, build_broker, subscribe_batch
from evalloop.events import CandidateProposed, dump_event
from evalloop.settings import Settings, TriageSettings
from evalloop.topics import GROUP_TRIAGE, Topics
from services.triage.app import build_app

WAIT_S = 90.0  # bound on delivery on a loaded 2-core machine (not a timing assertion)


async def test_negative_cases_over_kafka_become_proposed_candidates(
    settings: Settings, topics: Topics, db_dsn: str
) -> None:
    cfg = settings.model_copy(update={"triage": TriageSettings(
        embedder="hashing", recluster_every=15, candidates_per_cluster=2,
        recluster_check_s=3600)})
    got: list[CandidateProposed] = []
    six = asyncio.Event()

    async def collect(records: list[Record]) -> None:
        got.extend(CandidateProposed.model_validate_json(r.value) for r in records)
        if len(got) >= 6:
            six.set()

    listener = build_broker(cfg.kafka)
    group = f"g-{uuid.uuid4().hex}"
    subscribe_batch(listener, topics.candidate_proposed, group, collect)
    producer = build_broker(cfg.kafka)
    cases = all_cases()
    async with TestApp(build_app(cfg)):
        await listener.start()
        await producer.connect()
        try:
            bus = KafkaBus(producer)
            items = [(c.agent_id, dump_event(c)) for c in cases]
            await bus.publish_batch(topics.feedback_negative, items)
            await asyncio.wait_for(six.wait(), WAIT_S)
            await bus.publish_batch(topics.feedback_negative, items)  # sent again
            # no wrong second announcement: triage handled the re-sent cases, and the
            # listener consumed every announcement published
            await wait_caught_up(cfg.kafka.bootstrap, [
                (topics.feedback_negative, [GROUP_TRIAGE]),
                (topics.candidate_proposed, [group]),
            ], WAIT_S)
        finally:
            await producer.stop()
            await listener.stop()

    assert len(got) == 6
    assert {m.agent_id for m in got} == {"airline"}
    conn = await asyncpg.connect(db_dsn)
    try:
        queue = await conn.fetch("SELECT candidate_id, published_at FROM review_queue")
        sizes = await conn.fetch("SELECT size FROM clusters ORDER BY size DESC")
        cases_n = await conn.fetchval("SELECT count(*) FROM triage_cases")
    finally:
        await conn.close()
    assert sorted(r["candidate_id"] for r in queue) == sorted(m.candidate_id for m in got)
    assert all(r["published_at"] is not None for r in queue)
    assert [r["size"] for r in sizes] == [6, 5, 4]
    assert cases_n == 15
    top = max(got, key=lambda m: m.confidence)
    assert top.expected_answer == "Cancelled flights are refunded in full."
