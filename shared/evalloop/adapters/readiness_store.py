"""The readiness verdict's storage (migration 0009): judge scores on ``eval_results``, gate
decisions with every input, deployments, pinned baselines, manual checkpoints, hallucination
claims, and the re-evaluation a CONDITIONAL GO schedules.

Every function takes a pool or a connection (inside the caller's transaction); asyncpg errors
become :class:`evalloop.errors.StorageError` here, in one place.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeAlias
from uuid import UUID

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.core.readiness.checkpoints import CheckpointRecord
from evalloop.core.readiness.hallucination import ClaimFinding
from evalloop.events import ReevalRequested

__all__ = [
    "ABPair",
    "BaselineChoice",
    "CaseText",
    "DecidedRun",
    "Executor",
    "RunCase",
    "RunInfo",
    "ab_pairs",
    "add_checkpoint",
    "case_texts",
    "checkpoint_history",
    "checkpoints",
    "claim_counts",
    "decided_runs",
    "find_baseline",
    "latest_decision",
    "list_claims",
    "load_cases",
    "pin_baseline",
    "record_deployment",
    "reeval_requested_at",
    "run_info",
    "save_claims",
    "save_decision",
    "save_scores",
    "schedule_reeval",
    "unpin_baseline",
]

Executor: TypeAlias = asyncpg.Pool | asyncpg.Connection


def _storage(what: str) -> contextlib.AbstractContextManager[None]:
    return storage_errors(f"readiness: {what}")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """An evaluation run as the gate sees it.

    Attributes:
        run_id, agent_id, golden_set_version_id, job_id: as stored.
        started_at: UTC.
        status: ``passed`` / ``failed`` (the refusal / escalation gate) / ``running`` / ``error``.
        summary: the run's summary JSON.
    """

    run_id: UUID
    agent_id: str | None
    golden_set_version_id: UUID | None
    job_id: UUID | None
    started_at: datetime
    status: str
    summary: dict[str, Any] | None


@dataclass(frozen=True, slots=True)
class RunCase:
    """One case result of a stored run, with its golden case's expectations.

    Attributes:
        case_id, category, question, answer, status: from ``eval_results``.
        should_refuse, should_escalate: the case's expectations.
        gates_failed: names of the gates it failed (``refusal``, ``escalation``).
        retrieved: passage ids the agent said it retrieved (``None``: not said).
        expected_answer, context_chunks, difficulty: from the golden case (when pinned);
            ``context_chunks`` falls back to the ones stored with the result (an eval file's).
        scores, composite, judge: the stored judge scores (empty / ``None`` before judging).
        answered_nothing: the refusal gate failed it as a non-answer (kind ``non_answer``:
            the answer gives none of what the question asks, docs/rules.md#non-answer-check).
    """

    case_id: str
    category: str
    question: str
    answer: str | None
    status: str
    should_refuse: bool
    should_escalate: bool
    gates_failed: tuple[str, ...]
    retrieved: tuple[str, ...] | None
    expected_answer: str | None
    context_chunks: tuple[str, ...]
    difficulty: str | None
    scores: Mapping[str, float | None]
    composite: float | None
    judge: Mapping[str, Any] | None
    answered_nothing: bool = False


async def run_info(db: Executor, run_id: UUID) -> RunInfo | None:
    """The run ``run_id`` (``None`` when unknown).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read run"):
        row = await db.fetchrow(
            "SELECT run_id, agent_id, golden_set_version_id, job_id, started_at, status, summary"
            " FROM eval_runs WHERE run_id = $1", run_id)
    return None if row is None else RunInfo(**dict(row))


async def load_cases(db: Executor, run_id: UUID) -> list[RunCase]:
    """Every case result of ``run_id`` in run order, joined with its golden case.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read results"):
        rows = await db.fetch(
            """
            SELECT r.case_id, r.category, r.input, r.response, r.status, r.should_refuse,
                   r.should_escalate, r.gates, r.retrieved_context, r.scores, r.composite,
                   r.judge, g.expected_answer, g.context_chunks, g.difficulty,
                   r.context_chunks AS run_context_chunks
              FROM eval_results r
              JOIN eval_runs e ON e.run_id = r.run_id
              LEFT JOIN golden_cases g
                ON g.version_id = e.golden_set_version_id AND g.case_id = r.case_id
             WHERE r.run_id = $1
             ORDER BY r.position
            """, run_id)
    return [RunCase(
        case_id=r["case_id"], category=r["category"], question=r["input"],
        answer=r["response"], status=r["status"], should_refuse=r["should_refuse"],
        should_escalate=r["should_escalate"],
        gates_failed=tuple(sorted(k for k, g in (r["gates"] or {}).items()
                                  if not g.get("passed", True))),
        retrieved=None if r["retrieved_context"] is None else tuple(r["retrieved_context"]),
        expected_answer=r["expected_answer"], context_chunks=tuple(
            r["context_chunks"] or r["run_context_chunks"] or ()),
        difficulty=r["difficulty"], scores=r["scores"] or {}, composite=r["composite"],
        judge=r["judge"], answered_nothing=_answered_nothing(r["gates"]),
    ) for r in rows]


def _answered_nothing(gates: Mapping[str, Any] | None) -> bool:
    refusal = (gates or {}).get("refusal") or {}
    return not refusal.get("passed", True) and refusal.get("kind") == "non_answer"


async def save_scores(db: Executor, run_id: UUID,
                      rows: Sequence[tuple[str, Mapping[str, float | None], float | None,
                                           Mapping[str, Any]]]) -> None:
    """Store the judge's scores of a run: ``(case_id, scores, composite, judge)`` per case into
    ``eval_results`` (``judge``: model, prompt version, calibration, reasons, usage).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("store scores"):
        await db.executemany(
            "UPDATE eval_results SET scores = $3, composite = $4, judge = $5"
            " WHERE run_id = $1 AND case_id = $2",
            [(run_id, cid, dict(scores), comp, dict(judge)) for cid, scores, comp, judge in rows])


async def save_claims(db: Executor, run_id: UUID, agent_id: str | None,
                      case_ids: Sequence[str], findings: Sequence[ClaimFinding],
                      judged_at: datetime) -> None:
    """Replace the claims of the cases in ``case_ids`` (every judged case, including those with
    no claim) with ``findings``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("store claims"):
        await db.execute("DELETE FROM hallucination_claims WHERE run_id = $1"
                         " AND case_id = ANY($2::text[])", run_id, list(case_ids))
        await db.executemany(
            """
            INSERT INTO hallucination_claims (run_id, case_id, claim_index, agent_id, claim,
                score, supported, category, reason, nearest_passage_id, nearest_passage,
                correction, passages, judged_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            """,
            [(run_id, f.case_id, f.index, agent_id, f.claim, f.score, f.supported, f.category,
              f.reason, f.nearest_passage_id, f.nearest_passage, f.correction, list(f.passages),
              judged_at) for f in findings])


async def list_claims(db: Executor, *, agent_id: str | None, since: datetime,
                      run_id: UUID | None = None, hallucinated_only: bool = True,
                      limit: int = 1000) -> list[dict[str, Any]]:
    """Stored claims judged at or after ``since`` (newest run first, then case and claim
    order), optionally of one agent or run.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("list claims"):
        rows = await db.fetch(
            """
            SELECT run_id, case_id, claim_index, agent_id, claim, score, supported, category,
                   reason, nearest_passage_id, nearest_passage, correction, passages, judged_at
              FROM hallucination_claims
             WHERE judged_at >= $1 AND ($2::text IS NULL OR agent_id = $2)
               AND ($3::uuid IS NULL OR run_id = $3) AND (NOT $4 OR category IS NOT NULL)
             ORDER BY judged_at DESC, run_id, case_id, claim_index
             LIMIT $5
            """, since, agent_id, run_id, hallucinated_only, limit)
    return [dict(r) for r in rows]


async def save_decision(db: Executor, *, decision_id: UUID, run_id: UUID, agent_id: str | None,
                        decision: str, decided_at: datetime, baseline_run_id: UUID | None,
                        why: Sequence[str], report: Mapping[str, Any],
                        inputs: Mapping[str, Any], reeval_job_id: UUID | None) -> None:
    """Append a gate decision with its report and every input.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("store decision"):
        await db.execute(
            """
            INSERT INTO readiness_decisions (decision_id, run_id, agent_id, decision, decided_at,
                baseline_run_id, why, report, inputs, reeval_job_id)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
            """, decision_id, run_id, agent_id, decision, decided_at, baseline_run_id,
            list(why), dict(report), dict(inputs), reeval_job_id)


async def latest_decision(db: Executor, run_id: UUID) -> dict[str, Any] | None:
    """The newest stored decision of ``run_id`` (all columns), or ``None``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read decision"):
        row = await db.fetchrow(
            "SELECT * FROM readiness_decisions WHERE run_id = $1"
            " ORDER BY decided_at DESC, decision_id LIMIT 1", run_id)
    return None if row is None else dict(row)


async def record_deployment(db: Executor, *, agent_id: str, run_id: UUID, deployed_at: datetime,
                            source: str, event_id: UUID | None = None,
                            recorded_by: str | None = None, note: str | None = None) -> bool:
    """Record that ``run_id``'s configuration of ``agent_id`` was deployed. A repeated
    ``event_id`` is a no-op. Returns whether a row was written.

    Raises:
        StorageError: PostgreSQL failed (e.g. an unknown run).
    """
    with _storage("record deployment"):
        row = await db.fetchval(
            """
            INSERT INTO deployments (deployment_id, agent_id, run_id, deployed_at, source,
                                     event_id, recorded_by, note)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (event_id) DO NOTHING RETURNING 1
            """, uuid.uuid4(), agent_id, run_id, deployed_at, source, event_id, recorded_by,
            note)
    return row is not None


async def pin_baseline(db: Executor, agent_id: str, run_id: UUID, *, pinned_by: str | None,
                       note: str | None = None) -> None:
    """Pin ``run_id`` as ``agent_id``'s baseline (replacing any earlier pin).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("pin baseline"):
        await db.execute(
            """
            INSERT INTO baseline_pins (agent_id, run_id, pinned_at, pinned_by, note)
            VALUES ($1, $2, now(), $3, $4)
            ON CONFLICT (agent_id) DO UPDATE SET run_id = EXCLUDED.run_id,
                pinned_at = EXCLUDED.pinned_at, pinned_by = EXCLUDED.pinned_by,
                note = EXCLUDED.note
            """, agent_id, run_id, pinned_by, note)


async def unpin_baseline(db: Executor, agent_id: str) -> bool:
    """Remove ``agent_id``'s pin; returns whether there was one.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("unpin baseline"):
        row = await db.fetchval(
            "DELETE FROM baseline_pins WHERE agent_id = $1 AND run_id IS NOT NULL RETURNING 1",
            agent_id)
    return row is not None


@dataclass(frozen=True, slots=True)
class BaselineChoice:
    """The baseline of a comparison: ``run_id`` and ``how`` it was chosen (``pinned`` or
    ``deployed``), or ``run_id=None`` with ``how`` saying why there is none."""

    run_id: UUID | None
    how: str


async def find_baseline(db: Executor, agent_id: str | None, *, exclude: UUID) -> BaselineChoice:
    """The baseline of ``agent_id`` (``docs/readiness.md#baseline``): the pinned run if any,
    else the most recently deployed run whose newest decision is GO, never ``exclude``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    if agent_id is None:
        return BaselineChoice(None, "the run names no agent")
    with _storage("find baseline"):
        pinned = await db.fetchval(
            "SELECT run_id FROM baseline_pins WHERE agent_id = $1 AND run_id <> $2",
            agent_id, exclude)
        if pinned is not None:
            return BaselineChoice(pinned, "pinned")
        row = await db.fetchval(
            """
            SELECT d.run_id FROM deployments d
             WHERE d.agent_id = $1 AND d.run_id <> $2
               AND (SELECT decision FROM readiness_decisions r WHERE r.run_id = d.run_id
                     ORDER BY r.decided_at DESC, r.decision_id LIMIT 1) = 'GO'
             ORDER BY d.deployed_at DESC LIMIT 1
            """, agent_id, exclude)
    if row is not None:
        return BaselineChoice(row, "deployed")
    return BaselineChoice(None, f"no deployed GO run of agent {agent_id} and no pinned run")


async def add_checkpoint(db: Executor, run_id: UUID, record: CheckpointRecord,
                         sample: Sequence[str] | None = None) -> None:
    """Append a checkpoint verdict (the newest per name counts).

    Raises:
        StorageError: PostgreSQL failed (e.g. an unknown run).
    """
    with _storage("record checkpoint"):
        await db.execute(
            "INSERT INTO gate_checkpoints (run_id, name, status, reviewer, note, decided_at,"
            " sample) VALUES ($1, $2, $3, $4, $5, $6, $7)",
            run_id, record.name, record.status, record.reviewer, record.note,
            record.decided_at, None if sample is None else list(sample))


async def checkpoints(db: Executor, run_id: UUID) -> dict[str, CheckpointRecord]:
    """The newest verdict per checkpoint of ``run_id``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read checkpoints"):
        rows = await db.fetch(
            "SELECT DISTINCT ON (name) name, status, reviewer, note, decided_at"
            " FROM gate_checkpoints WHERE run_id = $1 ORDER BY name, decided_at DESC, id DESC",
            run_id)
    return {r["name"]: CheckpointRecord(r["name"], r["status"], r["reviewer"], r["decided_at"],
                                        r["note"]) for r in rows}


async def schedule_reeval(db: Executor, request: ReevalRequested) -> bool:
    """Schedule a re-evaluation job for ``request.requested_at`` (in the future): a
    ``requested`` row in ``reeval_jobs`` that the evaluator's sweep claims once it is due.
    ``published_at`` is set (the schedule is its delivery: the monitor's outbox must not
    publish it early). Idempotent on ``job_id``; returns whether a row was written.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("schedule re-evaluation"):
        row = await db.fetchval(
            """
            INSERT INTO reeval_jobs (job_id, agent_id, trigger, reason, requested_at, request,
                                     published_at)
            VALUES ($1, $2, $3, $4, $5, $6, now())
            ON CONFLICT (job_id) DO NOTHING RETURNING 1
            """, request.job_id, request.agent_id, request.trigger, request.reason,
            request.requested_at, request.model_dump(mode="json"))
    return row is not None


async def reeval_requested_at(db: Executor, job_id: UUID) -> datetime | None:
    """When the re-evaluation job ``job_id`` is (or was) due, UTC; ``None`` if there is none.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read a re-evaluation job"):
        value: datetime | None = await db.fetchval(
            "SELECT requested_at FROM reeval_jobs WHERE job_id = $1", job_id)
    return value


@dataclass(frozen=True, slots=True)
class DecidedRun:
    """A run of an agent with its newest gate decision (the web app's run picker).

    Attributes:
        run_id, started_at (UTC), status, eval_source: as stored in ``eval_runs``.
        scored: cases of the run the judge scored (``eval_results.scores`` not empty).
        decision, decided_at, decision_id: the newest decision, or ``None`` (never decided).
    """

    run_id: UUID
    started_at: datetime
    status: str
    eval_source: str | None
    scored: int
    decision: str | None
    decided_at: datetime | None
    decision_id: UUID | None


async def decided_runs(db: Executor, agent_id: str, *, limit: int = 50,
                       run_id: UUID | None = None) -> list[DecidedRun]:
    """The newest ``limit`` runs of ``agent_id`` (A/B runs left out), newest first, each with
    its newest decision and how many of its cases were scored; with ``run_id``, only that run
    (an empty list when it is not one of the agent's).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("list decided runs"):
        rows = await db.fetch(
            """
            SELECT r.run_id, r.started_at, r.status, r.eval_source,
                   (SELECT count(*) FROM eval_results e WHERE e.run_id = r.run_id
                      AND e.scores IS NOT NULL AND e.scores <> '{}'::jsonb)::int AS scored,
                   d.decision, d.decided_at, d.decision_id
              FROM eval_runs r
              LEFT JOIN LATERAL (
                    SELECT decision, decided_at, decision_id FROM readiness_decisions x
                     WHERE x.run_id = r.run_id ORDER BY decided_at DESC, decision_id LIMIT 1
                   ) d ON true
             WHERE r.agent_id = $1 AND r.eval_source IS DISTINCT FROM 'ab:A'
               AND r.eval_source IS DISTINCT FROM 'ab:B'
               AND ($3::uuid IS NULL OR r.run_id = $3)
             ORDER BY r.started_at DESC, r.run_id LIMIT $2
            """, agent_id, limit, run_id)
    return [DecidedRun(**dict(r)) for r in rows]


async def checkpoint_history(db: Executor, run_id: UUID) -> list[dict[str, Any]]:
    """Every checkpoint verdict of ``run_id``, newest first (the audit: ``name``, ``status``,
    ``reviewer``, ``note``, ``decided_at`` UTC, ``sample``).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("read checkpoint history"):
        rows = await db.fetch(
            "SELECT name, status, reviewer, note, decided_at, sample FROM gate_checkpoints"
            " WHERE run_id = $1 ORDER BY decided_at DESC, id DESC", run_id)
    return [dict(r) for r in rows]


@dataclass(frozen=True, slots=True)
class ABPair:
    """Two stored runs of an A/B comparison (``evalloop ab``: ``eval_source`` ``ab:A`` and
    ``ab:B`` on the same golden-set version, started together).

    Attributes:
        run_a, run_b: the run ids; ``endpoint_a``, ``endpoint_b``: the agents' URLs.
        started_at: when A started (UTC).
    """

    run_a: UUID
    run_b: UUID
    endpoint_a: str | None
    endpoint_b: str | None
    started_at: datetime


async def ab_pairs(db: Executor, agent_id: str, *, limit: int = 20) -> list[ABPair]:
    """The newest ``limit`` A/B comparisons stored under ``agent_id``, newest first: each
    ``ab:A`` run with the ``ab:B`` run of the same golden-set version started nearest to it.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("list A/B runs"):
        rows = await db.fetch(
            """
            SELECT a.run_id AS run_a, b.run_id AS run_b, a.endpoint AS endpoint_a,
                   b.endpoint AS endpoint_b, a.started_at
              FROM eval_runs a
              JOIN LATERAL (
                    SELECT run_id, endpoint FROM eval_runs b
                     WHERE b.agent_id = a.agent_id AND b.eval_source = 'ab:B'
                       AND b.golden_set_version_id IS NOT DISTINCT FROM a.golden_set_version_id
                     ORDER BY abs(extract(epoch FROM b.started_at - a.started_at)), b.run_id
                     LIMIT 1
                   ) b ON true
             WHERE a.agent_id = $1 AND a.eval_source = 'ab:A'
             ORDER BY a.started_at DESC, a.run_id LIMIT $2
            """, agent_id, limit)
    return [ABPair(**dict(r)) for r in rows]


async def claim_counts(db: Executor, *, agent_id: str | None, since: datetime,
                       run_id: UUID | None = None) -> dict[str, int]:
    """Counts of the claims judged at or after ``since`` (optionally of one agent or run):
    ``claims``, ``supported``, ``unscored`` and one key per category found (the same keys as
    :func:`evalloop.readiness.report.hallucination_counts`, counted in the database).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with _storage("count claims"):
        rows = await db.fetch(
            """
            SELECT category, supported, count(*)::int AS n FROM hallucination_claims
             WHERE judged_at >= $1 AND ($2::text IS NULL OR agent_id = $2)
               AND ($3::uuid IS NULL OR run_id = $3)
             GROUP BY category, supported
            """, since, agent_id, run_id)
    out = {"claims": sum(r["n"] for r in rows),
           "supported": sum(r["n"] for r in rows if r["supported"] is True),
           "unscored": sum(r["n"] for r in rows if r["supported"] is None)}
    for r in rows:
        if r["category"] is not None:
            out[r["category"]] = out.get(r["category"], 0) + r["n"]
    return out


@dataclass(frozen=True, slots=True)
class CaseText:
    """What a case of a run asked and answered (a claim's trace).

    Attributes:
        question, answer: the case's input and the agent's answer (``None``: no answer).
        retrieved: passage ids the agent said it retrieved (``None``: not said).
    """

    question: str
    answer: str | None
    retrieved: tuple[str, ...] | None


async def case_texts(db: Executor, keys: Sequence[tuple[UUID, str]]
                     ) -> dict[tuple[UUID, str], CaseText]:
    """The question, answer and retrieved passages of each ``(run_id, case_id)`` in ``keys``
    (keys that match no stored result are left out).

    Raises:
        StorageError: PostgreSQL failed.
    """
    if not keys:
        return {}
    with _storage("read case texts"):
        rows = await db.fetch(
            """
            SELECT r.run_id, r.case_id, r.input, r.response, r.retrieved_context
              FROM eval_results r
              JOIN unnest($1::uuid[], $2::text[]) AS k(run_id, case_id)
                ON r.run_id = k.run_id AND r.case_id = k.case_id
            """, [k[0] for k in keys], [k[1] for k in keys])
    return {(r["run_id"], r["case_id"]): CaseText(
        r["input"], r["response"],
        None if r["retrieved_context"] is None else tuple(r["retrieved_context"]))
        for r in rows}
