"""PostgreSQL store of the triage service: cases, clusters, per-agent state, the review queue.

Tables: migration 0003 (its docstring explains the columns). Embeddings travel as float32 bytes
(:func:`to_bytes` / :func:`from_bytes`). Writes that a redelivery could repeat are upserts on the
natural key. Per-agent work is serialised across processes by a PostgreSQL advisory lock
(:func:`agent_lock`, :func:`agent_xact_lock`). asyncpg errors become
:class:`~evalloop.errors.StorageError` in the service (``store_errors``).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple
from uuid import UUID

import asyncpg
import numpy as np

from evalloop.adapters.postgres import storage_errors
from evalloop.errors import StorageError

__all__ = [
    "AgentState",
    "CaseRow",
    "ClusterRow",
    "GoldenCase",
    "IncidentRow",
    "QueueRow",
    "ReclusterInput",
    "agent_lock",
    "agent_xact_lock",
    "agents_due",
    "case_chunk_ids",
    "case_details",
    "case_marks",
    "cluster_examples",
    "from_bytes",
    "golden_cases",
    "known_cases",
    "liked_passages",
    "list_clusters",
    "list_queue",
    "load_centroids",
    "load_recluster_input",
    "lock_agent_state",
    "mark_incidents_published",
    "mark_published",
    "question_vectors",
    "queue_incidents",
    "queue_priors",
    "rated_answers",
    "replace_clusters",
    "save_agent_state",
    "set_case_clusters",
    "set_question_embeddings",
    "store_errors",
    "to_bytes",
    "unpublished",
    "upsert_candidates",
    "upsert_cases",
    "upsert_clusters",
    "withdraw_unselected",
]


#: The one driver-error mapping (``evalloop.adapters.postgres.storage_errors``), under the
#: name the triage modules use.
store_errors = storage_errors


def to_bytes(vector: np.ndarray) -> bytes:
    """float32 little-endian bytes of a 1-d vector."""
    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def from_bytes(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    """Stack float32 byte strings into an ``(n, dimension)`` float32 array.

    Raises:
        StorageError: a blob is not ``4 * dimension`` bytes long.
    """
    if not blobs:
        return np.zeros((0, dimension), dtype=np.float32)
    joined = b"".join(blobs)
    if len(joined) != 4 * dimension * len(blobs):
        raise StorageError(
            f"expected {len(blobs)} embeddings of {dimension} float32 values, got {len(joined)} "
            "bytes"
        )
    return np.frombuffer(joined, dtype="<f4").reshape(len(blobs), dimension).astype(np.float32)


def _lock_key(agent_id: str) -> str:
    return f"evalloop.triage:{agent_id}"


@contextlib.asynccontextmanager
async def agent_lock(conn: asyncpg.Connection, agent_id: str) -> AsyncIterator[None]:
    """Hold the agent's session advisory lock on ``conn`` for the block (re-clustering)."""
    await conn.execute("SELECT pg_advisory_lock(hashtextextended($1, 0))", _lock_key(agent_id))
    try:
        yield
    finally:
        await conn.execute(
            "SELECT pg_advisory_unlock(hashtextextended($1, 0))", _lock_key(agent_id)
        )


async def agent_xact_lock(conn: asyncpg.Connection, agent_id: str) -> None:
    """Take the agent's advisory lock until the current transaction ends (online ingest)."""
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", _lock_key(agent_id)
    )


# --------------------------------------------------------------------------- cases


@dataclass(frozen=True, slots=True)
class CaseRow:
    """One ``triage_cases`` row to upsert (``embedding`` None: keep the stored one)."""

    case_id: UUID
    agent_id: str
    occurred_at: datetime
    confidence: float
    signals: list[str]
    evidence_event_ids: list[UUID]
    question: str | None
    answer: str | None
    comment: str | None
    expected_answer: str | None
    text_hash: str
    embedding_model: str
    embedding: np.ndarray | None
    cluster_id: str | None


async def known_cases(
    conn: asyncpg.Connection, case_ids: Sequence[UUID]
) -> dict[UUID, tuple[str, str | None]]:
    """``case_id -> (text_hash, cluster_id)`` of the given cases already stored."""
    rows = await conn.fetch(
        "SELECT case_id, text_hash, cluster_id FROM triage_cases WHERE case_id = ANY($1::uuid[])",
        list(case_ids),
    )
    return {r["case_id"]: (r["text_hash"], r["cluster_id"]) for r in rows}


_CASE_COLS = (
    "case_id", "agent_id", "occurred_at", "confidence", "signals", "evidence_event_ids",
    "question", "answer", "comment", "expected_answer", "text_hash", "embedding_model",
    "dimension", "embedding", "cluster_id",
)


async def upsert_cases(conn: asyncpg.Connection, rows: Sequence[CaseRow]) -> None:
    """Insert or update cases (COPY into a temporary table, then one upsert).

    A row whose ``embedding`` is None updates only the ranking fields (confidence, signals,
    evidence, texts, expected answer) of an existing case; otherwise the embedding, its hash
    and model are replaced too and ``question_embedding`` is cleared. Must run in a
    transaction.
    """
    if not rows:
        return
    await conn.execute(
        "CREATE TEMP TABLE IF NOT EXISTS triage_cases_in "
        "(LIKE triage_cases INCLUDING DEFAULTS) ON COMMIT DELETE ROWS"
    )
    await conn.copy_records_to_table(
        "triage_cases_in", columns=list(_CASE_COLS),
        records=[
            (r.case_id, r.agent_id, r.occurred_at, r.confidence, r.signals, r.evidence_event_ids,
             r.question, r.answer, r.comment, r.expected_answer, r.text_hash, r.embedding_model,
             int(r.embedding.shape[0]) if r.embedding is not None else 1,
             to_bytes(r.embedding) if r.embedding is not None else b"", r.cluster_id)
            for r in rows
        ],
    )
    cols = ", ".join(_CASE_COLS)
    await conn.execute(
        f"""
        INSERT INTO triage_cases ({cols}) SELECT {cols} FROM triage_cases_in
        WHERE embedding <> ''::bytea
        ON CONFLICT (case_id) DO UPDATE SET
            occurred_at = EXCLUDED.occurred_at, confidence = EXCLUDED.confidence,
            signals = EXCLUDED.signals, evidence_event_ids = EXCLUDED.evidence_event_ids,
            question = EXCLUDED.question, answer = EXCLUDED.answer, comment = EXCLUDED.comment,
            expected_answer = EXCLUDED.expected_answer, text_hash = EXCLUDED.text_hash,
            embedding_model = EXCLUDED.embedding_model, dimension = EXCLUDED.dimension,
            embedding = EXCLUDED.embedding, question_embedding = NULL,
            cluster_id = COALESCE(triage_cases.cluster_id, EXCLUDED.cluster_id),
            updated_at = now()
        """
    )
    await conn.execute(
        """
        UPDATE triage_cases t SET
            occurred_at = i.occurred_at, confidence = i.confidence, signals = i.signals,
            evidence_event_ids = i.evidence_event_ids, question = i.question, answer = i.answer,
            comment = i.comment, expected_answer = i.expected_answer, updated_at = now()
        FROM triage_cases_in i
        WHERE i.embedding = ''::bytea AND t.case_id = i.case_id
          AND (t.confidence, t.evidence_event_ids, t.expected_answer, t.signals)
              IS DISTINCT FROM (i.confidence, i.evidence_event_ids, i.expected_answer, i.signals)
        """
    )


@dataclass(frozen=True, slots=True)
class ReclusterInput:
    """An agent's recent cases, newest first (arrays aligned by row).

    Only what re-clustering and ranking read of every case; the rest (answers, comments,
    cached question vectors) is read for the few shortlisted cases (:func:`case_details`,
    :func:`question_vectors`).

    Attributes:
        case_ids, cluster_ids, questions, confidences, evidence, occurred_at: per case.
        embeddings: ``(n, d)`` float32 unit vectors.
    """

    case_ids: list[UUID]
    cluster_ids: list[str | None]
    questions: list[str | None]
    confidences: list[float]
    evidence: list[int]
    occurred_at: list[datetime]
    embeddings: np.ndarray

    def __len__(self) -> int:
        """Number of cases."""
        return len(self.case_ids)


#: Rows per fetch when an agent's cases are streamed (bounds the driver's buffered rows).
LOAD_CHUNK = 2000

_RECLUSTER_WHERE = """
        FROM triage_cases
        WHERE agent_id = $1 AND embedding_model = $2
          AND occurred_at >= (SELECT max(occurred_at) FROM triage_cases WHERE agent_id = $1)
                             - make_interval(days => $3)
"""


async def load_recluster_input(
    conn: asyncpg.Connection, agent_id: str, *, model: str, window_days: int, limit: int,
    chunk: int = LOAD_CHUNK,
) -> ReclusterInput:
    """The agent's cases embedded by ``model`` within ``window_days`` of its newest case (event
    time), newest first, at most ``limit``.

    Streamed with a server-side cursor ``chunk`` rows at a time, each chunk's vectors copied
    into one preallocated ``(n, d)`` float32 array: the driver never holds more than one
    chunk of rows, and the vectors exist once (``docs/operations.md#soak``).

    Raises:
        StorageError: a stored embedding does not have the dimension of the others.
    """
    async with conn.transaction(isolation="repeatable_read", readonly=True):
        n, dim = await conn.fetchrow(
            f"SELECT count(*)::int, max(dimension) FROM (SELECT dimension {_RECLUSTER_WHERE} "
            "ORDER BY occurred_at DESC, case_id LIMIT $4) AS c",
            agent_id, model, window_days, limit,
        )
        out = ReclusterInput([], [], [], [], [], [],
                             np.empty((n, dim or 1), dtype=np.float32))
        cur = await conn.cursor(
            f"""
            SELECT case_id, cluster_id, question, confidence,
                   cardinality(evidence_event_ids) AS evidence, occurred_at, dimension,
                   embedding
            {_RECLUSTER_WHERE}
            ORDER BY occurred_at DESC, case_id
            LIMIT $4
            """,
            agent_id, model, window_days, limit,
        )
        row = 0
        while row < n:
            rows = await cur.fetch(min(chunk, n - row))
            if not rows:
                break
            for r in rows:
                out.case_ids.append(r["case_id"])
                out.cluster_ids.append(r["cluster_id"])
                out.questions.append(r["question"])
                out.confidences.append(r["confidence"])
                out.evidence.append(r["evidence"] or 1)
                out.occurred_at.append(r["occurred_at"])
            out.embeddings[row:row + len(rows)] = from_bytes([r["embedding"] for r in rows], dim)
            row += len(rows)
    if row != n:  # cannot happen in one repeatable-read snapshot; never return junk rows
        raise StorageError(f"expected {n} cases of {agent_id} in one snapshot, read {row}")
    return out


async def question_vectors(
    conn: asyncpg.Connection, case_ids: Sequence[UUID], dimension: int
) -> dict[UUID, np.ndarray]:
    """``case_id -> stored question vector`` of the given cases that have a valid one (a
    vector of another dimension, e.g. from another model, counts as none)."""
    rows = await conn.fetch(
        "SELECT case_id, question_embedding FROM triage_cases "
        "WHERE case_id = ANY($1::uuid[]) AND octet_length(question_embedding) = $2",
        list(case_ids), 4 * dimension,
    )
    return {r["case_id"]: np.frombuffer(r["question_embedding"], dtype="<f4").astype(np.float32)
            for r in rows}


async def set_case_clusters(
    conn: asyncpg.Connection, case_ids: Sequence[UUID], cluster_ids: Sequence[str]
) -> None:
    """Point each case at its (new) cluster."""
    await conn.execute(
        """
        UPDATE triage_cases t SET cluster_id = u.cluster_id
        FROM unnest($1::uuid[], $2::text[]) AS u(case_id, cluster_id)
        WHERE t.case_id = u.case_id AND t.cluster_id IS DISTINCT FROM u.cluster_id
        """,
        list(case_ids), list(cluster_ids),
    )


async def set_question_embeddings(
    conn: asyncpg.Connection, case_ids: Sequence[UUID], vectors: np.ndarray
) -> None:
    """Store the question embeddings of the given cases (cache for near-duplicate checks)."""
    await conn.execute(
        """
        UPDATE triage_cases t SET question_embedding = u.v
        FROM unnest($1::uuid[], $2::bytea[]) AS u(case_id, v) WHERE t.case_id = u.case_id
        """,
        list(case_ids), [to_bytes(v) for v in vectors],
    )


async def case_details(conn: asyncpg.Connection, case_ids: Sequence[UUID]) -> dict[UUID, Any]:
    """``case_id -> row`` with question, answer, expected_answer and evidence_event_ids."""
    rows = await conn.fetch(
        "SELECT case_id, question, answer, expected_answer, evidence_event_ids FROM triage_cases "
        "WHERE case_id = ANY($1::uuid[])", list(case_ids),
    )
    return {r["case_id"]: r for r in rows}


# --------------------------------------------------------------------------- ranking evidence

_DIRECTION = """CASE WHEN x.payload->>'score' IS NOT NULL THEN
                     CASE WHEN (x.payload->>'score')::int <= 2 THEN -1
                          WHEN (x.payload->>'score')::int >= 4 THEN 1 ELSE 0 END
                     WHEN x.payload->>'thumbs' = 'down' THEN -1
                     WHEN x.payload->>'thumbs' = 'up' THEN 1 ELSE 0 END"""
_LOOSE = "btrim(regexp_replace(lower({}), '[^a-z0-9]+', ' ', 'g'))"


async def case_marks(
    conn: asyncpg.Connection, case_ids: Sequence[UUID]
) -> dict[UUID, list[tuple[str, dict[str, Any]]]]:
    """``case_id -> [(event_type, fields)]`` of every evidence event of the given cases, the
    fields a mark is read from (``evalloop.core.judgements.mark_of``)."""
    rows = await conn.fetch(
        """
        SELECT t.case_id, e.event_type,
               jsonb_build_object('score', e.payload->'score', 'thumbs', e.payload->'thumbs',
                                  'severity', e.payload->'severity',
                                  'requested_by', e.payload->'requested_by',
                                  'abandoned', e.payload->'abandoned',
                                  'resolved', e.payload->'resolved') AS fields
        FROM triage_cases t CROSS JOIN LATERAL unnest(t.evidence_event_ids) AS ev(event_id)
        JOIN events e ON e.event_id = ev.event_id
        WHERE t.case_id = ANY($1::uuid[])
        ORDER BY t.case_id, e.occurred_at, e.event_id
        """,
        list(case_ids),
    )
    out: dict[UUID, list[tuple[str, dict[str, Any]]]] = {}
    for r in rows:
        out.setdefault(r["case_id"], []).append((r["event_type"], r["fields"]))
    return out


async def rated_answers(
    conn: asyncpg.Connection, agent_id: str, loose_keys: Sequence[str]
) -> list[Any]:
    """The agent's answers to questions whose loose form (lower case, non-alphanumerics as one
    space; ``evalloop.core.expected.loose_question``) is in ``loose_keys``, with their raters'
    marks: ``event_id, question_key, answer, scores (text[]), thumbs (text[])`` per
    ``agent_response`` that has ratings."""
    if not loose_keys:
        return []
    return list(await conn.fetch(
        f"""
        SELECT r.event_id, {_LOOSE.format("r.payload->>'question'")} AS question_key,
               r.payload->>'answer' AS answer,
               array_agg(x.payload->>'score' ORDER BY x.event_id) AS scores,
               array_agg(x.payload->>'thumbs' ORDER BY x.event_id) AS thumbs
        FROM events r
        JOIN events x ON x.agent_id = r.agent_id AND x.conversation_id = r.conversation_id
             AND x.turn_id = r.turn_id AND x.event_type = 'user_rating'
        WHERE r.agent_id = $1 AND r.event_type = 'agent_response'
          AND {_LOOSE.format("r.payload->>'question'")} = ANY($2::text[])
        GROUP BY r.event_id, r.payload->>'question', r.payload->>'answer'
        """,
        agent_id, list(loose_keys),
    ))


async def liked_passages(
    conn: asyncpg.Connection, agent_id: str, *, limit: int = 20_000
) -> list[tuple[str, str]]:
    """``(chunk id, text)`` of every knowledge passage the agent retrieved in a turn whose
    positive ratings outnumber its negative ones, by id, at most ``limit``."""
    rows = await conn.fetch(
        f"""
        SELECT DISTINCT ON (c->>'id') c->>'id' AS id, c->>'text' AS text
        FROM events r CROSS JOIN LATERAL jsonb_array_elements(
                 CASE WHEN jsonb_typeof(r.payload->'context_chunks') = 'array'
                      THEN r.payload->'context_chunks' ELSE '[]'::jsonb END) AS c
        WHERE r.agent_id = $1 AND r.event_type = 'agent_response'
          AND coalesce(c->>'text', '') <> ''
          AND (SELECT coalesce(sum({_DIRECTION}), 0) FROM events x
               WHERE x.agent_id = r.agent_id AND x.conversation_id = r.conversation_id
                 AND x.turn_id = r.turn_id AND x.event_type = 'user_rating') > 0
        ORDER BY c->>'id', r.event_id
        LIMIT $2
        """,
        agent_id, limit,
    )
    return [(r["id"], r["text"]) for r in rows]


async def case_chunk_ids(conn: asyncpg.Connection, case_ids: Sequence[UUID]
                         ) -> dict[UUID, set[str]]:
    """``case_id -> ids of the passages the agent retrieved for that turn``."""
    rows = await conn.fetch(
        """
        SELECT n.case_id, array_agg(c->>'id') AS ids
        FROM negative_cases n CROSS JOIN LATERAL jsonb_array_elements(
                 CASE WHEN jsonb_typeof(n.context_chunks) = 'array' THEN n.context_chunks
                      ELSE '[]'::jsonb END) AS c
        WHERE n.case_id = ANY($1::uuid[]) GROUP BY n.case_id
        """,
        list(case_ids),
    )
    return {r["case_id"]: {i for i in r["ids"] if i} for r in rows}


# --------------------------------------------------------------------------- clusters / state


@dataclass(frozen=True, slots=True)
class ClusterRow:
    """One ``clusters`` row."""

    cluster_id: str
    size: int
    centroid: np.ndarray
    provisional: bool = False
    label: str | None = None
    terms: tuple[str, ...] = ()
    golden_cases: int = 0


async def load_centroids(
    conn: asyncpg.Connection, agent_id: str
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """The agent's clusters as ``(ids, centroids (k, d) float32, sizes (k,) int64)``."""
    rows = await conn.fetch(
        "SELECT cluster_id, size, centroid FROM clusters WHERE agent_id = $1 AND size > 0 "
        "ORDER BY cluster_id", agent_id,
    )
    if not rows:
        return [], np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=np.int64)
    return (
        [r["cluster_id"] for r in rows],
        np.array([r["centroid"] for r in rows], dtype=np.float32),
        np.array([r["size"] for r in rows], dtype=np.int64),
    )


async def upsert_clusters(
    conn: asyncpg.Connection, agent_id: str, rows: Sequence[ClusterRow]
) -> None:
    """Insert new (provisional) clusters and update sizes/centroids of existing ones."""
    await conn.executemany(
        """
        INSERT INTO clusters (agent_id, cluster_id, size, centroid, provisional)
        VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (agent_id, cluster_id) DO UPDATE SET
            size = EXCLUDED.size, centroid = EXCLUDED.centroid, updated_at = now()
        """,
        [(agent_id, r.cluster_id, r.size, r.centroid.tolist(), r.provisional) for r in rows],
    )


async def replace_clusters(
    conn: asyncpg.Connection, agent_id: str, rows: Sequence[ClusterRow]
) -> None:
    """Replace all of the agent's clusters by ``rows`` (after a re-clustering)."""
    await conn.execute("DELETE FROM clusters WHERE agent_id = $1", agent_id)
    await conn.copy_records_to_table(
        "clusters",
        columns=["agent_id", "cluster_id", "label", "terms", "size", "centroid", "provisional",
                 "golden_cases"],
        records=[(agent_id, r.cluster_id, r.label, list(r.terms), r.size, r.centroid.tolist(),
                  r.provisional, r.golden_cases) for r in rows],
    )


@dataclass
class AgentState:
    """``triage_agents`` row: new cases since the last re-clustering, the cluster-id sequence."""

    agent_id: str
    new_cases: int
    next_cluster_seq: int
    reclusters: int
    last_reclustered_at: datetime | None

    def fresh_ids(self) -> Iterator[str]:
        """Yield unused cluster ids ``c<seq>`` (advancing ``next_cluster_seq``)."""
        while True:
            seq = self.next_cluster_seq
            self.next_cluster_seq += 1
            yield f"c{seq}"


async def lock_agent_state(conn: asyncpg.Connection, agent_id: str) -> AgentState:
    """Create (if needed) and row-lock the agent's state until the transaction ends."""
    await conn.execute(
        "INSERT INTO triage_agents (agent_id) VALUES ($1) ON CONFLICT DO NOTHING", agent_id
    )
    r = await conn.fetchrow(
        "SELECT * FROM triage_agents WHERE agent_id = $1 FOR UPDATE", agent_id
    )
    assert r is not None
    return AgentState(agent_id, r["new_cases"], r["next_cluster_seq"], r["reclusters"],
                      r["last_reclustered_at"])


async def save_agent_state(
    conn: asyncpg.Connection, state: AgentState, *, reclustered: bool = False
) -> None:
    """Write ``state`` back; ``reclustered``: also count a run and stamp ``now()``."""
    await conn.execute(
        """
        UPDATE triage_agents SET new_cases = $2, next_cluster_seq = $3,
            reclusters = reclusters + $4::int,
            last_reclustered_at = CASE WHEN $4::int = 1 THEN now() ELSE last_reclustered_at END
        WHERE agent_id = $1
        """,
        state.agent_id, state.new_cases, state.next_cluster_seq, int(reclustered),
    )


async def agents_due(
    pool: asyncpg.Pool, *, every: int, interval_s: float, growth: float = 0.0
) -> list[str]:
    """Agents with new cases whose re-clustering is due: at least ``max(every, growth *
    clustered)`` new cases (``clustered``: the sum of the agent's cluster sizes;
    ``docs/review.md#re-clustering``), or any new case and no run within ``interval_s``
    seconds."""
    with store_errors("listing agents due for re-clustering"):
        rows = await pool.fetch(
            """
            SELECT a.agent_id FROM triage_agents a
            LEFT JOIN (SELECT agent_id, sum(size) AS clustered FROM clusters
                       GROUP BY agent_id) c ON c.agent_id = a.agent_id
            WHERE a.new_cases >= greatest($1::float8, $3::float8 * coalesce(c.clustered, 0))
               OR (a.new_cases > 0 AND (a.last_reclustered_at IS NULL
                   OR a.last_reclustered_at < now() - make_interval(secs => $2)))
            ORDER BY a.agent_id
            """,
            every, interval_s, growth,
        )
    return [r["agent_id"] for r in rows]


# --------------------------------------------------------------------------- golden set


@dataclass(frozen=True, slots=True)
class GoldenCase:
    """A case of the agent's current golden set(s) (latest version of each set)."""

    case_id: str
    question: str
    expected_answer: str | None


async def golden_cases(conn: asyncpg.Connection, agent_id: str) -> list[GoldenCase]:
    """Cases of the latest version of each of the agent's golden sets (migration 0004).

    Returns an empty list when the golden-set tables do not exist (yet) or hold nothing.
    """
    exists = await conn.fetchval(
        "SELECT to_regclass('golden_cases') IS NOT NULL AND to_regclass('golden_sets') IS NOT NULL"
    )
    if not exists:
        return []
    rows = await conn.fetch(
        """
        SELECT gc.case_id, gc.question, gc.expected_answer
        FROM golden_sets s
        JOIN golden_set_versions v ON v.agent_id = s.agent_id
             AND v.golden_set_id = s.golden_set_id AND v.version = s.latest_version
        JOIN golden_cases gc ON gc.version_id = v.version_id
        WHERE s.agent_id = $1 AND gc.question IS NOT NULL
        ORDER BY s.golden_set_id, gc.position
        """,
        agent_id,
    )
    return [GoldenCase(str(r["case_id"]), r["question"], r["expected_answer"]) for r in rows]


# --------------------------------------------------------------------------- review queue


@dataclass(frozen=True, slots=True)
class QueueRow:
    """A candidate to upsert into ``review_queue``."""

    candidate_id: UUID
    agent_id: str
    question_key: str
    case_id: UUID
    cluster_id: str
    cluster_label: str
    question: str
    answer_given: str | None
    expected_answer: str | None
    evidence_event_ids: list[UUID]
    confidence: float
    confidence_parts: dict[str, float]
    question_embedding: np.ndarray | None
    expected_answer_source: str | None = None
    expected_answer_ref: str | None = None
    explanation: str | None = None
    rating_profile: dict[str, Any] | None = None


async def queue_priors(conn: asyncpg.Connection, agent_id: str) -> list[Any]:
    """Every queue row of the agent: candidate_id, question_key, question, question_embedding,
    status."""
    return list(await conn.fetch(
        "SELECT candidate_id, question_key, question, question_embedding, status "
        "FROM review_queue WHERE agent_id = $1 ORDER BY proposed_at, candidate_id", agent_id,
    ))


async def upsert_candidates(conn: asyncpg.Connection, rows: Sequence[QueueRow]) -> list[UUID]:
    """Insert new candidates; refresh pending ones and bring back withdrawn ones.

    A pending row whose content (cluster, label, answers, evidence, confidence, explanation,
    proposed expected answer) is unchanged is left alone; a changed one gets the new content.
    Its ``row_version`` moves only when what a reviewer decides on changed (the turn, the
    answer given, the proposed expected answer, the evidence): a reviewer who loaded the old
    one then gets a conflict (migration 0007); new scores or a new cluster label alone do not
    invalidate a decision in progress. A ``withdrawn`` row the ranking selected again becomes
    ``pending``. Rows a reviewer decided (confirmed / edited / rejected) are never touched.

    Returns:
        candidate ids that were inserted by this call (the ones to announce).
    """
    new: list[UUID] = []
    for r in rows:
        inserted = await conn.fetchval(
            """
            INSERT INTO review_queue (candidate_id, agent_id, question_key, case_id, cluster_id,
                cluster_label, question, answer_given, expected_answer, evidence_event_ids,
                confidence, confidence_parts, question_embedding, expected_answer_source,
                expected_answer_ref, explanation, rating_profile)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                    coalesce($17, '{}'::jsonb))
            ON CONFLICT (agent_id, question_key) DO UPDATE SET
                case_id = EXCLUDED.case_id, cluster_id = EXCLUDED.cluster_id,
                cluster_label = EXCLUDED.cluster_label, answer_given = EXCLUDED.answer_given,
                expected_answer = EXCLUDED.expected_answer,
                evidence_event_ids = EXCLUDED.evidence_event_ids,
                confidence = EXCLUDED.confidence, confidence_parts = EXCLUDED.confidence_parts,
                question_embedding = EXCLUDED.question_embedding,
                expected_answer_source = EXCLUDED.expected_answer_source,
                expected_answer_ref = EXCLUDED.expected_answer_ref,
                explanation = EXCLUDED.explanation, rating_profile = EXCLUDED.rating_profile,
                status = 'pending', withdrawn_reason = NULL,
                row_version = review_queue.row_version + CASE
                    WHEN review_queue.status = 'withdrawn' OR (
                        review_queue.case_id, review_queue.answer_given,
                        review_queue.expected_answer, review_queue.expected_answer_source,
                        review_queue.evidence_event_ids)
                        IS DISTINCT FROM (EXCLUDED.case_id, EXCLUDED.answer_given,
                        EXCLUDED.expected_answer, EXCLUDED.expected_answer_source,
                        EXCLUDED.evidence_event_ids) THEN 1 ELSE 0 END,
                updated_at = now()
            WHERE review_queue.status = 'withdrawn' OR (review_queue.status = 'pending' AND (
                review_queue.case_id, review_queue.cluster_id, review_queue.cluster_label,
                review_queue.answer_given, review_queue.expected_answer,
                review_queue.evidence_event_ids, review_queue.confidence,
                review_queue.explanation, review_queue.expected_answer_source)
                IS DISTINCT FROM (EXCLUDED.case_id, EXCLUDED.cluster_id, EXCLUDED.cluster_label,
                EXCLUDED.answer_given, EXCLUDED.expected_answer, EXCLUDED.evidence_event_ids,
                EXCLUDED.confidence, EXCLUDED.explanation, EXCLUDED.expected_answer_source))
            RETURNING (xmax = 0)
            """,
            r.candidate_id, r.agent_id, r.question_key, r.case_id, r.cluster_id, r.cluster_label,
            r.question, r.answer_given, r.expected_answer, r.evidence_event_ids, r.confidence,
            r.confidence_parts,
            to_bytes(r.question_embedding) if r.question_embedding is not None else None,
            r.expected_answer_source, r.expected_answer_ref, r.explanation, r.rating_profile,
        )
        if inserted:
            new.append(r.candidate_id)
    return new


async def withdraw_unselected(conn: asyncpg.Connection, agent_id: str,
                              keep: Sequence[UUID], reason: str) -> int:
    """Withdraw the agent's pending candidates a re-clustering did not select (their cluster
    is gone, the cap of their cluster is taken by better ones, or they left the window), so
    no pending row points at a dead cluster and the per-cluster cap holds. Returns how many.
    """
    result = await conn.execute(
        "UPDATE review_queue SET status = 'withdrawn', withdrawn_reason = $3, "
        "row_version = row_version + 1, updated_at = now() "
        "WHERE agent_id = $1 AND status = 'pending' AND NOT candidate_id = ANY($2::uuid[])",
        agent_id, list(keep), reason)
    return int(result.split()[-1])


async def unpublished(conn: asyncpg.Connection, agent_id: str | None = None) -> list[Any]:
    """Queue rows whose ``golden.candidate.proposed.v1`` was not acked yet, oldest first."""
    return list(await conn.fetch(
        """
        SELECT candidate_id, agent_id, cluster_id, cluster_label, question, answer_given,
               expected_answer, evidence_event_ids, confidence, proposed_at
        FROM review_queue
        WHERE published_at IS NULL AND ($1::text IS NULL OR agent_id = $1)
        ORDER BY proposed_at, candidate_id
        """,
        agent_id,
    ))


async def mark_published(conn: asyncpg.Connection, candidate_ids: Sequence[UUID]) -> None:
    """Stamp ``published_at`` on the given rows."""
    await conn.execute(
        "UPDATE review_queue SET published_at = now() WHERE candidate_id = ANY($1::uuid[])",
        list(candidate_ids),
    )


async def list_queue(
    pool: asyncpg.Pool, *, agent_id: str | None = None, status: str | None = "pending",
    limit: int = 50,
) -> list[Any]:
    """Queue rows joined with their cluster (label, size, golden coverage), for display.

    Ordered by agent, cluster size (largest first), cluster, confidence (highest first);
    ``status`` None = every status; ``limit`` caps the number of rows.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("listing the review queue"):
        return list(await pool.fetch(
            """
            SELECT q.agent_id, q.cluster_id, COALESCE(c.label, q.cluster_label) AS cluster_label,
                   c.size AS cluster_size, COALESCE(c.covered_by_golden, false) AS covered,
                   q.candidate_id, q.question, q.answer_given, q.expected_answer, q.confidence,
                   cardinality(q.evidence_event_ids) AS evidence_count, q.status, q.proposed_at,
                   q.expected_answer_source, q.explanation, q.row_version
            FROM review_queue q
            LEFT JOIN clusters c ON c.agent_id = q.agent_id AND c.cluster_id = q.cluster_id
            WHERE ($1::text IS NULL OR q.agent_id = $1) AND ($2::text IS NULL OR q.status = $2)
            ORDER BY q.agent_id, c.size DESC NULLS LAST, q.cluster_id, q.confidence DESC,
                     q.candidate_id
            LIMIT $3
            """,
            agent_id, status, limit,
        ))


async def list_clusters(pool: asyncpg.Pool, agent_id: str | None = None) -> list[Any]:
    """Every cluster (of one agent or all): agent, id, label, terms, size, provisional, golden
    cases and coverage; by agent, then size (largest first).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("listing clusters"):
        return list(await pool.fetch(
            """
            SELECT agent_id, cluster_id, label, terms, size, provisional, golden_cases,
                   covered_by_golden, updated_at
            FROM clusters WHERE $1::text IS NULL OR agent_id = $1
            ORDER BY agent_id, size DESC, cluster_id
            """,
            agent_id,
        ))


async def cluster_examples(pool: asyncpg.Pool, agent_id: str, per_cluster: int = 3
                           ) -> dict[str, list[str]]:
    """Up to ``per_cluster`` DIFFERENT example questions of each cluster of ``agent_id`` (the
    most confident, then newest cases; a question asked again -- same text, case and
    surrounding spaces aside -- is shown once), as ``{cluster_id: [question, ...]}``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("reading cluster examples"):
        rows = await pool.fetch(
            """
            SELECT cluster_id, question FROM (
                SELECT cluster_id, question, row_number() OVER (
                    PARTITION BY cluster_id ORDER BY confidence DESC, occurred_at DESC, case_id
                ) AS n
                FROM (
                    SELECT DISTINCT ON (cluster_id, lower(btrim(question)))
                           cluster_id, question, confidence, occurred_at, case_id
                    FROM triage_cases
                    WHERE agent_id = $1 AND cluster_id IS NOT NULL AND question IS NOT NULL
                    ORDER BY cluster_id, lower(btrim(question)), confidence DESC,
                             occurred_at DESC, case_id
                ) distinct_questions
            ) ranked WHERE n <= $2 ORDER BY cluster_id, n
            """,
            agent_id, per_cluster,
        )
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["cluster_id"], []).append(r["question"])
    return out


# --------------------------------------------------------------------------- incidents


class IncidentRow(NamedTuple):
    """A ``review_queue`` row for an escalation incident (``services.evaluator.incidents``)."""

    candidate_id: UUID
    agent_id: str
    question_key: str
    case_id: UUID
    cluster_id: str
    cluster_label: str
    question: str
    answer_given: str | None
    evidence_event_ids: list[UUID]
    confidence: float
    confidence_parts: dict[str, Any]
    proposed_at: datetime


async def queue_incidents(pool: asyncpg.Pool, rows: Sequence[IncidentRow]) -> set[UUID]:
    """Insert incident candidates (idempotent on the id and on ``(agent_id, question_key)``)
    and return the ids of ``rows`` still to be announced (new, or queued earlier but never
    published: the ``published_at`` outbox).

    Raises:
        StorageError: PostgreSQL failed.
    """
    if not rows:
        return set()
    with store_errors("queueing incident candidates"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.executemany(
                """
                INSERT INTO review_queue (candidate_id, agent_id, question_key, case_id,
                                          cluster_id, cluster_label, question, answer_given,
                                          evidence_event_ids, confidence, confidence_parts,
                                          proposed_at)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
                ON CONFLICT DO NOTHING
                """,
                [tuple(r) for r in rows],
            )
            pending = await conn.fetch(
                "SELECT candidate_id FROM review_queue"
                " WHERE candidate_id = ANY($1::uuid[]) AND published_at IS NULL",
                [r.candidate_id for r in rows],
            )
    return {r["candidate_id"] for r in pending}


async def mark_incidents_published(pool: asyncpg.Pool, candidate_ids: Sequence[UUID]) -> None:
    """Stamp ``published_at`` on incident candidates not yet stamped.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("marking incident candidates published"):
        await pool.execute(
            "UPDATE review_queue SET published_at = now()"
            " WHERE candidate_id = ANY($1::uuid[]) AND published_at IS NULL",
            list(candidate_ids),
        )
