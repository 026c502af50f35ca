"""Candidates worth a reviewer's time, end to end through real PostgreSQL: marks read from the
stored events, turns most raters liked left out, proposed expected answers with their sources,
rank explanations, and no stale pending rows after a re-clustering (dead clusters, caps)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import asyncpg
import numpy as np

from evalloop.adapters.embedder import HashingEmbedder
from evalloop.adapters.event_store import insert_events, upsert_negative_cases
from evalloop.adapters.triage_store import QueueRow, upsert_candidates
from evalloop.core.fusion import FusionWeights, fuse
from evalloop.core.ranking import question_key
from evalloop.events import (
    AgentResponse,
    ContextChunk,
    NegativeCase,
    OperatorCorrection,
    UserRating,
)
from evalloop.settings import TriageSettings
from services.triage.online import ingest_cases
from services.triage.pipeline import candidate_id, recluster_agent

AGENT = "covid-qa"
T0 = datetime(2026, 11, 29, 8, 0, tzinfo=UTC)
SCORE = {"Bad": 1, "Could be Improved": 2, "Acceptable": 4, "Excellent": 5}
PETS = ("Pets such as dogs and cats can catch the virus, but there is no evidence that they "
        "spread it to people.")
CORRECTION = "Results arrive within 48 hours by text message."
# (conversation, question, answer, chunk (id, text) or None, labels, correction)
TURNS: list[tuple[str, str, str, tuple[str, str] | None, list[str], str | None]] = [
    ("t1", "How long does the virus survive on surfaces?", "Wash your hands.", None,
     ["Bad", "Bad"], None),
    ("t2", "how long does the virus survive on surfaces", "Up to 72 hours on plastic and steel.",
     None, ["Excellent", "Excellent"], None),
    ("t3", "Can my dog spread the virus to people?", "Dogs need daily walks.",
     ("kb-walks", "Dogs need daily walks."), ["Could be Improved"] * 3, None),
    ("t4", "Are cats and dogs at risk from the virus?", PETS, ("kb-pets", PETS),
     ["Excellent"], None),
    ("t5", "Should I wear a mask outside?", "Masks help in crowded places.", None,
     ["Bad", "Excellent", "Excellent"], None),
    ("t6", "When will I get my test results?", "Soon.", None, ["Bad"], CORRECTION),
]


async def _replay(pool: asyncpg.Pool) -> list[NegativeCase]:
    cases = []
    async with pool.acquire() as conn, conn.transaction():
        for i, (conv, q, a, chunk, labels, corrected) in enumerate(TURNS):
            at = T0 + timedelta(minutes=i)
            common: dict[str, Any] = {"agent_id": AGENT, "conversation_id": conv,
                                      "turn_id": "1", "question": q, "answer": a}
            events: list[Any] = [AgentResponse(
                event_id=uuid4(), occurred_at=at,
                context_chunks=[ContextChunk(id=chunk[0], text=chunk[1])] if chunk else None,
                **common)]
            for j, label in enumerate(labels):
                events.append(UserRating(
                    event_id=uuid4(), occurred_at=at + timedelta(seconds=10 + j),
                    thumbs="down" if SCORE[label] <= 2 else "up", score=SCORE[label],
                    comment=f"{label} ({conv})", **common))
            if corrected:
                events.append(OperatorCorrection(event_id=uuid4(),
                                                 occurred_at=at + timedelta(seconds=60),
                                                 corrected_answer=corrected, **common))
            await insert_events(conn, events)
            case = fuse(events, FusionWeights())
            if case is not None:
                cases.append(case)
        await upsert_negative_cases(conn, cases)
    return cases


async def test_marks_liked_turns_proposals_and_explanations(pool: asyncpg.Pool) -> None:
    cases = await _replay(pool)
    assert [c.conversation_id for c in cases] == ["t1", "t3", "t5", "t6"]
    emb = HashingEmbedder(256)
    cfg = TriageSettings(embedder="hashing", candidates_per_cluster=3, min_cluster_size=1)
    await ingest_cases(pool, emb, AGENT, cases, min_similarity=1 - cfg.cluster_threshold)
    report = await recluster_agent(pool, emb, cfg, AGENT)
    assert report.dropped.get("most_raters_liked") == 1

    rows = {r["question"]: r for r in await pool.fetch(
        "SELECT question, status, expected_answer, expected_answer_source, expected_answer_ref,"
        " explanation, rating_profile, confidence_parts FROM review_queue")}
    assert set(rows) == {TURNS[0][1], TURNS[2][1], TURNS[5][1]}  # the mask turn was liked
    t1, t3, t6 = rows[TURNS[0][1]], rows[TURNS[2][1]], rows[TURNS[5][1]]
    assert (t6["expected_answer"], t6["expected_answer_source"], t6["expected_answer_ref"]) == (
        CORRECTION, "operator_correction", None)
    assert (t1["expected_answer"], t1["expected_answer_source"]) == (
        "Up to 72 hours on plastic and steel.", "best_rated_answer")
    assert t1["expected_answer_ref"].startswith("event:")
    assert (t3["expected_answer"], t3["expected_answer_source"], t3["expected_answer_ref"]) == (
        PETS, "knowledge_passage", "passage:kb-pets")
    assert t3["rating_profile"] == {
        "negative": 3, "positive": 0, "neutral": 0, "severity": 0.75, "agreement": 1.0,
        "labels": ["score 2/5", "score 2/5", "score 2/5"]}
    assert (t3["confidence_parts"]["signal"], t3["confidence_parts"]["agreement"]) == (0.75, 1.0)
    assert (t6["confidence_parts"]["signal"], t6["confidence_parts"]["agreement"]) == (1.0, 1.0)
    assert t6["rating_profile"]["labels"] == ["score 1/5", "operator correction"]
    assert " = 0.4 x severity 0.75 (score 2/5, score 2/5, score 2/5) + 0.2 x agreement 1.00 " \
           "(3 of 3 negative) + 0.2 x cluster " in t3["explanation"]


async def test_recluster_leaves_no_stale_pending_rows(pool: asyncpg.Pool) -> None:
    cases = await _replay(pool)
    emb = HashingEmbedder(256)
    cfg = TriageSettings(embedder="hashing", candidates_per_cluster=1, min_cluster_size=1)
    await ingest_cases(pool, emb, AGENT, cases, min_similarity=1 - cfg.cluster_threshold)
    await recluster_agent(pool, emb, cfg, AGENT)
    live = {r["cluster_id"] for r in await pool.fetch(
        "SELECT cluster_id FROM clusters WHERE agent_id = $1", AGENT)}
    # what an older run (or an older version of triage) left behind: a pending row in a
    # cluster that no longer exists, and a cluster over its cap
    some = await pool.fetchval("SELECT cluster_id FROM review_queue LIMIT 1")
    stale = []
    for i, cluster in enumerate(["c999", some, some]):
        q = f"stale question {i}?"
        stale.append(QueueRow(
            candidate_id=candidate_id(AGENT, question_key(q)), agent_id=AGENT,
            question_key=question_key(q), case_id=cases[0].case_id, cluster_id=cluster,
            cluster_label="old label", question=q, answer_given=None, expected_answer=None,
            evidence_event_ids=[], confidence=0.99, confidence_parts={},
            question_embedding=np.ones(256, dtype=np.float32) / 16))
    async with pool.acquire() as conn:
        await upsert_candidates(conn, stale)
    report = await recluster_agent(pool, emb, cfg, AGENT)
    assert report.withdrawn == 3
    pending = await pool.fetch("SELECT cluster_id, count(*) AS n FROM review_queue "
                               "WHERE status = 'pending' GROUP BY cluster_id")
    assert {r["cluster_id"] for r in pending} <= live
    assert max(r["n"] for r in pending) == 1
    withdrawn = await pool.fetch("SELECT question, withdrawn_reason, row_version FROM "
                                 "review_queue WHERE status = 'withdrawn' ORDER BY question")
    assert [(r["question"], r["row_version"]) for r in withdrawn] == [
        ("stale question 0?", 2), ("stale question 1?", 2), ("stale question 2?", 2)]
    assert withdrawn[0]["withdrawn_reason"].startswith("not selected by the re-clustering")
    # a third run changes nothing: pending rows are not bumped when their content is the same
    before = await pool.fetch("SELECT candidate_id, row_version, status FROM review_queue "
                              "ORDER BY candidate_id")
    again = await recluster_agent(pool, emb, cfg, AGENT)
    assert again.withdrawn == 0
    assert await pool.fetch("SELECT candidate_id, row_version, status FROM review_queue "
                            "ORDER BY candidate_id") == before


async def test_refresh_bumps_row_version_only_for_what_a_reviewer_decides_on(
        pool: asyncpg.Pool) -> None:
    cases = await _replay(pool)
    q = cases[0].question
    assert q is not None
    row = QueueRow(candidate_id=candidate_id(AGENT, question_key(q)), agent_id=AGENT,
                   question_key=question_key(q), case_id=cases[0].case_id, cluster_id="c1",
                   cluster_label="a", question=q, answer_given="x", expected_answer=None,
                   evidence_event_ids=[], confidence=0.5, confidence_parts={},
                   question_embedding=None)
    async with pool.acquire() as conn:
        assert await upsert_candidates(conn, [row]) == [row.candidate_id]
        # new scores, label and cluster: refreshed, the reviewer's version stands
        await upsert_candidates(conn, [replace(row, confidence=0.9, cluster_id="c2",
                                               cluster_label="b", explanation="why")])
        got = await conn.fetchrow("SELECT row_version, confidence, cluster_id FROM "
                                  "review_queue WHERE candidate_id = $1", row.candidate_id)
        assert tuple(got) == (1, 0.9, "c2")
        # a new proposed expected answer: what the reviewer decides on changed
        await upsert_candidates(conn, [replace(row, confidence=0.9, cluster_id="c2",
                                               cluster_label="b", explanation="why",
                                               expected_answer="new",
                                               expected_answer_source="best_rated_answer")])
        assert await conn.fetchval("SELECT row_version FROM review_queue WHERE "
                                   "candidate_id = $1", row.candidate_id) == 2
