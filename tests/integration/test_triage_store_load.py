"""Loading an agent's cases for re-clustering, streamed in chunks (real PostgreSQL): the same
rows, order and vectors as one query, at any chunk size; question vectors only for the cases
asked about; which agents are due for re-clustering."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import numpy as np
import pytest

from evalloop.adapters.triage_store import (
    CaseRow,
    agents_due,
    load_recluster_input,
    question_vectors,
    set_question_embeddings,
    upsert_cases,
)

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
MODEL = "hashing:4"


def _unit(i: int) -> np.ndarray:
    v = np.array([1.0, i, i * i % 5, -1.0], dtype=np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def _case(i: int, agent: str = "a", *, days: float = 0.0, model: str = MODEL) -> CaseRow:
    return CaseRow(
        case_id=uuid.UUID(int=i), agent_id=agent,
        occurred_at=T0 + timedelta(minutes=i) - timedelta(days=days), confidence=0.5 + i / 100,
        signals=["thumbs_down"], evidence_event_ids=[uuid.UUID(int=1000 + j) for j in range(i % 3)],
        question=f"question {i}" if i % 4 else None, answer="an answer", comment="wrong",
        expected_answer=None, text_hash=f"h{i}", embedding_model=model, embedding=_unit(i),
        cluster_id=f"c{i % 2}" if i % 3 else None,
    )


async def _store(pool: asyncpg.Pool, rows: list[CaseRow]) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await upsert_cases(conn, rows)


@pytest.mark.parametrize("chunk", [1, 2, 3, 7, 2000])
async def test_streamed_load_is_the_whole_window_newest_first(
    pool: asyncpg.Pool, chunk: int
) -> None:
    await _store(pool, [_case(i) for i in range(1, 8)]
                 + [_case(20, days=40),                  # outside the 30-day window
                    _case(21, model="other:4"),          # another model's vector
                    _case(22, agent="b")])               # another agent
    async with pool.acquire() as conn:
        data = await load_recluster_input(conn, "a", model=MODEL, window_days=30, limit=6,
                                          chunk=chunk)
    # the 6 newest of cases 1..7 (newest first): 7, 6, 5, 4, 3, 2
    assert data.case_ids == [uuid.UUID(int=i) for i in (7, 6, 5, 4, 3, 2)]
    assert len(data) == 6
    assert data.cluster_ids == ["c1", None, "c1", "c0", None, "c0"]
    assert data.questions == ["question 7", "question 6", "question 5", None, "question 3",
                              "question 2"]
    assert data.confidences == [0.5 + i / 100 for i in (7, 6, 5, 4, 3, 2)]
    assert data.evidence == [1, 1, 2, 1, 1, 2]  # no evidence counts as one
    assert data.occurred_at == [T0 + timedelta(minutes=i) for i in (7, 6, 5, 4, 3, 2)]
    assert data.embeddings.dtype == np.float32
    assert np.array_equal(data.embeddings, np.stack([_unit(i) for i in (7, 6, 5, 4, 3, 2)]))


async def test_no_cases_and_question_vectors(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn:
        empty = await load_recluster_input(conn, "nobody", model=MODEL, window_days=30,
                                           limit=10, chunk=2)
    assert len(empty) == 0 and empty.embeddings.shape == (0, 1)

    await _store(pool, [_case(i) for i in range(1, 4)])
    ids = [uuid.UUID(int=i) for i in range(1, 4)]
    async with pool.acquire() as conn:
        await set_question_embeddings(conn, ids[:1], np.array([[0.0, 1.0, 0.0, 0.0]]))
        await set_question_embeddings(conn, ids[1:2], np.array([[1.0, 0.0]]))  # wrong size
        got = await question_vectors(conn, ids, 4)
    assert list(got) == [ids[0]]  # case 2's vector has 2 values, case 3 has none
    assert got[ids[0]].tolist() == [0.0, 1.0, 0.0, 0.0]


async def test_agents_due_by_count_and_share_of_clustered(pool: asyncpg.Pool) -> None:
    await pool.execute(
        "INSERT INTO triage_agents (agent_id, new_cases, last_reclustered_at) VALUES "
        "('small', 200, now()), ('big', 200, now()), ('bigger', 2000, now()), "
        "('quiet', 0, now()), ('old', 1, now() - interval '1 hour')")
    await pool.execute(
        "INSERT INTO clusters (agent_id, cluster_id, size, centroid) VALUES "
        "('small', 'c1', 1500, '{1}'), ('small', 'c2', 500, '{1}'), "
        "('big', 'c1', 20000, '{1}'), ('bigger', 'c1', 20000, '{1}')")
    # small: 200 >= max(200, 0.1 x 2,000); big: 200 < 2,000; bigger: 2,000 >= 2,000;
    # old: one new case and its last run older than the interval
    assert await agents_due(pool, every=200, interval_s=300, growth=0.1) == [
        "bigger", "old", "small"]
    assert await agents_due(pool, every=200, interval_s=300) == [
        "big", "bigger", "old", "small"]
