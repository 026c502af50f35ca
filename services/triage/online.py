"""Online path of the triage service: embed new or changed negative cases and assign clusters.

A case is (re-)embedded only when the text it is embedded from (question, comment, answer;
:func:`evalloop.core.clustering.case_text`) or the embedding model changed: ``text_hash`` =
SHA-256 of ``model name + NUL + text``. A redelivered case therefore costs one lookup. A case
that had no cluster joins the nearest one online (:func:`evalloop.core.clustering.assign_online`)
or starts a provisional cluster ``c<seq>``; a changed case keeps its cluster until the next
re-clustering. Everything for one agent is written in one transaction under the agent's
advisory lock, so the re-clustering of the same agent (another process) cannot interleave.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import asyncpg
import numpy as np

from evalloop.adapters.embedder import Embedder, embed
from evalloop.adapters.triage_store import (
    CaseRow,
    ClusterRow,
    agent_xact_lock,
    known_cases,
    load_centroids,
    lock_agent_state,
    save_agent_state,
    store_errors,
    upsert_cases,
    upsert_clusters,
)
from evalloop.core.clustering import assign_online, case_text
from evalloop.events import NegativeCase

__all__ = ["IngestOutcome", "ingest_cases", "text_hash"]


def text_hash(model: str, text: str) -> str:
    """SHA-256 hex of ``model + NUL + text`` (a model change re-embeds every case)."""
    return hashlib.sha256(f"{model}\0{text}".encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class IngestOutcome:
    """What one agent's share of a batch did.

    Attributes:
        embedded: cases (re-)embedded (new or changed text).
        assigned: of those, cases that joined an existing cluster online.
        provisional: provisional clusters started.
        unchanged: cases whose text was already stored (redelivery or a metadata-only update).
        new_cases: the agent's count of new cases since its last re-clustering, after this.
        clustered: the agent's cases in clusters after this (the sum of its cluster sizes).
    """

    embedded: int
    assigned: int
    provisional: int
    unchanged: int
    new_cases: int
    clustered: int = 0

    def recluster_due(self, every: int, growth: float) -> bool:
        """Whether this agent's re-clustering is due by count: ``new_cases >= max(every,
        growth * clustered)`` (``docs/review.md#re-clustering``)."""
        return self.new_cases >= max(every, growth * self.clustered)


async def ingest_cases(
    pool: asyncpg.Pool,
    embedder: Embedder,
    agent_id: str,
    cases: list[NegativeCase],
    *,
    min_similarity: float,
) -> IngestOutcome:
    """Store one agent's cases, embedding and assigning the new or changed ones.

    Args:
        pool: asyncpg pool.
        embedder: the (shared) embedder.
        agent_id: the agent all ``cases`` belong to.
        cases: distinct cases (one per ``case_id``).
        min_similarity: online join threshold (``1 - settings.triage.cluster_threshold``).

    Returns:
        :class:`IngestOutcome`.

    Raises:
        EmbeddingError: the embedder failed (nothing was written).
        StorageError: PostgreSQL failed (the transaction rolled back).
    """
    texts = [case_text(c.question, c.answer, c.comment) for c in cases]
    hashes = [text_hash(embedder.name, t) for t in texts]
    ids = [c.case_id for c in cases]
    with store_errors(f"reading triage cases of {agent_id}"):
        async with pool.acquire() as conn:
            known = await known_cases(conn, ids)
    todo = [i for i, c in enumerate(cases) if known.get(c.case_id, ("", None))[0] != hashes[i]]
    vectors = await embed(embedder, [texts[i] for i in todo])  # outside any transaction
    vec_of = dict(zip(todo, vectors, strict=True))

    with store_errors(f"storing triage cases of {agent_id}"):
        async with pool.acquire() as conn, conn.transaction():
            await agent_xact_lock(conn, agent_id)
            state = await lock_agent_state(conn, agent_id)
            known = await known_cases(conn, ids)  # again, under the lock
            fresh = [i for i in todo if known.get(ids[i], ("", None))[0] != hashes[i]]
            unassigned = [i for i in fresh if known.get(ids[i], ("", None))[1] is None]
            cluster_ids, cents, sizes = await load_centroids(conn, agent_id)
            if cents.shape[0] and cents.shape[1] != embedder.dimension:
                cluster_ids, cents, sizes = [], cents[:0, :0], sizes[:0]  # other model's
            k = len(cluster_ids)
            assigned_to: dict[int, str] = {}
            touched: list[ClusterRow] = []
            n_joined = 0
            clustered = int(np.sum(sizes)) if k else 0
            if unassigned:
                res = assign_online(
                    np.stack([vec_of[i] for i in unassigned]),
                    cents if k else np.zeros((0, embedder.dimension), dtype=np.float32),
                    sizes, min_similarity,
                )
                fresh_ids = state.fresh_ids()
                all_ids = cluster_ids + [next(fresh_ids) for _ in range(res.sizes.shape[0] - k)]
                for i, c in zip(unassigned, res.assignments.tolist(), strict=True):
                    assigned_to[i] = all_ids[c]
                n_joined = int((res.assignments < k).sum())
                clustered = int(res.sizes.sum())
                for c in sorted(set(res.assignments.tolist())):
                    touched.append(ClusterRow(all_ids[c], int(res.sizes[c]), res.centroids[c],
                                              provisional=c >= k))
            rows = [
                CaseRow(
                    case_id=c.case_id, agent_id=agent_id, occurred_at=c.occurred_at,
                    confidence=c.confidence, signals=list(c.signals),
                    evidence_event_ids=list(c.evidence_event_ids), question=c.question,
                    answer=c.answer, comment=c.comment, expected_answer=c.expected_answer,
                    text_hash=hashes[i], embedding_model=embedder.name,
                    embedding=vec_of[i] if i in fresh else None,
                    cluster_id=assigned_to.get(i),
                )
                for i, c in enumerate(cases)
            ]
            await upsert_cases(conn, rows)
            await upsert_clusters(conn, agent_id, touched)
            state.new_cases += len(fresh)
            await save_agent_state(conn, state)
    return IngestOutcome(
        embedded=len(fresh), assigned=n_joined, provisional=len(touched) - sum(
            1 for t in touched if not t.provisional),
        unchanged=len(cases) - len(fresh), new_cases=state.new_cases, clustered=clustered,
    )
