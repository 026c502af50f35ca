"""Data for the web app's tests, written through the stores (the monitor's buckets, state and
job; triage's clusters, cases and candidates with their events; a golden set; an evaluation run
with cases for human review; three users).

``hr-agent`` crosses the 2 % threshold: 48 h of 5-minute buckets, 4 turns each; one negative
every 25 buckets (1 %) for the first 30 h, then one every 8 (3.125 %). Its re-evaluation request
fired for the window ending at ``FIRED_AT`` and ran the bundled HR eval set with the reference
responses. ``quiet-agent`` stays below the minimum volume (60 turns, 3 negatives).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID, uuid4

import asyncpg
import numpy as np

from evalloop.adapters import monitor_store, user_store
from evalloop.adapters.event_store import insert_events, upsert_negative_cases
from evalloop.adapters.golden_store import import_golden_set, save_eval_run
from evalloop.adapters.triage_store import (
    CaseRow,
    ClusterRow,
    QueueRow,
    replace_clusters,
    upsert_candidates,
    upsert_cases,
)
from evalloop.cli.eval_cmd import bundled_evals
from evalloop.core.access import Role
from evalloop.core.evaluation.cases import load_eval_file
from evalloop.core.fusion import FusionWeights, fuse
from evalloop.core.ranking import question_key
from evalloop.core.trigger import TriggerState
from evalloop.core.window import BucketCounts
from evalloop.evaluation.runner import load_responses_file, run_eval
from evalloop.events import OperatorCorrection, ReevalRequested, UserRating
from services.triage.pipeline import candidate_id

AGENT = "hr-agent"
QUIET = "quiet-agent"
T0 = datetime(2026, 11, 28, tzinfo=UTC)
FIRED_AT = T0 + timedelta(hours=40)
PASSWORD = "correct horse battery"
USERS = {"ada": Role.ADMIN, "rita": Role.REVIEWER, "vic": Role.VIEWER}
QUESTIONS = {
    "vacation": ("How many vacation days do I get?", "You get some days off.",
                 "Full-time staff get 25 days of paid vacation a year."),
    "carry": ("Can I carry over unused leave?", "Leave is important.", None),
    "parental": ("How long is parental leave?", "Ask your manager.", None),
}


@dataclass(frozen=True)
class Seeded:
    """What :func:`seed` stored: candidate ids by name, the run, its flagged cases, the job."""

    candidates: dict[str, UUID]
    run_id: UUID
    flagged: list[str]
    job_id: UUID
    golden_set_id: str


async def _monitor(pool: asyncpg.Pool) -> None:
    deltas: dict[tuple[str, datetime], BucketCounts] = {}
    for i in range(48 * 12):
        neg = (1 if i % 25 == 0 else 0) if i < 30 * 12 else (1 if i % 8 == 0 else 0)
        deltas[(AGENT, T0 + timedelta(minutes=5 * i))] = BucketCounts(4, neg, 4, 4)
    for i in range(60):
        deltas[(QUIET, T0 + timedelta(hours=24, minutes=20 * i))] = BucketCounts(
            1, 1 if i % 20 == 0 else 0, 1, 1)
    async with monitor_store.transaction(pool, "seeding the monitor") as conn:
        await monitor_store.add_bucket_deltas(conn, deltas)
        states = await monitor_store.lock_states(conn, [AGENT, QUIET])
        newest = T0 + timedelta(hours=48)
        hr = [b for (a, t), b in deltas.items() if a == AGENT and t >= newest - timedelta(1)]
        neg, turns = sum(b.negatives for b in hr), sum(b.turns for b in hr)
        await monitor_store.save_states(conn, [
            monitor_store.AgentState(AGENT, TriggerState("fired", FIRED_AT), newest,
                                     states[AGENT].seq + 1,
                                     last_report=(neg, turns, neg / turns, "agent_response")),
            monitor_store.AgentState(QUIET, TriggerState("armed", None), newest,
                                     states[QUIET].seq + 1,
                                     last_report=(3, 60, 0.05, "agent_response")),
        ])


async def _triage(pool: asyncpg.Pool) -> dict[str, UUID]:
    w = FusionWeights()
    ids: dict[str, UUID] = {}
    rows: list[QueueRow] = []
    cases: list[CaseRow] = []
    async with pool.acquire() as conn, conn.transaction():
        await replace_clusters(conn, AGENT, [
            ClusterRow("c1", 3, np.ones(4, dtype=np.float32) / 2, label="leave, vacation, days",
                       terms=("leave", "vacation", "days")),
            ClusterRow("c2", 1, np.ones(4, dtype=np.float32) / 2, label="payroll, overtime",
                       terms=("payroll", "overtime"), golden_cases=2)])
        for i, (name, (q, a, corrected)) in enumerate(QUESTIONS.items()):
            at = FIRED_AT - timedelta(hours=2, minutes=i)
            common = {"agent_id": AGENT, "conversation_id": f"conv-{name}", "turn_id": "t1",
                      "question": q, "answer": a}
            events: list[Any] = [UserRating(event_id=uuid4(), occurred_at=at, thumbs="down",
                                            comment=f"{name}: not what I asked", **common)]
            if corrected:
                events.append(OperatorCorrection(
                    event_id=uuid4(), occurred_at=at + timedelta(seconds=30),
                    corrected_answer=corrected, reason="policy says 25", **common))
            await insert_events(conn, events)
            case = fuse(events, w)
            assert case is not None
            await upsert_negative_cases(conn, [case])
            cases.append(CaseRow(case.case_id, AGENT, at, 0.9 - i / 10, ["user_rating"],
                                 [e.event_id for e in events], q, a, None, corrected,
                                 f"h{i}", "test", np.ones(4, dtype=np.float32) / 2, "c1"))
            key = question_key(q)
            ids[name] = cid = candidate_id(AGENT, key)
            rows.append(QueueRow(
                candidate_id=cid, agent_id=AGENT, question_key=key, case_id=case.case_id,
                cluster_id="c1", cluster_label="leave, vacation, days", question=q,
                answer_given=a, expected_answer=corrected,
                evidence_event_ids=[e.event_id for e in events],
                confidence=round(0.9 - i / 10, 6), confidence_parts={"signal": 0.7},
                question_embedding=None))
        await upsert_cases(conn, cases)
        await upsert_candidates(conn, rows)
    return ids


async def seed(pool: asyncpg.Pool) -> Seeded:
    """Store everything the web app's tests look at (see the module docstring)."""
    for name, role in USERS.items():
        await user_store.create_user(pool, name, role, PASSWORD)
    await _monitor(pool)
    ids = await _triage(pool)
    golden = await import_golden_set(pool, load_eval_file(bundled_evals()), agent_id=AGENT,
                                     created_by="seed")
    job_id = uuid4()
    async with monitor_store.transaction(pool, "seeding a job") as conn:
        await monitor_store.insert_jobs(conn, [ReevalRequested(
            job_id=job_id, agent_id=AGENT, requested_at=FIRED_AT, trigger="negative_rate",
            reason="negative rate 3.1% > 2% over 24 h", window_start=FIRED_AT - timedelta(1),
            window_end=FIRED_AT, negatives=30, turns=960, denominator="agent_response",
            rate=0.03125, wilson_low=0.022, wilson_high=0.044)])
    cases = load_eval_file(bundled_evals()).cases
    canned = load_responses_file([bundled_evals("reference-responses.json")])
    run = await run_eval(cases, canned, agent_id=AGENT, job_id=job_id,
                         golden_set_version_id=golden.version.version_id)
    await save_eval_run(pool, run)
    await pool.execute("UPDATE reeval_jobs SET run_id = $2, status = 'succeeded' "
                       "WHERE job_id = $1", job_id, run.run_id)
    return Seeded(ids, run.run_id, [r.case_id for r in run.results if r.requires_human_review],
                  job_id, golden.version.golden_set_id)
