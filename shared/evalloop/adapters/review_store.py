"""PostgreSQL store of human review: the candidate queue's decisions, golden-set versions made
by reviewers, the append-only audit, the publication outbox, and eval human verdicts.

Tables: migrations 0003 (``review_queue``), 0004 (golden sets, eval results) and 0007 (audit,
outbox, verdicts, profiles; its docstring explains the columns). Flows and rules:
``docs/review.md``.

Every action runs in one transaction that

1. locks the item (``SELECT ... FOR UPDATE``; golden sets: the ``golden_sets`` row, through
   :func:`evalloop.adapters.golden_store.store_version`),
2. checks the version the reviewer saw (``row_version`` of a candidate, the version number of
   a golden set) and that the item is still undecided -- otherwise :class:`ReviewConflict`,
   naming who decided it and when, and nothing is written,
3. writes the change, one ``review_actions`` row per item (reviewer, time, before, after, the
   evidence shown) and, when a golden-set version was made, one ``golden_outbox`` row.

Locks are always taken queue rows first (by candidate id), then the golden set: two
transactions cannot wait on each other in a cycle. Functions return JSON-ready dicts (UUIDs and
times as strings), the shape the HTTP API sends. asyncpg errors become
:class:`~evalloop.errors.StorageError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from evalloop.adapters.golden_store import (
    ERASED_MARKER,
    GoldenVersion,
    diff_cases,
    latest_cases,
    load_cases_on,
    store_version,
)
from evalloop.adapters.triage_store import store_errors
from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.review import CandidateDraft, Reviewer, apply_edits, to_golden_case
from evalloop.errors import FieldProblem, ReviewConflict, ReviewInputError, ReviewNotFound

__all__ = [
    "MONTHLY_REVIEW",
    "candidate_detail",
    "confirm_candidates",
    "diff_versions",
    "eval_case_detail",
    "eval_review_queue",
    "find_candidates",
    "get_profile",
    "human_labels",
    "item_audit",
    "jsonable",
    "list_golden_sets",
    "list_queue_items",
    "list_versions",
    "mark_outbox_published",
    "mark_set_reviewed",
    "outbox_pending",
    "record_verdict",
    "redact_audit",
    "reject_candidate",
    "resolve_set",
    "retire_case",
    "save_edits",
    "set_reminders",
    "skip_candidate",
    "uncovered_clusters",
    "upsert_profile",
    "version_detail",
]

#: A golden set is due for its review this long after the last one (``docs/review.md``).
MONTHLY_REVIEW = timedelta(days=30)


def jsonable(value: Any) -> Any:
    """``value`` with UUIDs, datetimes, records and tuples turned into JSON types."""
    if isinstance(value, UUID):
        return str(value)
    if isinstance(value, datetime):
        return value.astimezone(UTC).isoformat()
    if isinstance(value, asyncpg.Record | Mapping):
        return {k: jsonable(v) for k, v in dict(value).items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _obj(value: Any) -> dict[str, Any]:
    out = jsonable(value)
    assert isinstance(out, dict)
    return out


def _case_doc(case: EvalCase) -> dict[str, Any]:
    return case.model_dump(mode="json")


# --------------------------------------------------------------------------- the queue

_QUEUE_COLS = """
    q.candidate_id, q.agent_id, q.status, q.row_version, q.question, q.answer_given,
    q.expected_answer, q.expected_answer_source, q.expected_answer_ref, q.confidence,
    q.confidence_parts, q.explanation, q.rating_profile, q.cluster_id,
    COALESCE(c.label, q.cluster_label) AS cluster_label, c.size AS cluster_size,
    (c.cluster_id IS NOT NULL) AS cluster_exists, COALESCE(c.covered_by_golden, false) AS covered,
    cardinality(q.evidence_event_ids) AS evidence_count, q.skip_count, q.edits, q.case_id,
    q.proposed_at, q.updated_at, q.decided_by, q.decided_at, q.decision_reason,
    q.golden_version_id, q.golden_case_id, q.withdrawn_reason
"""


async def list_queue_items(pool: asyncpg.Pool, *, agent_id: str | None = None,
                           status: str | None = "pending", limit: int = 50,
                           offset: int = 0) -> list[dict[str, Any]]:
    """Queue rows in review order: fewest skips first, then highest confidence, then id.

    Args:
        agent_id: only this agent (``None``: all).
        status: ``pending`` (default), ``confirmed``, ``edited``, ``rejected``, ``withdrawn``,
            or ``None`` for every status.
        limit, offset: paging (rows).

    Returns:
        One dict per row: the ``review_queue`` columns shown to a reviewer plus the live
        cluster's ``cluster_label``, ``cluster_size`` (``None`` when the cluster is gone),
        ``cluster_exists``, ``covered`` and ``evidence_count``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("listing the review queue"):
        rows = await pool.fetch(
            f"SELECT {_QUEUE_COLS} FROM review_queue q LEFT JOIN clusters c "
            "ON c.agent_id = q.agent_id AND c.cluster_id = q.cluster_id "
            "WHERE ($1::text IS NULL OR q.agent_id = $1) AND ($2::text IS NULL OR q.status = $2) "
            "ORDER BY q.skip_count, q.confidence DESC, q.candidate_id LIMIT $3 OFFSET $4",
            agent_id, status, limit, offset)
    return [jsonable(r) for r in rows]


async def find_candidates(pool: asyncpg.Pool, prefix: str, limit: int = 10) -> list[UUID]:
    """Candidate ids starting with ``prefix`` (at least 8 hex digits, dashes ignored); empty
    for a shorter or non-hex prefix.

    Raises:
        StorageError: PostgreSQL failed.
    """
    digits = prefix.replace("-", "").lower()
    if len(digits) < 8 or any(ch not in "0123456789abcdef" for ch in digits):
        return []
    with store_errors("finding candidates"):
        rows = await pool.fetch(
            "SELECT candidate_id FROM review_queue WHERE replace(candidate_id::text, '-', '') "
            "LIKE $1 || '%' ORDER BY candidate_id LIMIT $2", digits, limit)
    return [r["candidate_id"] for r in rows]


async def _evidence(conn: asyncpg.Connection, row: asyncpg.Record) -> dict[str, Any]:
    """What a reviewer is shown about a candidate (and what the audit keeps)."""
    events = await conn.fetch(
        "SELECT event_id, event_type, occurred_at, payload FROM events "
        "WHERE event_id = ANY($1::uuid[]) ORDER BY occurred_at, event_id",
        list(row["evidence_event_ids"]))
    turn = await conn.fetchrow(
        "SELECT conversation_id, turn_id, occurred_at, question, answer, context_chunks, "
        "comment FROM negative_cases WHERE case_id = $1", row["case_id"])
    cluster = await conn.fetchrow(
        "SELECT cluster_id, label, terms, size, covered_by_golden FROM clusters "
        "WHERE agent_id = $1 AND cluster_id = $2", row["agent_id"], row["cluster_id"])
    examples = await conn.fetch(
        "SELECT question FROM triage_cases WHERE agent_id = $1 AND cluster_id = $2 "
        "AND question IS NOT NULL AND case_id <> $3 ORDER BY confidence DESC, case_id LIMIT 3",
        row["agent_id"], row["cluster_id"], row["case_id"])
    signals = []
    for e in events:
        p = e["payload"]
        item: dict[str, Any] = {"event_id": e["event_id"], "event_type": e["event_type"],
                                "occurred_at": e["occurred_at"]}
        for key in ("thumbs", "score", "comment", "corrected_answer", "reason", "requested_by",
                    "gate", "category", "severity", "action", "resolved", "abandoned"):
            if p.get(key) is not None:
                item[key] = p[key]
        signals.append(item)
    return _obj({
        "turn": dict(turn) if turn else {"question": row["question"],
                                          "answer": row["answer_given"]},
        "signals": signals,
        "correction": next((s.get("corrected_answer") for s in reversed(signals)
                            if s["event_type"] == "operator_correction"), None),
        "cluster": ({**dict(cluster), "examples": [r["question"] for r in examples]}
                    if cluster else {"cluster_id": row["cluster_id"], "label":
                                     row["cluster_label"], "gone": True}),
        "proposed_expected_answer": row["expected_answer"],
        "expected_answer_source": row["expected_answer_source"],
        "expected_answer_ref": row["expected_answer_ref"],
        "confidence": row["confidence"],
        "confidence_parts": row["confidence_parts"],
        "explanation": row["explanation"],
        "rating_profile": row["rating_profile"],
    })


async def candidate_detail(pool: asyncpg.Pool, candidate_id: UUID) -> dict[str, Any]:
    """One candidate as a reviewer sees it: the queue row, its evidence (the turn, every
    signal with ratings and comments, the operator's correction, the cluster with example
    questions, the proposed expected answer and its source, the rank explanation) and its
    audit trail.

    Raises:
        ReviewNotFound: no such candidate.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading candidate {candidate_id}"):
        async with pool.acquire() as conn:
            row = await conn.fetchrow(
                f"SELECT {_QUEUE_COLS}, q.evidence_event_ids FROM review_queue q "
                "LEFT JOIN clusters c ON c.agent_id = q.agent_id AND c.cluster_id = q.cluster_id"
                " WHERE q.candidate_id = $1", candidate_id)
            if row is None:
                raise ReviewNotFound(f"no candidate {candidate_id} in the review queue")
            evidence = await _evidence(conn, row)
            audit = await _audit(conn, "candidate", str(candidate_id))
    out = _obj({k: v for k, v in dict(row).items() if k != "evidence_event_ids"})
    out["evidence"] = evidence
    out["audit"] = audit
    return out


async def _audit(conn: asyncpg.Connection, kind: str, item_id: str) -> list[dict[str, Any]]:
    rows = await conn.fetch(
        "SELECT action_id, agent_id, item_kind, item_id, action, reviewer, reviewer_role, at, "
        "before, after, evidence, reason, golden_version_id FROM review_actions "
        "WHERE item_kind = $1 AND item_id = $2 ORDER BY action_id", kind, item_id)
    return [jsonable(r) for r in rows]


async def item_audit(pool: asyncpg.Pool, kind: str, item_id: str) -> list[dict[str, Any]]:
    """Every audit row of one item (``kind`` = ``candidate`` | ``golden_case`` |
    ``golden_set`` | ``eval_case``), oldest first.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading the audit of {kind} {item_id}"):
        async with pool.acquire() as conn:
            return await _audit(conn, kind, item_id)


async def _record(conn: asyncpg.Connection, *, agent_id: str, kind: str, item_id: str,
                  action: str, reviewer: Reviewer, before: Any, after: Any,
                  evidence: Any = None, reason: str | None = None,
                  version_id: UUID | None = None) -> None:
    await conn.execute(
        "INSERT INTO review_actions (agent_id, item_kind, item_id, action, reviewer, "
        "reviewer_role, at, before, after, evidence, reason, golden_version_id) "
        "VALUES ($1, $2, $3, $4, $5, $6, now(), $7, $8, $9, $10, $11)",
        agent_id, kind, item_id, action, reviewer.name, reviewer.role, jsonable(before),
        jsonable(after), jsonable(evidence or {}), reason, version_id)


#: Keys of an audit row's ``before`` / ``after`` documents that hold a person's text.
_AUDIT_TEXT_KEYS = ("question", "expected_answer", "context_chunks", "expected_behavior",
                    "notes", "edits", "input")


def _redact_doc(doc: Any) -> Any:
    """``doc`` with every non-null value under a key of :data:`_AUDIT_TEXT_KEYS` replaced by
    the marker, at any depth (a confirm's ``after`` nests the golden ``case``)."""
    if isinstance(doc, list):
        return [_redact_doc(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    return {k: (ERASED_MARKER if v is not None else None) if k in _AUDIT_TEXT_KEYS
            else _redact_doc(v) for k, v in doc.items()}


async def redact_audit(conn: asyncpg.Connection, *, candidate_ids: Sequence[UUID],
                       golden_cases: Sequence[tuple[str, str, str]]) -> int:
    """Redact the free text of the audit rows of erased candidates and golden cases, inside
    the caller's (erasure) transaction.

    Rows of ``item_kind = 'candidate'`` for ``candidate_ids`` and of ``golden_case`` for
    ``golden_cases`` keep their id, item, action, reviewer, role, time and golden version; in
    ``before`` / ``after`` the text keys (question, expected answer, context chunks, expected
    behaviour, notes, edits), at any depth, become :data:`ERASED_MARKER` (a null stays null;
    status, row version, case id, category and flags stay); a candidate row's ``evidence``
    (the conversation the reviewer was shown) becomes the marker as a whole; a non-null
    ``reason`` becomes the marker. The trigger of ``review_actions`` allows this only with
    ``evalloop.erasure`` on (``docs/security.md#erasure``).

    Args:
        conn: a connection in a transaction.
        candidate_ids: the review-queue rows being erased.
        golden_cases: ``(agent_id, golden_set_id, case_id)`` of the golden cases being redacted.

    Returns:
        The number of audit rows redacted.

    Raises:
        Exception: the driver's errors, unmapped: the caller owns the transaction.
    """
    items = ([("candidate", str(c)) for c in candidate_ids]
             + [("golden_case", "/".join(k)) for k in golden_cases])
    if not items:
        return 0
    rows = await conn.fetch(
        "SELECT action_id, item_kind, before, after, evidence, reason FROM review_actions"
        " WHERE (item_kind, item_id) IN (SELECT * FROM unnest($1::text[], $2::text[]))"
        " ORDER BY action_id", [k for k, _ in items], [i for _, i in items])
    if not rows:
        return 0
    await conn.execute("SET LOCAL evalloop.erasure = 'on'")
    await conn.executemany(
        "UPDATE review_actions SET before = $2, after = $3, evidence = $4, reason = $5"
        " WHERE action_id = $1",
        [(r["action_id"], _redact_doc(r["before"]), _redact_doc(r["after"]),
          ERASED_MARKER if r["item_kind"] == "candidate" else r["evidence"],
          None if r["reason"] is None else ERASED_MARKER) for r in rows])
    return len(rows)


def _snapshot(row: asyncpg.Record) -> dict[str, Any]:
    return _obj({k: row[k] for k in (
        "status", "row_version", "question", "expected_answer", "expected_answer_source",
        "edits", "skip_count", "cluster_id", "confidence")})


async def _lock_candidates(conn: asyncpg.Connection, wanted: Sequence[tuple[UUID, int]]
                           ) -> dict[UUID, asyncpg.Record]:
    """Lock the rows (in id order), checking each exists, is pending and is at the version the
    reviewer saw."""
    ids = sorted({c for c, _ in wanted})
    rows = await conn.fetch(
        "SELECT * FROM review_queue WHERE candidate_id = ANY($1::uuid[]) "
        "ORDER BY candidate_id FOR UPDATE", ids)
    by_id = {r["candidate_id"]: r for r in rows}
    for cid, seen in wanted:
        row = by_id.get(cid)
        if row is None:
            raise ReviewNotFound(f"no candidate {cid} in the review queue")
        current = jsonable({"candidate_id": cid, "status": row["status"],
                            "row_version": row["row_version"], "decided_by": row["decided_by"],
                            "decided_at": row["decided_at"],
                            "golden_version_id": row["golden_version_id"]})
        if row["status"] != "pending":
            who = (f" by {row['decided_by']} at {jsonable(row['decided_at'])}"
                   if row["decided_by"] else "")
            raise ReviewConflict(
                f"candidate {cid} is already {row['status']}{who}; nothing was changed",
                current)
        if row["row_version"] != seen:
            raise ReviewConflict(
                f"candidate {cid} changed since it was loaded (you saw version {seen}, it is "
                f"now version {row['row_version']}); reload it and decide again", current)
    return by_id


async def resolve_set(conn: asyncpg.Connection | asyncpg.Pool, agent_id: str,
                      golden_set_id: str | None) -> str:
    """The golden set confirmed candidates of ``agent_id`` go into: ``golden_set_id`` when
    given, else the agent's only set, else ``<agent>-golden`` (created by the first
    confirmation).

    Raises:
        ReviewInputError: the agent has several sets and none was named.
    """
    if golden_set_id:
        return golden_set_id
    sets = [r["golden_set_id"] for r in await conn.fetch(
        "SELECT golden_set_id FROM golden_sets WHERE agent_id = $1 ORDER BY golden_set_id",
        agent_id)]
    if len(sets) > 1:
        raise ReviewInputError([FieldProblem(
            "golden_set_id", f"one of the agent's golden sets ({', '.join(sets)})", "nothing")])
    return sets[0] if sets else f"{agent_id}-golden"


async def _enqueue_publication(conn: asyncpg.Connection, v: GoldenVersion, reason: str) -> None:
    payload = jsonable({
        "version_id": v.version_id, "agent_id": v.agent_id, "golden_set_id": v.golden_set_id,
        "version": v.version, "parent_version_id": v.parent_version_id,
        "case_count": v.case_count, "diff": v.diff, "content_hash": v.content_hash,
        "created_by": v.created_by, "reason": reason, "created_at": v.created_at})
    await conn.execute(
        "INSERT INTO golden_outbox (version_id, agent_id, golden_set_id, version, payload) "
        "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (version_id) DO NOTHING",
        v.version_id, v.agent_id, v.golden_set_id, v.version, payload)


def _version_doc(v: GoldenVersion) -> dict[str, Any]:
    return _obj({
        "version_id": v.version_id, "agent_id": v.agent_id, "golden_set_id": v.golden_set_id,
        "version": v.version, "parent_version_id": v.parent_version_id,
        "created_at": v.created_at, "created_by": v.created_by, "source": v.source,
        "diff": v.diff, "content_hash": v.content_hash, "case_count": v.case_count})


async def confirm_candidates(
    pool: asyncpg.Pool, items: Sequence[tuple[UUID, int, Mapping[str, Any] | None]], *,
    reviewer: Reviewer, golden_set_id: str | None = None, action: str = "confirm",
) -> dict[str, Any]:
    """Confirm one or more candidates of one agent into ONE new golden-set version.

    Args:
        items: ``(candidate_id, row_version seen, new edits or None)``; new edits are applied
            over the ones saved earlier (``docs/review.md#edit``) and kept on the row.
        reviewer: who confirms (must be able to act; the API checks the role).
        golden_set_id: the target set (default: :func:`resolve_set`).
        action: ``confirm`` or ``edit`` (what the audit row says was done).

    Returns:
        ``{"version": {...version...}, "items": [{"candidate_id", "status", "golden_case_id",
        "row_version"}]}``; ``status`` is ``edited`` when the confirmed case carries edits.

    Raises:
        ReviewNotFound: a candidate does not exist.
        ReviewConflict: a candidate is decided or changed since it was loaded (nothing written).
        ReviewInputError: no items, items of several agents, an ambiguous set, or the case id
            is already in the set.
        StorageError: PostgreSQL failed.
    """
    if not items:
        raise ReviewInputError([FieldProblem("items", "at least one candidate", "none")])
    with store_errors("confirming candidates"):
        async with pool.acquire() as conn, conn.transaction():
            rows = await _lock_candidates(conn, [(c, v) for c, v, _ in items])
            agents = sorted({r["agent_id"] for r in rows.values()})
            if len(agents) > 1:
                raise ReviewInputError([FieldProblem(
                    "items", "candidates of one agent", f"agents {', '.join(agents)}")])
            agent_id = agents[0]
            set_id = await resolve_set(conn, agent_id, golden_set_id)
            _parent, cases = await latest_cases(conn, agent_id, set_id, lock=True)
            now = await conn.fetchval("SELECT now()")
            present = {c.id for c in cases}
            added: list[tuple[asyncpg.Record, EvalCase, dict[str, Any]]] = []
            for cid, _, new_edits in items:
                row = rows[cid]
                edits = apply_edits(row["edits"] or {}, new_edits or {})
                draft = CandidateDraft(
                    str(cid), row["question"], row["expected_answer"],
                    context_chunks=((row["expected_answer_ref"].removeprefix("passage:"),)
                                    if (row["expected_answer_ref"] or "").startswith("passage:")
                                    else ()),
                    cluster_label=row["cluster_label"])
                case = to_golden_case(draft, edits, reviewer=reviewer, at=now)
                if case.id in present:
                    raise ReviewInputError([FieldProblem(
                        "candidate_id", f"a candidate not yet in {agent_id}/{set_id}",
                        f"{cid} (case {case.id} is already there)")])
                present.add(case.id)
                added.append((row, case, edits))
            n = len(added)
            edited = sum(1 for _, _, e in added if e)
            plural = "s" if n != 1 else ""
            if edited == n:
                reason = f"review: {reviewer.name} edited and confirmed {n} candidate{plural}"
            else:
                reason = (f"review: {reviewer.name} confirmed {n} candidate{plural}"
                          + (f" ({edited} edited)" if edited else ""))
            outcome = await store_version(
                conn, agent_id=agent_id, golden_set_id=set_id,
                cases=list(cases) + [c for _, c, _ in added], created_by=reviewer.name,
                source=reason)
            v = outcome.version
            out_items = []
            for row, case, edits in added:
                status = "edited" if edits else "confirmed"
                evidence = await _evidence(conn, row)
                await conn.execute(
                    "UPDATE review_queue SET status = $2, edits = $3, decided_by = $4, "
                    "decided_at = $5, golden_version_id = $6, golden_case_id = $7, "
                    "row_version = row_version + 1, updated_at = $5 WHERE candidate_id = $1",
                    row["candidate_id"], status, edits, reviewer.name, now, v.version_id,
                    case.id)
                await _record(conn, agent_id=agent_id, kind="candidate",
                              item_id=str(row["candidate_id"]), action=action,
                              reviewer=reviewer, before=_snapshot(row),
                              after={"status": status, "row_version": row["row_version"] + 1,
                                     "edits": edits, "golden_set_id": set_id,
                                     "version": v.version, "case": _case_doc(case)},
                              evidence=evidence, version_id=v.version_id)
                out_items.append({"candidate_id": str(row["candidate_id"]), "status": status,
                                  "golden_case_id": case.id,
                                  "row_version": row["row_version"] + 1})
            await _enqueue_publication(conn, v, reason)
    return {"version": _version_doc(v), "items": out_items}


async def reject_candidate(pool: asyncpg.Pool, candidate_id: UUID, *, row_version: int,
                           reviewer: Reviewer, reason: str) -> dict[str, Any]:
    """Reject a candidate with a reason; its question (and near-paraphrases) is never proposed
    again (``docs/review.md#reject``).

    Returns:
        ``{"candidate_id", "status": "rejected", "row_version"}``.

    Raises:
        ReviewInputError: an empty reason.
        ReviewNotFound, ReviewConflict: as :func:`confirm_candidates`.
        StorageError: PostgreSQL failed.
    """
    if not reason or not reason.strip():
        raise ReviewInputError([FieldProblem("reason", "why the candidate is rejected",
                                             repr(reason))])
    with store_errors(f"rejecting candidate {candidate_id}"):
        async with pool.acquire() as conn, conn.transaction():
            row = (await _lock_candidates(conn, [(candidate_id, row_version)]))[candidate_id]
            evidence = await _evidence(conn, row)
            now = await conn.fetchval("SELECT now()")
            await conn.execute(
                "UPDATE review_queue SET status = 'rejected', decided_by = $2, decided_at = $3, "
                "decision_reason = $4, row_version = row_version + 1, updated_at = $3 "
                "WHERE candidate_id = $1", candidate_id, reviewer.name, now, reason.strip())
            after = {"status": "rejected", "row_version": row["row_version"] + 1}
            await _record(conn, agent_id=row["agent_id"], kind="candidate",
                          item_id=str(candidate_id), action="reject", reviewer=reviewer,
                          before=_snapshot(row), after=after, evidence=evidence,
                          reason=reason.strip())
    return {"candidate_id": str(candidate_id), **after}


async def skip_candidate(pool: asyncpg.Pool, candidate_id: UUID, *, row_version: int,
                         reviewer: Reviewer, reason: str | None = None) -> dict[str, Any]:
    """Skip a candidate: it stays pending and moves behind the candidates skipped fewer times.

    Returns:
        ``{"candidate_id", "status": "pending", "row_version", "skip_count"}``.

    Raises:
        ReviewNotFound, ReviewConflict: as :func:`confirm_candidates`.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"skipping candidate {candidate_id}"):
        async with pool.acquire() as conn, conn.transaction():
            row = (await _lock_candidates(conn, [(candidate_id, row_version)]))[candidate_id]
            evidence = await _evidence(conn, row)
            await conn.execute(
                "UPDATE review_queue SET skip_count = skip_count + 1, "
                "row_version = row_version + 1, updated_at = now() WHERE candidate_id = $1",
                candidate_id)
            after = {"status": "pending", "row_version": row["row_version"] + 1,
                     "skip_count": row["skip_count"] + 1}
            await _record(conn, agent_id=row["agent_id"], kind="candidate",
                          item_id=str(candidate_id), action="skip", reviewer=reviewer,
                          before=_snapshot(row), after=after, evidence=evidence, reason=reason)
    return {"candidate_id": str(candidate_id), **after}


async def save_edits(pool: asyncpg.Pool, candidate_id: UUID, *, row_version: int,
                     reviewer: Reviewer, edits: Mapping[str, Any]) -> dict[str, Any]:
    """Save edits on a pending candidate without deciding it (kept until it is confirmed).

    Returns:
        ``{"candidate_id", "status": "pending", "row_version", "edits"}``.

    Raises:
        ReviewNotFound, ReviewConflict: as :func:`confirm_candidates`.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"saving edits of candidate {candidate_id}"):
        async with pool.acquire() as conn, conn.transaction():
            row = (await _lock_candidates(conn, [(candidate_id, row_version)]))[candidate_id]
            merged = apply_edits(row["edits"] or {}, edits)
            evidence = await _evidence(conn, row)
            await conn.execute(
                "UPDATE review_queue SET edits = $2, row_version = row_version + 1, "
                "updated_at = now() WHERE candidate_id = $1", candidate_id, merged)
            after = {"status": "pending", "row_version": row["row_version"] + 1,
                     "edits": merged}
            await _record(conn, agent_id=row["agent_id"], kind="candidate",
                          item_id=str(candidate_id), action="edit", reviewer=reviewer,
                          before=_snapshot(row), after=after, evidence=evidence)
    return {"candidate_id": str(candidate_id), **after}


# --------------------------------------------------------------------------- golden sets


async def list_golden_sets(pool: asyncpg.Pool, agent_id: str | None = None
                           ) -> list[dict[str, Any]]:
    """Every golden set: ``agent_id``, ``golden_set_id``, ``latest_version``, ``case_count``
    and ``created_at`` of the latest version, by agent and set.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("listing golden sets"):
        rows = await pool.fetch(
            "SELECT s.agent_id, s.golden_set_id, s.latest_version, v.case_count, "
            "v.created_at AS latest_created_at, v.version_id AS latest_version_id "
            "FROM golden_sets s LEFT JOIN golden_set_versions v ON v.agent_id = s.agent_id "
            "AND v.golden_set_id = s.golden_set_id AND v.version = s.latest_version "
            "WHERE ($1::text IS NULL OR s.agent_id = $1) AND s.latest_version > 0 "
            "ORDER BY s.agent_id, s.golden_set_id", agent_id)
    return [jsonable(r) for r in rows]


_VCOLS = ("version_id, agent_id, golden_set_id, version, parent_version_id, created_at, "
          "created_by, source, diff, content_hash, case_count")


async def list_versions(pool: asyncpg.Pool, agent_id: str, golden_set_id: str
                        ) -> list[dict[str, Any]]:
    """Every version of one set, newest first (empty when the set does not exist).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"listing versions of {agent_id}/{golden_set_id}"):
        rows = await pool.fetch(
            f"SELECT {_VCOLS} FROM golden_set_versions WHERE agent_id = $1 "
            "AND golden_set_id = $2 ORDER BY version DESC", agent_id, golden_set_id)
    return [jsonable(r) for r in rows]


async def _version_cases(conn: asyncpg.Connection, agent_id: str, golden_set_id: str,
                         version: int) -> tuple[asyncpg.Record, list[EvalCase]]:
    row = await conn.fetchrow(
        f"SELECT {_VCOLS} FROM golden_set_versions WHERE agent_id = $1 AND golden_set_id = $2 "
        "AND version = $3", agent_id, golden_set_id, version)
    if row is None:
        raise ReviewNotFound(f"golden set {agent_id}/{golden_set_id} has no version {version}")
    return row, list(await load_cases_on(conn, row["version_id"]))


async def version_detail(pool: asyncpg.Pool, agent_id: str, golden_set_id: str,
                         version: int | None = None) -> tuple[dict[str, Any], list[EvalCase]]:
    """One version (default: the latest) and its cases, in order.

    Raises:
        ReviewNotFound: no such set or version.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading {agent_id}/{golden_set_id}"):
        async with pool.acquire() as conn:
            if version is None:
                version = await conn.fetchval(
                    "SELECT latest_version FROM golden_sets WHERE agent_id = $1 "
                    "AND golden_set_id = $2", agent_id, golden_set_id)
                if not version:
                    raise ReviewNotFound(f"no golden set {agent_id}/{golden_set_id}")
            row, cases = await _version_cases(conn, agent_id, golden_set_id, version)
    return jsonable(row), cases


async def diff_versions(pool: asyncpg.Pool, agent_id: str, golden_set_id: str, old: int,
                        new: int) -> dict[str, Any]:
    """The difference between any two versions of one set, case by case.

    Returns:
        ``{"from": n, "to": m, "added": [case], "removed": [case], "changed": [{"id",
        "fields": [names], "before": case, "after": case}]}`` (cases as golden-set JSON
        objects, lists ordered by case id).

    Raises:
        ReviewNotFound: a version does not exist.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"diffing {agent_id}/{golden_set_id}"):
        async with pool.acquire() as conn:
            _, a = await _version_cases(conn, agent_id, golden_set_id, old)
            _, b = await _version_cases(conn, agent_id, golden_set_id, new)
    ids = diff_cases(a, b)
    before = {c.id: _case_doc(c) for c in a}
    after = {c.id: _case_doc(c) for c in b}
    return {
        "from": old, "to": new,
        "added": [after[i] for i in ids["added"]],
        "removed": [before[i] for i in ids["removed"]],
        "changed": [{"id": i, "fields": sorted(k for k in after[i] if after[i][k] != before[i][k]),
                     "before": before[i], "after": after[i]} for i in ids["changed"]],
    }


async def retire_case(pool: asyncpg.Pool, agent_id: str, golden_set_id: str, case_id: str, *,
                      expected_version: int, reviewer: Reviewer, reason: str
                      ) -> dict[str, Any]:
    """Retire a stale case: a new version without it (``docs/review.md#retire``).

    Args:
        expected_version: the version the reviewer looked at; another version since is a
            conflict.
        reason: why the case is stale (required).

    Returns:
        ``{"version": {...}, "retired": case}``.

    Raises:
        ReviewInputError: an empty reason.
        ReviewNotFound: no such set or case in the latest version.
        ReviewConflict: the set has a newer version than ``expected_version``.
        StorageError: PostgreSQL failed.
    """
    if not reason or not reason.strip():
        raise ReviewInputError([FieldProblem("reason", "why the case is retired",
                                             repr(reason))])
    with store_errors(f"retiring {agent_id}/{golden_set_id}/{case_id}"):
        async with pool.acquire() as conn, conn.transaction():
            exists = await conn.fetchval(
                "SELECT latest_version FROM golden_sets WHERE agent_id = $1 "
                "AND golden_set_id = $2", agent_id, golden_set_id)
            if not exists:
                raise ReviewNotFound(f"no golden set {agent_id}/{golden_set_id}")
            parent, cases = await latest_cases(conn, agent_id, golden_set_id, lock=True)
            assert parent is not None
            if parent.version != expected_version:
                raise ReviewConflict(
                    f"golden set {agent_id}/{golden_set_id} is at version {parent.version}, "
                    f"not {expected_version} as loaded; reload it and decide again",
                    {"version": parent.version, "version_id": str(parent.version_id)})
            gone = [c for c in cases if c.id == case_id]
            if not gone:
                raise ReviewNotFound(f"case {case_id!r} is not in {agent_id}/{golden_set_id} "
                                     f"version {parent.version}")
            text = (f"review: {reviewer.name} retired {case_id}: {reason.strip()}")
            outcome = await store_version(
                conn, agent_id=agent_id, golden_set_id=golden_set_id,
                cases=[c for c in cases if c.id != case_id], created_by=reviewer.name,
                source=text)
            v = outcome.version
            await _record(conn, agent_id=agent_id, kind="golden_case",
                          item_id=f"{agent_id}/{golden_set_id}/{case_id}", action="retire",
                          reviewer=reviewer, before=_case_doc(gone[0]),
                          after={"version": v.version, "retired": True},
                          evidence={"version": parent.version}, reason=reason.strip(),
                          version_id=v.version_id)
            await _enqueue_publication(conn, v, text)
    return {"version": _version_doc(v), "retired": _case_doc(gone[0])}


async def mark_set_reviewed(pool: asyncpg.Pool, agent_id: str, golden_set_id: str, *,
                            reviewer: Reviewer, note: str | None = None) -> dict[str, Any]:
    """Record the monthly review of a set as done (resets its reminder).

    Raises:
        ReviewNotFound: no such set.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"marking {agent_id}/{golden_set_id} reviewed"):
        async with pool.acquire() as conn, conn.transaction():
            latest = await conn.fetchval(
                "SELECT latest_version FROM golden_sets WHERE agent_id = $1 "
                "AND golden_set_id = $2", agent_id, golden_set_id)
            if not latest:
                raise ReviewNotFound(f"no golden set {agent_id}/{golden_set_id}")
            await _record(conn, agent_id=agent_id, kind="golden_set",
                          item_id=f"{agent_id}/{golden_set_id}", action="set_reviewed",
                          reviewer=reviewer, before=None, after={"version": latest},
                          reason=note)
    return {"agent_id": agent_id, "golden_set_id": golden_set_id, "version": latest}


async def set_reminders(pool: asyncpg.Pool, *, now: datetime,
                        agent_id: str | None = None) -> list[dict[str, Any]]:
    """The monthly review reminder of every set (``docs/review.md#monthly-review``).

    A set's last review is its latest ``set_reviewed`` audit row, else its first version's
    creation; it is due :data:`MONTHLY_REVIEW` later.

    Returns:
        Per set: ``agent_id``, ``golden_set_id``, ``last_reviewed_at``, ``due_at``,
        ``overdue`` (``now >= due_at``), ``days_left`` (negative when overdue, whole days),
        by due date.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("reading golden-set review reminders"):
        rows = await pool.fetch(
            """
            SELECT s.agent_id, s.golden_set_id,
                   COALESCE((SELECT max(a.at) FROM review_actions a
                             WHERE a.item_kind = 'golden_set' AND a.action = 'set_reviewed'
                               AND a.item_id = s.agent_id || '/' || s.golden_set_id),
                            (SELECT min(v.created_at) FROM golden_set_versions v
                             WHERE v.agent_id = s.agent_id
                               AND v.golden_set_id = s.golden_set_id)) AS last_reviewed_at
            FROM golden_sets s
            WHERE s.latest_version > 0 AND ($1::text IS NULL OR s.agent_id = $1)
            """, agent_id)
    out = []
    for r in rows:
        due = r["last_reviewed_at"] + MONTHLY_REVIEW
        left = (due - now).total_seconds() / 86_400
        out.append({"agent_id": r["agent_id"], "golden_set_id": r["golden_set_id"],
                    "last_reviewed_at": jsonable(r["last_reviewed_at"]),
                    "due_at": jsonable(due), "overdue": now >= due,
                    "days_left": int(left // 1)})
    out.sort(key=lambda d: (d["due_at"], d["agent_id"], d["golden_set_id"]))
    return out


# --------------------------------------------------------------------------- care inputs


async def get_profile(pool: asyncpg.Pool, agent_id: str) -> dict[str, Any] | None:
    """The agent's review profile (knowledge domains, escalation triggers, in production), or
    ``None`` when none is stored.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading the review profile of {agent_id}"):
        row = await pool.fetchrow(
            "SELECT agent_id, knowledge_domains, escalation_triggers, in_production, updated_at "
            "FROM agent_review_profiles WHERE agent_id = $1", agent_id)
    return jsonable(row) if row else None


async def upsert_profile(pool: asyncpg.Pool, agent_id: str, *, knowledge_domains: Sequence[str],
                         escalation_triggers: Sequence[str], in_production: bool | None
                         ) -> dict[str, Any]:
    """Store the agent's review profile (replacing the previous one).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"storing the review profile of {agent_id}"):
        row = await pool.fetchrow(
            "INSERT INTO agent_review_profiles (agent_id, knowledge_domains, "
            "escalation_triggers, in_production, updated_at) VALUES ($1, $2, $3, $4, now()) "
            "ON CONFLICT (agent_id) DO UPDATE SET knowledge_domains = EXCLUDED.knowledge_domains,"
            " escalation_triggers = EXCLUDED.escalation_triggers, "
            "in_production = EXCLUDED.in_production, updated_at = now() "
            "RETURNING agent_id, knowledge_domains, escalation_triggers, in_production, "
            "updated_at", agent_id, list(knowledge_domains), list(escalation_triggers),
            in_production)
    return _obj(row)


async def uncovered_clusters(pool: asyncpg.Pool, agent_id: str, case_ids: Sequence[str] = ()
                             ) -> list[dict[str, Any]] | None:
    """The agent's current clusters of negatives that no golden case covers: not covered at
    the last re-clustering, and no candidate of the cluster confirmed into ``case_ids``.

    Returns:
        ``[{"cluster_id", "label", "size"}]``, largest first; ``None`` when the agent has no
        clusters at all (its negatives were never clustered: coverage is unknown).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading the uncovered clusters of {agent_id}"):
        if not await pool.fetchval("SELECT EXISTS (SELECT 1 FROM clusters WHERE agent_id = $1)",
                                   agent_id):
            return None
        rows = await pool.fetch(
            "SELECT c.cluster_id, c.label, c.size FROM clusters c WHERE c.agent_id = $1 "
            "AND NOT c.covered_by_golden AND NOT EXISTS (SELECT 1 FROM review_queue q "
            "WHERE q.agent_id = c.agent_id AND q.cluster_id = c.cluster_id "
            "AND q.golden_case_id = ANY($2::text[])) ORDER BY c.size DESC, c.cluster_id",
            agent_id, list(case_ids))
    return [dict(r) for r in rows]


# --------------------------------------------------------------------------- outbox


async def outbox_pending(conn: asyncpg.Connection, limit: int = 100) -> list[dict[str, Any]]:
    """Unpublished versions, oldest first, locked for this transaction (``SKIP LOCKED``: two
    publishers never take the same row). Must run in a transaction."""
    rows = await conn.fetch(
        "SELECT version_id, payload FROM golden_outbox WHERE published_at IS NULL "
        "ORDER BY created_at, version_id LIMIT $1 FOR UPDATE SKIP LOCKED", limit)
    return [dict(r) for r in rows]


async def mark_outbox_published(conn: asyncpg.Connection, version_ids: Sequence[UUID]) -> None:
    """Stamp ``published_at`` on the given outbox rows."""
    await conn.execute(
        "UPDATE golden_outbox SET published_at = now() WHERE version_id = ANY($1::uuid[])",
        list(version_ids))


# --------------------------------------------------------------------------- eval human review


async def eval_review_queue(pool: asyncpg.Pool, *, agent_id: str | None = None,
                            run_id: UUID | None = None, include_reviewed: bool = False,
                            limit: int = 100) -> list[dict[str, Any]]:
    """Eval cases marked ``requires_human_review``, newest run first.

    Args:
        include_reviewed: also cases that already have a verdict (default: only those with
            none).

    Returns:
        Per case: ``run_id``, ``case_id``, ``agent_id``, ``started_at``, ``category``,
        ``input``, ``status``, ``review_reasons``, ``flags``, ``verdicts`` (count).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("listing eval cases for human review"):
        rows = await pool.fetch(
            """
            SELECT r.run_id, r.case_id, u.agent_id, u.started_at, r.category, r.input, r.status,
                   r.review_reasons, r.flags,
                   (SELECT count(*) FROM eval_human_reviews h
                    WHERE h.run_id = r.run_id AND h.case_id = r.case_id) AS verdicts
            FROM eval_results r JOIN eval_runs u ON u.run_id = r.run_id
            WHERE r.requires_human_review AND ($1::text IS NULL OR u.agent_id = $1)
              AND ($2::uuid IS NULL OR r.run_id = $2)
              AND ($3 OR NOT EXISTS (SELECT 1 FROM eval_human_reviews h
                                     WHERE h.run_id = r.run_id AND h.case_id = r.case_id))
            ORDER BY u.started_at DESC, r.run_id, r.position
            LIMIT $4
            """, agent_id, run_id, include_reviewed, limit)
    return [jsonable(r) for r in rows]


async def eval_case_detail(pool: asyncpg.Pool, run_id: UUID, case_id: str) -> dict[str, Any]:
    """One eval result (input, expectations, response, gates, flags, review reasons, scores)
    with every human verdict on it.

    Raises:
        ReviewNotFound: no such result.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading eval case {run_id}/{case_id}"):
        row = await pool.fetchrow(
            "SELECT r.*, u.agent_id FROM eval_results r JOIN eval_runs u USING (run_id) "
            "WHERE r.run_id = $1 AND r.case_id = $2", run_id, case_id)
        if row is None:
            raise ReviewNotFound(f"run {run_id} has no case {case_id!r}")
        verdicts = await pool.fetch(
            "SELECT reviewer, reviewer_role, criteria, score, note, reviewed_at "
            "FROM eval_human_reviews WHERE run_id = $1 AND case_id = $2 ORDER BY reviewed_at",
            run_id, case_id)
    out = _obj(row)
    out["verdicts"] = [jsonable(v) for v in verdicts]
    return out


async def run_verdicts(pool: asyncpg.Pool, run_id: UUID) -> dict[str, list[dict[str, Any]]]:
    """Every human verdict on the cases of one run, as ``{case_id: [verdict, ...]}`` (each
    ``reviewer``, ``criteria``, ``score``, ``note``, ``reviewed_at``; oldest first).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"reading the verdicts of run {run_id}"):
        rows = await pool.fetch(
            "SELECT case_id, reviewer, criteria, score, note, reviewed_at "
            "FROM eval_human_reviews WHERE run_id = $1 ORDER BY case_id, reviewed_at", run_id)
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["case_id"], []).append(jsonable(r))
    return out


async def record_verdict(pool: asyncpg.Pool, run_id: UUID, case_id: str, *,
                         reviewer: Reviewer, criteria: Mapping[str, bool], score: int,
                         note: str | None) -> dict[str, Any]:
    """Store a reviewer's verdict on an eval case (a human label for the judge's calibration).

    Args:
        criteria: criterion -> passed (validated by the caller against
            ``docs/review.md#eval-human-review``).
        score: overall 1-5.

    Returns:
        The stored verdict.

    Raises:
        ReviewNotFound: no such eval result.
        ReviewConflict: this reviewer already gave a verdict on this case.
        ReviewInputError: the case was not marked for human review.
        StorageError: PostgreSQL failed.
    """
    with store_errors(f"storing a verdict on {run_id}/{case_id}"):
        async with pool.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "SELECT r.requires_human_review, u.agent_id, r.input, r.response, r.status, "
                "r.review_reasons FROM eval_results r JOIN eval_runs u USING (run_id) "
                "WHERE r.run_id = $1 AND r.case_id = $2", run_id, case_id)
            if row is None:
                raise ReviewNotFound(f"run {run_id} has no case {case_id!r}")
            if not row["requires_human_review"]:
                raise ReviewInputError([FieldProblem(
                    "case_id", "a case marked requires_human_review", case_id)])
            stored = await conn.fetchrow(
                "INSERT INTO eval_human_reviews (run_id, case_id, reviewer, reviewer_role, "
                "criteria, score, note) VALUES ($1, $2, $3, $4, $5, $6, $7) "
                "ON CONFLICT DO NOTHING RETURNING run_id, case_id, reviewer, reviewer_role, "
                "criteria, score, note, reviewed_at", run_id, case_id, reviewer.name,
                reviewer.role, dict(criteria), score, note)
            if stored is None:
                raise ReviewConflict(
                    f"{reviewer.name} already gave a verdict on {run_id}/{case_id}",
                    {"run_id": str(run_id), "case_id": case_id})
            await _record(conn, agent_id=row["agent_id"] or "", kind="eval_case",
                          item_id=f"{run_id}/{case_id}", action="verdict", reviewer=reviewer,
                          before=None, after={"criteria": dict(criteria), "score": score,
                                              "note": note},
                          evidence={"input": row["input"], "response": row["response"],
                                    "status": row["status"],
                                    "review_reasons": list(row["review_reasons"])})
    return _obj(stored)


async def human_labels(pool: asyncpg.Pool, *, agent_id: str | None = None
                       ) -> list[dict[str, Any]]:
    """Every human verdict with its case's input and response: the labels a judge calibrates
    on (``docs/review.md#eval-human-review``).

    Returns:
        ``run_id, case_id, agent_id, input, response, expected_behavior, criteria, score,
        note, reviewer, reviewed_at`` per verdict, oldest first, with what the judge was shown
        for the case: ``retrieved_context`` (passage ids the agent said it retrieved, or
        ``None``), and the golden case's ``context_chunks`` and ``expected_answer`` (``None``
        when the run's golden-set version does not hold the case).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with store_errors("reading human labels"):
        rows = await pool.fetch(
            "SELECT h.run_id, h.case_id, u.agent_id, r.input, r.response, r.expected_behavior, "
            "h.criteria, h.score, h.note, h.reviewer, h.reviewed_at, r.retrieved_context, "
            "g.context_chunks, g.expected_answer FROM eval_human_reviews h "
            "JOIN eval_results r USING (run_id, case_id) JOIN eval_runs u USING (run_id) "
            "LEFT JOIN golden_cases g ON g.version_id = u.golden_set_version_id "
            "AND g.case_id = h.case_id "
            "WHERE $1::text IS NULL OR u.agent_id = $1 ORDER BY h.reviewed_at, h.run_id, "
            "h.case_id, h.reviewer", agent_id)
    return [jsonable(r) for r in rows]
