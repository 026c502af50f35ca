"""Escalation incidents -> golden-set candidates in the review queue (real PostgreSQL,
in-process bus): docs/rules.md#eval-cadence "After any escalation incident: add case covering the
incident scenario"."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest_asyncio

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.event_store import insert_events
from evalloop.core.fusion import TurnKey, case_id_for
from evalloop.core.ranking import question_key
from evalloop.events import (
    AgentResponse,
    CandidateProposed,
    ContextChunk,
    Escalation,
    UserRating,
    dump_event,
)
from evalloop.runtime import Deps, mount_in_process
from evalloop.settings import PostgresSettings, Settings
from evalloop.topics import Topics
from services.evaluator.incidents import INCIDENT_CLUSTER_ID, candidate_id_for
from services.evaluator.service import EvaluatorService

AGENT = "hr-qa-agent"
T0 = datetime.now(UTC) - timedelta(hours=1)
QUESTION = "My supervisor keeps touching my shoulder and I feel unsafe at work."


def _escalation(conv: str, **kw: object) -> Escalation:
    base: dict[str, object] = {
        "event_id": uuid.uuid4(), "agent_id": AGENT, "conversation_id": conv, "turn_id": "1",
        "occurred_at": T0, "requested_by": "policy", "reason": "harassment report",
        "question": QUESTION, "answer": "According to the policy (Dress Code): ...",
    }
    return Escalation.model_validate(base | kw)


@pytest_asyncio.fixture
async def bus(pool: asyncpg.Pool, db_dsn: str) -> AsyncIterator[InProcessBus]:
    b = InProcessBus(retry_delay_s=0.05)
    svc = EvaluatorService(Deps(Settings(postgres=PostgresSettings(dsn=db_dsn)), pool, b,
                                Topics()))
    mount_in_process(b, svc)  # handlers only: no job workers needed here
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(b.run())
        try:
            yield b
        finally:
            b.stop()
            await runner


def _proposed(bus: InProcessBus) -> list[CandidateProposed]:
    return [CandidateProposed.model_validate_json(r.value)
            for r in bus.messages(Topics().candidate_proposed)]


async def _step(bus: InProcessBus) -> None:
    await bus.drain(timeout_s=60)


async def test_an_escalation_proposes_one_candidate(pool: asyncpg.Pool,
                                                    bus: InProcessBus) -> None:
    esc = _escalation("conv-1")
    await bus.publish(Topics().feedback_recorded, dump_event(esc), key=AGENT)
    # noise: other event types are ignored, an undecodable record is skipped
    await bus.publish(Topics().feedback_recorded, b"{not json", key=AGENT)
    await bus.publish(Topics().feedback_recorded, dump_event(UserRating(
        event_id=uuid.uuid4(), agent_id=AGENT, conversation_id="conv-9", turn_id="1",
        occurred_at=T0, thumbs="down", question="q?")), key=AGENT)
    await _step(bus)

    [proposal] = _proposed(bus)
    cid = candidate_id_for(AGENT, QUESTION)
    assert (proposal.candidate_id, proposal.cluster_id, proposal.question,
            proposal.answer_given, proposal.evidence_event_ids, proposal.confidence) == (
        cid, INCIDENT_CLUSTER_ID, QUESTION, esc.answer, [esc.event_id], 0.9)
    row = await pool.fetchrow("SELECT * FROM review_queue WHERE candidate_id = $1", cid)
    assert (row["agent_id"], row["question_key"], row["case_id"], row["status"],
            row["confidence_parts"]) == (
        AGENT, question_key(QUESTION), case_id_for(TurnKey(AGENT, "conv-1", "1")), "pending",
        {"source": "escalation_incident", "requested_by": "policy"})
    assert row["published_at"] is not None


async def test_redelivery_and_repeats_of_the_scenario_queue_it_once(
    pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    first = _escalation("conv-1")
    for event in (first, first, _escalation("conv-1"),
                  # the same question in another conversation, differently spaced and cased
                  _escalation("conv-2", question="  my supervisor keeps touching my shoulder "
                              "and I feel unsafe at   work.", requested_by="user")):
        await bus.publish(Topics().feedback_recorded, dump_event(event), key=AGENT)
        await _step(bus)
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 1
    assert len(_proposed(bus)) == 1


async def test_an_escalation_without_the_question_uses_the_stored_turn(
    pool: asyncpg.Pool, bus: InProcessBus
) -> None:
    response = AgentResponse(
        event_id=uuid.uuid4(), agent_id=AGENT, conversation_id="conv-3", turn_id="2",
        occurred_at=T0, question="Can I speak to someone about my dismissal? I want to sue.",
        answer="I understand this is serious...",
        context_chunks=[ContextChunk(id="hr-policy/conduct-and-discipline/dismissal",
                                     text="13.1 ...")],
    )
    async with pool.acquire() as conn:
        await insert_events(conn, [response])
    bare = _escalation("conv-3", turn_id="2", question=None, answer=None, requested_by="user")
    orphan = _escalation("conv-4", question=None, answer=None)  # its turn was never stored
    for event in (bare, orphan):
        await bus.publish(Topics().feedback_recorded, dump_event(event), key=AGENT)
    await _step(bus)

    [proposal] = _proposed(bus)
    assert (proposal.question, proposal.answer_given, proposal.confidence) == (
        response.question, response.answer, 0.7)
    assert await pool.fetchval("SELECT count(*) FROM review_queue") == 1
