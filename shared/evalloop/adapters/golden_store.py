"""PostgreSQL store of golden sets (immutable versions), evaluation runs, and the agent registry.

Tables: migration 0004. asyncpg errors are mapped to :class:`~evalloop.errors.StorageError`;
a missing version is a :class:`~evalloop.errors.GoldenSetError`.

Versioning (docs/rules.md#golden-set-format): importing a file stores a **new immutable version**
whose
parent is the previous one, with a diff (added / removed / changed case ids) and a content hash;
importing content identical to the latest version stores nothing and says so. Concurrent imports
of one set take turns on the ``golden_sets`` row lock, so versions are gap-free.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID, uuid4

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.core.evaluation.cases import EvalCase, EvalSet
from evalloop.core.evaluation.results import (
    AgentFailure,
    CaseResult,
    EvalRun,
    FlagRecord,
    GateRecord,
    RunSummary,
)
from evalloop.core.redaction import redact_url, strip_credentials
from evalloop.errors import ConfigError, GoldenSetError, StorageError

log = logging.getLogger(__name__)

__all__ = [
    "ERASED_MARKER",
    "AgentRecord",
    "GoldenVersion",
    "ImportOutcome",
    "RunRow",
    "VersionCheck",
    "content_hash",
    "diff_cases",
    "get_agent",
    "get_golden_version",
    "import_golden_set",
    "known_agent_ids",
    "latest_cases",
    "list_agents",
    "list_eval_runs",
    "list_golden_versions",
    "load_cases_on",
    "load_eval_run",
    "load_golden_cases",
    "redact_cases",
    "redact_results",
    "save_eval_run",
    "start_eval_run",
    "store_version",
    "upsert_agent",
    "verify_versions",
]


@dataclass(frozen=True, slots=True)
class GoldenVersion:
    """One stored, immutable golden-set version.

    Attributes:
        version_id: primary key (runs pin this).
        agent_id, golden_set_id, version: the natural key; versions count from 1.
        parent_version_id: the previous version, ``None`` for version 1.
        created_at: UTC. created_by: who imported it. source: file name imported.
        diff: ``{"added": [...], "removed": [...], "changed": [...]}`` case ids vs the parent.
        content_hash: SHA-256 hex of the canonical cases (:func:`content_hash`).
        case_count: number of cases.
    """

    version_id: UUID
    agent_id: str
    golden_set_id: str
    version: int
    parent_version_id: UUID | None
    created_at: datetime
    created_by: str | None
    source: str | None
    diff: dict[str, list[str]]
    content_hash: str
    case_count: int


@dataclass(frozen=True, slots=True)
class ImportOutcome:
    """Result of an import: the version that now holds the content, and whether it is new
    (``False``: identical to the latest version, nothing stored)."""

    version: GoldenVersion
    created: bool


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """An agent registry row.

    Attributes:
        agent_id: the agent.
        endpoint_url: where it answers (POST).
        auth_header_name: e.g. ``Authorization``; ``None`` = no auth header.
        auth_header_value_env: the *name* of the environment variable holding the header
            value (secrets are never stored).
        response_format: ``auto`` or a format hint (see ``extract.format_hint``).
        updated_at: last change, UTC (``None`` before it is stored).
    """

    agent_id: str
    endpoint_url: str
    auth_header_name: str | None = None
    auth_header_value_env: str | None = None
    response_format: str = "auto"
    updated_at: datetime | None = None

    def headers(self, environ: Mapping[str, str] | None = None) -> dict[str, str]:
        """Build the request headers, reading the secret from the environment now.

        Args:
            environ: the environment (default ``os.environ``).

        Raises:
            ConfigError: the named environment variable is unset or empty.
        """
        if not self.auth_header_name or not self.auth_header_value_env:
            return {}
        env = os.environ if environ is None else environ
        value = env.get(self.auth_header_value_env)
        if not value:
            raise ConfigError(f"agent {self.agent_id!r}: environment variable "
                              f"{self.auth_header_value_env} (value of header "
                              f"{self.auth_header_name}) is not set")
        return {self.auth_header_name: value}


# --------------------------------------------------------------------------- hashing and diffs


def _canonical(case: EvalCase) -> dict[str, Any]:
    return case.model_dump(mode="json")


def content_hash(cases: tuple[EvalCase, ...] | list[EvalCase]) -> str:
    """SHA-256 hex of the cases' canonical JSON, sorted by case id (order is not content)."""
    doc = sorted((_canonical(c) for c in cases), key=lambda d: d["id"])
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":"))
                          .encode()).hexdigest()


def diff_cases(old: tuple[EvalCase, ...] | list[EvalCase],
               new: tuple[EvalCase, ...] | list[EvalCase]) -> dict[str, list[str]]:
    """Case ids added, removed and changed from ``old`` to ``new`` (each list sorted)."""
    before = {c.id: _canonical(c) for c in old}
    after = {c.id: _canonical(c) for c in new}
    return {
        "added": sorted(set(after) - set(before)),
        "removed": sorted(set(before) - set(after)),
        "changed": sorted(k for k in set(before) & set(after) if before[k] != after[k]),
    }


# --------------------------------------------------------------------------- golden sets

_VERSION_COLS = ("version_id, agent_id, golden_set_id, version, parent_version_id, created_at, "
                 "created_by, source, diff, content_hash, case_count")


def _version(row: asyncpg.Record) -> GoldenVersion:
    return GoldenVersion(**dict(row))


def _case(row: asyncpg.Record) -> EvalCase:
    return EvalCase(
        id=row["case_id"], input=row["question"], expected_answer=row["expected_answer"],
        context_chunks=tuple(row["context_chunks"]), tags=tuple(row["tags"]),
        difficulty=row["difficulty"], should_refuse=row["should_refuse"],
        should_escalate=row["should_escalate"], category=row["category"],
        expected_behavior=row["expected_behavior"], notes=row["notes"],
        created_by=row["created_by"], created_at=row["created_at"])


async def _cases_of(conn: asyncpg.Connection, version_id: UUID) -> tuple[EvalCase, ...]:
    rows = await conn.fetch("SELECT * FROM golden_cases WHERE version_id = $1 ORDER BY position",
                            version_id)
    return tuple(_case(r) for r in rows)


async def load_cases_on(conn: asyncpg.Connection, version_id: UUID) -> tuple[EvalCase, ...]:
    """The cases of one version, in file order, read on the caller's connection."""
    return await _cases_of(conn, version_id)


async def import_golden_set(pool: asyncpg.Pool, eval_set: EvalSet, *, agent_id: str,
                            golden_set_id: str | None = None, created_by: str | None = None,
                            source: str | None = None) -> ImportOutcome:
    """Store ``eval_set`` as the next version of ``agent_id``'s golden set.

    Args:
        pool: asyncpg pool (jsonb codec installed).
        eval_set: the loaded file.
        agent_id: the agent the set belongs to.
        golden_set_id: the set's id; default ``eval_set.set_id``.
        created_by: recorded on the version.
        source: file name recorded on the version; default ``eval_set.source``.

    Returns:
        The new version (``created=True``), or the latest one when the content is identical
        (``created=False``; nothing written).

    Raises:
        StorageError: PostgreSQL failed.
    """
    set_id = golden_set_id or eval_set.set_id
    with storage_errors(f"importing golden set {agent_id}/{set_id}"):
        async with pool.acquire() as conn, conn.transaction():
            return await store_version(conn, agent_id=agent_id, golden_set_id=set_id,
                                       cases=eval_set.cases, created_by=created_by,
                                       source=source or eval_set.source)


async def latest_cases(conn: asyncpg.Connection, agent_id: str, golden_set_id: str, *,
                       lock: bool = False) -> tuple[GoldenVersion | None, tuple[EvalCase, ...]]:
    """The latest version of a set and its cases (``(None, ())`` when the set has none).

    Args:
        conn: a connection; with ``lock=True`` it must be in a transaction, and the set's row
            stays locked until it ends (the caller will add a version).
    """
    if lock:
        await conn.execute(
            "INSERT INTO golden_sets (agent_id, golden_set_id) VALUES ($1, $2) "
            "ON CONFLICT DO NOTHING", agent_id, golden_set_id)
    latest = await conn.fetchval(
        "SELECT latest_version FROM golden_sets WHERE agent_id = $1 AND golden_set_id = $2"
        + (" FOR UPDATE" if lock else ""), agent_id, golden_set_id)
    if not latest:
        return None, ()
    row = await conn.fetchrow(
        f"SELECT {_VERSION_COLS} FROM golden_set_versions WHERE agent_id = $1 "
        "AND golden_set_id = $2 AND version = $3", agent_id, golden_set_id, latest)
    if row is None:
        return None, ()
    return _version(row), await _cases_of(conn, row["version_id"])


async def store_version(conn: asyncpg.Connection, *, agent_id: str, golden_set_id: str,
                        cases: tuple[EvalCase, ...] | list[EvalCase],
                        created_by: str | None = None, source: str | None = None
                        ) -> ImportOutcome:
    """Store ``cases`` as the next version of a set, inside the caller's transaction.

    Takes the set's row lock (versions stay gap-free under concurrent writers); the parent is
    the latest version and the diff is taken against it. Content identical to the latest
    version stores nothing (``created=False``). Used by :func:`import_golden_set` and by the
    review store (confirm, retire: ``docs/review.md``).

    Raises:
        Exception: the driver's errors (``postgres.DRIVER_ERRORS``), unmapped: the caller maps
            them (it owns the transaction).
    """
    digest = content_hash(cases)
    parent, old_cases = await latest_cases(conn, agent_id, golden_set_id, lock=True)
    if parent is not None and parent.content_hash == digest:
        return ImportOutcome(parent, created=False)
    diff = diff_cases(old_cases, cases)
    number = parent.version + 1 if parent else 1
    row = await conn.fetchrow(
        f"INSERT INTO golden_set_versions ({_VERSION_COLS}) "
        "VALUES ($1, $2, $3, $4, $5, now(), $6, $7, $8, $9, $10) "
        f"RETURNING {_VERSION_COLS}",
        uuid4(), agent_id, golden_set_id, number,
        parent.version_id if parent else None, created_by, source, diff, digest, len(cases))
    assert row is not None
    await conn.copy_records_to_table(
        "golden_cases", columns=[
            "version_id", "case_id", "position", "question", "expected_answer",
            "context_chunks", "tags", "difficulty", "should_refuse", "should_escalate",
            "category", "expected_behavior", "notes", "created_by", "created_at"],
        records=[(row["version_id"], c.id, i, c.input, c.expected_answer,
                  list(c.context_chunks), list(c.tags), c.difficulty, c.should_refuse,
                  c.should_escalate, c.category, c.expected_behavior, c.notes,
                  c.created_by, c.created_at) for i, c in enumerate(cases)])
    await conn.execute(
        "UPDATE golden_sets SET latest_version = $3 WHERE agent_id = $1 "
        "AND golden_set_id = $2", agent_id, golden_set_id, number)
    return ImportOutcome(_version(row), created=True)


#: What erasure leaves in place of a person's text in a golden case (``docs/security.md#erasure``).
ERASED_MARKER = "[erased]"


async def redact_cases(conn: asyncpg.Connection, cases: set[tuple[str, str, str]], *,
                       erase_id: UUID, at: datetime) -> int:
    """Replace the free text of golden cases with :data:`ERASED_MARKER` in every version of
    their set that holds them, inside the caller's (erasure) transaction.

    Question, expected answer, each context chunk, expected behaviour and notes become the
    marker (a NULL stays NULL, a list keeps its length); case ids, positions, flags, category,
    tags and the versions' diffs stay, so runs and diffs still line up. Each version's
    ``content_hash`` is recomputed and one ``golden_redactions`` row per (version, case) says
    when, by which erase request, and the hash before and after (``docs/security.md#erasure``).

    Args:
        conn: a connection in a transaction (the erasure's: it commits or rolls back with the
            deletions).
        cases: ``(agent_id, golden_set_id, case_id)`` of the cases to redact.
        erase_id: the erase request (recorded on each audit row).
        at: when (UTC).

    Returns:
        The number of (version, case) rows redacted.

    Raises:
        Exception: the driver's errors, unmapped: the caller owns the transaction.
    """
    by_set: dict[tuple[str, str], list[str]] = {}
    for agent_id, set_id, case_id in sorted(cases):
        by_set.setdefault((agent_id, set_id), []).append(case_id)
    if not by_set:
        return 0
    await conn.execute("SET LOCAL evalloop.erasure = 'on'")
    total = 0
    for (agent_id, set_id), case_ids in by_set.items():
        # the set's row lock: a confirm or retire of this set waits for the erasure
        await conn.execute("SELECT 1 FROM golden_sets WHERE agent_id = $1 AND golden_set_id = $2"
                           " FOR UPDATE", agent_id, set_id)
        versions = await conn.fetch(
            "SELECT v.version_id, v.content_hash FROM golden_set_versions v WHERE v.agent_id = $1"
            " AND v.golden_set_id = $2 AND EXISTS (SELECT 1 FROM golden_cases c WHERE"
            " c.version_id = v.version_id AND c.case_id = ANY($3::text[]))"
            " ORDER BY v.version", agent_id, set_id, case_ids)
        for v in versions:
            rows = await conn.fetch(
                "UPDATE golden_cases SET question = $3,"
                " expected_answer = CASE WHEN expected_answer IS NULL THEN NULL ELSE $3 END,"
                " context_chunks = array_fill($3::text, ARRAY[cardinality(context_chunks)]),"
                " expected_behavior = CASE WHEN expected_behavior IS NULL THEN NULL ELSE $3 END,"
                " notes = CASE WHEN notes IS NULL THEN NULL ELSE $3 END"
                " WHERE version_id = $1 AND case_id = ANY($2::text[]) RETURNING case_id",
                v["version_id"], case_ids, ERASED_MARKER)
            after = content_hash(await _cases_of(conn, v["version_id"]))
            await conn.execute("UPDATE golden_set_versions SET content_hash = $2"
                               " WHERE version_id = $1", v["version_id"], after)
            await conn.executemany(
                "INSERT INTO golden_redactions (erase_id, version_id, case_id, redacted_at,"
                " hash_before, hash_after) VALUES ($1, $2, $3, $4, $5, $6)",
                [(erase_id, v["version_id"], r["case_id"], at, v["content_hash"], after)
                 for r in sorted(rows, key=lambda r: r["case_id"])])
            total += len(rows)
    return total


def _erase_values(doc: Any, key: str) -> Any:
    """``doc`` (a dict) with ``doc[key]`` replaced by the marker where it is not null."""
    if isinstance(doc, dict) and doc.get(key) is not None:
        return {**doc, key: ERASED_MARKER}
    return doc


def _redact_result_docs(gates: Any, flag_details: Any, error: Any, judge: Any
                        ) -> tuple[Any, Any, Any, Any]:
    """The free text of one result's documents replaced by :data:`ERASED_MARKER`: each gate's
    ``evidence`` and ``reason``, each flag's ``detail``, the failure's ``message``, the judge's
    ``reasons`` and ``raw`` verdicts; names, booleans, scores and ids stay."""
    if isinstance(gates, dict):
        gates = {g: _erase_values(_erase_values(d, "evidence"), "reason")
                 for g, d in gates.items()}
    if isinstance(flag_details, list):
        flag_details = [_erase_values(f, "detail") for f in flag_details]
    error = _erase_values(error, "message")
    if isinstance(judge, dict):
        judge = dict(judge)
        for key in ("reasons", "raw"):
            if isinstance(judge.get(key), dict):
                judge[key] = {d: None if v is None else ERASED_MARKER
                              for d, v in judge[key].items()}
    return gates, flag_details, error, judge


async def redact_results(conn: asyncpg.Connection, *, erase_id: UUID) -> int:
    """Redact the eval results of every run over a golden-set version whose case the erase
    request ``erase_id`` redacted (its ``golden_redactions`` rows), inside the caller's
    transaction.

    ``input`` (the question), ``expected_behavior`` and ``response`` (the agent's answer)
    become :data:`ERASED_MARKER` (a NULL stays NULL), and so does the free text of the result's
    documents: each gate's evidence and reason, each flag's detail, the failure message, the
    judge's reasons and raw verdicts; the ``hallucination_claims`` of those results lose their
    claim, reason and correction (the nearest passage is the knowledge base's, not the
    person's). Status, flags, scores, composite, latency and the retrieved passage ids stay, so
    run summaries and comparisons do not change (``docs/security.md#erasure``).

    Returns:
        The number of ``eval_results`` rows redacted (their claims are not counted apart).

    Raises:
        Exception: the driver's errors, unmapped: the caller owns the transaction.
    """
    rows = await conn.fetch(
        "SELECT r.run_id, r.case_id, r.gates, r.flag_details, r.error, r.judge"
        " FROM eval_results r JOIN eval_runs e USING (run_id)"
        " WHERE (e.golden_set_version_id, r.case_id) IN (SELECT g.version_id, g.case_id"
        "  FROM golden_redactions g WHERE g.erase_id = $1)"
        " ORDER BY r.run_id, r.case_id FOR UPDATE OF r", erase_id)
    await conn.executemany(
        "UPDATE eval_results SET input = $3,"
        " expected_behavior = CASE WHEN expected_behavior IS NULL THEN NULL ELSE $3 END,"
        " response = CASE WHEN response IS NULL THEN NULL ELSE $3 END,"
        " gates = $4, flag_details = $5, error = $6, judge = $7"
        " WHERE run_id = $1 AND case_id = $2",
        [(r["run_id"], r["case_id"], ERASED_MARKER,
          *_redact_result_docs(r["gates"], r["flag_details"], r["error"], r["judge"]))
         for r in rows])
    # the claims split from those answers (with the judge's reason and suggested correction)
    await conn.execute(
        "UPDATE hallucination_claims SET claim = $3, reason = $3,"
        " correction = CASE WHEN correction IS NULL THEN NULL ELSE $3 END"
        " WHERE (run_id, case_id) IN (SELECT * FROM unnest($1::uuid[], $2::text[]))",
        [r["run_id"] for r in rows], [r["case_id"] for r in rows], ERASED_MARKER)
    return len(rows)


@dataclass(frozen=True, slots=True)
class VersionCheck:
    """One version's stored content checked against its ``content_hash``.

    Attributes:
        agent_id, golden_set_id, version: the version.
        status: ``intact`` (hash matches, never redacted), ``redacted`` (hash matches the
            content an erasure left; ``redactions`` says when and what) or ``mismatch`` (the
            content is not what its hash says: changed outside evalloop).
        stored_hash, actual_hash: the version's ``content_hash`` and the hash of its cases now.
        redactions: ``[{"erase_id", "redacted_at" (UTC ISO), "case_ids", "hash_before"}]``,
            oldest first, one per erase request.
        message: one line for people, e.g. ``redacted by erasure on 2026-11-30 (1 case: fb-1)``.
    """

    agent_id: str
    golden_set_id: str
    version: int
    status: str
    stored_hash: str
    actual_hash: str
    redactions: list[dict[str, Any]]
    message: str


async def verify_versions(pool: asyncpg.Pool, agent_id: str | None = None
                          ) -> list[VersionCheck]:
    """Recompute every version's content hash (of one agent, or all) and explain changes.

    A version erasure redacted carries the hash of its redacted content, and its
    ``golden_redactions`` rows name the request, the date and the hash before
    (``docs/security.md#erasure``); any other difference is a ``mismatch``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    out: list[VersionCheck] = []
    with storage_errors("verifying golden sets"):
        async with pool.acquire() as conn:
            versions = await conn.fetch(
                "SELECT version_id, agent_id, golden_set_id, version, content_hash"
                " FROM golden_set_versions WHERE $1::text IS NULL OR agent_id = $1"
                " ORDER BY agent_id, golden_set_id, version", agent_id)
            for v in versions:
                actual = content_hash(await _cases_of(conn, v["version_id"]))
                rows = await conn.fetch(
                    "SELECT erase_id, min(redacted_at) AS at, array_agg(case_id ORDER BY"
                    " case_id) AS case_ids, min(hash_before) AS hash_before"
                    " FROM golden_redactions WHERE version_id = $1 GROUP BY erase_id"
                    " ORDER BY 2, 1", v["version_id"])
                redactions = [{"erase_id": str(r["erase_id"]),
                               "redacted_at": r["at"].isoformat(),
                               "case_ids": list(r["case_ids"]),
                               "hash_before": r["hash_before"]} for r in rows]
                erased = "; ".join(
                    f"redacted by erasure on {r['at']:%Y-%m-%d} ({len(r['case_ids'])} case"
                    f"{'s' if len(r['case_ids']) != 1 else ''}: {', '.join(r['case_ids'])})"
                    for r in rows)
                if actual != v["content_hash"]:
                    status = "mismatch"
                    message = ("content does not match its stored hash: changed outside "
                               "evalloop" + (f" (earlier: {erased})" if erased else ""))
                elif rows:
                    status, message = "redacted", erased
                else:
                    status, message = "intact", "content matches its hash"
                out.append(VersionCheck(v["agent_id"], v["golden_set_id"], v["version"],
                                        status, v["content_hash"], actual, redactions,
                                        message))
    return out


async def list_golden_versions(pool: asyncpg.Pool, agent_id: str | None = None
                               ) -> list[GoldenVersion]:
    """Every stored version (of one agent, or all), by agent, set and version.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("listing golden sets"):
        rows = await pool.fetch(
            f"SELECT {_VERSION_COLS} FROM golden_set_versions "
            "WHERE $1::text IS NULL OR agent_id = $1 "
            "ORDER BY agent_id, golden_set_id, version", agent_id)
    return [_version(r) for r in rows]


async def get_golden_version(pool: asyncpg.Pool, agent_id: str, *, version: int | None = None,
                             golden_set_id: str | None = None,
                             version_id: UUID | None = None) -> GoldenVersion:
    """Find one stored version: by ``version_id``, or by agent (+ set) and number (default: the
    latest).

    Raises:
        GoldenSetError: no such version, or the agent has several sets and none was named
            (the message lists them).
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"reading golden set of {agent_id}"):
        if version_id is not None:
            row = await pool.fetchrow(
                f"SELECT {_VERSION_COLS} FROM golden_set_versions WHERE version_id = $1",
                version_id)
            if row is None:
                raise GoldenSetError(f"no golden-set version with id {version_id}")
            return _version(row)
        sets = await pool.fetch(
            "SELECT golden_set_id, latest_version FROM golden_sets WHERE agent_id = $1 "
            "AND ($2::text IS NULL OR golden_set_id = $2) ORDER BY golden_set_id",
            agent_id, golden_set_id)
        if not sets:
            what = f"golden set {golden_set_id!r}" if golden_set_id else "no golden set"
            raise GoldenSetError(f"agent {agent_id!r} has {what} stored"
                                 + (" (none stored)" if golden_set_id else
                                    "; import one with `evalloop golden import FILE --agent "
                                    f"{agent_id}`"))
        if len(sets) > 1:
            names = ", ".join(r["golden_set_id"] for r in sets)
            raise GoldenSetError(f"agent {agent_id!r} has several golden sets ({names}); "
                                 "name one with --set")
        number = version if version is not None else sets[0]["latest_version"]
        row = await pool.fetchrow(
            f"SELECT {_VERSION_COLS} FROM golden_set_versions WHERE agent_id = $1 "
            "AND golden_set_id = $2 AND version = $3", agent_id, sets[0]["golden_set_id"],
            number)
    if row is None:
        raise GoldenSetError(f"agent {agent_id!r} golden set {sets[0]['golden_set_id']!r} has "
                             f"no version {number} (latest is {sets[0]['latest_version']})")
    return _version(row)


async def load_golden_cases(pool: asyncpg.Pool, version_id: UUID) -> tuple[EvalCase, ...]:
    """The cases of one stored version, in file order.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"reading cases of version {version_id}"):
        async with pool.acquire() as conn:
            return await _cases_of(conn, version_id)


# --------------------------------------------------------------------------- evaluation runs


async def start_eval_run(pool: asyncpg.Pool, *, run_id: UUID, started_at: datetime,
                         source: str = "endpoint", agent_id: str | None = None,
                         job_id: UUID | None = None, golden_set_version_id: UUID | None = None,
                         endpoint: str | None = None, eval_source: str | None = None,
                         baseline_run_id: UUID | None = None) -> None:
    """Record a run as ``running`` before it starts (idempotent on ``run_id``).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"recording run {run_id}"):
        await pool.execute(
            "INSERT INTO eval_runs (run_id, job_id, agent_id, golden_set_version_id, endpoint, "
            "source, eval_source, started_at, status, baseline_run_id) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'running', $9) ON CONFLICT DO NOTHING",
            run_id, job_id, agent_id, golden_set_version_id, endpoint, source, eval_source,
            started_at, baseline_run_id)


async def save_eval_run(pool: asyncpg.Pool, run: EvalRun, *,
                        baseline_run_id: UUID | None = None) -> None:
    """Store a finished run and every case result in one transaction (idempotent: saving the
    same run again replaces its rows with the same values).

    The run's status is ``failed`` when its gate failed, else ``passed``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    status = "failed" if run.summary.gate_failed else "passed"
    rows = [(run.run_id, r.case_id, i, r.category, r.input, r.expected_behavior,
             r.should_refuse, r.should_escalate, r.status.value, r.response, r.response_format,
             r.latency_ms, r.attempts, {k: g.model_dump() for k, g in r.gates.items()},
             [f.name for f in r.flags], [f.model_dump() for f in r.flags],
             r.requires_human_review, r.review_reasons,
             r.error.model_dump() if r.error else None, r.scores or None, r.composite, r.judge,
             r.retrieved_context, r.context_chunks)
            for i, r in enumerate(run.results)]
    with storage_errors(f"storing run {run.run_id}"):
        async with pool.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO eval_runs (run_id, job_id, agent_id, golden_set_version_id, "
                "endpoint, source, eval_source, started_at, finished_at, status, summary, "
                "baseline_run_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) "
                "ON CONFLICT (run_id) DO UPDATE SET finished_at = EXCLUDED.finished_at, "
                "status = EXCLUDED.status, summary = EXCLUDED.summary, "
                "endpoint = EXCLUDED.endpoint, error = NULL, baseline_run_id = "
                "coalesce(EXCLUDED.baseline_run_id, eval_runs.baseline_run_id)",
                run.run_id, run.job_id, run.agent_id, run.golden_set_version_id, run.endpoint,
                run.source, run.eval_source, run.started_at, run.finished_at, status,
                run.summary.model_dump(mode="json"), baseline_run_id)
            await conn.execute("DELETE FROM eval_results WHERE run_id = $1", run.run_id)
            await conn.executemany(
                "INSERT INTO eval_results (run_id, case_id, position, category, input, "
                "expected_behavior, should_refuse, should_escalate, status, response, "
                "response_format, latency_ms, attempts, gates, flags, flag_details, "
                "requires_human_review, review_reasons, error, scores, composite, judge, "
                "retrieved_context, context_chunks) "
                "VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, "
                "$16, $17, $18, $19, $20, $21, $22, $23, $24)", rows)


def _result(row: asyncpg.Record) -> CaseResult:
    return CaseResult(
        case_id=row["case_id"], category=row["category"], input=row["input"],
        expected_behavior=row["expected_behavior"], should_refuse=row["should_refuse"],
        should_escalate=row["should_escalate"], response=row["response"],
        response_format=row["response_format"], latency_ms=row["latency_ms"],
        attempts=row["attempts"], status=row["status"],
        gates={k: GateRecord(**v) for k, v in row["gates"].items()},
        flags=[FlagRecord(**f) for f in row["flag_details"]],
        requires_human_review=row["requires_human_review"],
        review_reasons=list(row["review_reasons"]),
        error=AgentFailure(**row["error"]) if row["error"] else None,
        scores=row["scores"] or {}, composite=row["composite"], judge=row["judge"],
        retrieved_context=(None if row["retrieved_context"] is None
                           else list(row["retrieved_context"])),
        context_chunks=list(row["context_chunks"] or ()))


async def load_eval_run(pool: asyncpg.Pool, run_id: UUID) -> EvalRun | None:
    """Read a finished run back (``None`` if absent or still running).

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"reading run {run_id}"):
        run = await pool.fetchrow("SELECT * FROM eval_runs WHERE run_id = $1", run_id)
        if run is None or run["summary"] is None:
            return None
        rows = await pool.fetch("SELECT * FROM eval_results WHERE run_id = $1 ORDER BY position",
                                run_id)
    return EvalRun(
        run_id=run["run_id"], started_at=run["started_at"], finished_at=run["finished_at"],
        endpoint=run["endpoint"], source=run["source"], eval_source=run["eval_source"],
        agent_id=run["agent_id"], golden_set_version_id=run["golden_set_version_id"],
        job_id=run["job_id"], results=[_result(r) for r in rows],
        summary=RunSummary.model_validate(run["summary"]))


# --------------------------------------------------------------------------- agent registry


def _stored_url(agent_id: str, url: str) -> str:
    try:
        clean = strip_credentials(url)
    except ValueError as exc:
        raise StorageError(f"agent {agent_id}: endpoint URL cannot be parsed: {exc}") from exc
    if clean != url:
        log.warning("agent %s: credentials removed from its endpoint URL before storing it (%s);"
                    " name them with auth_header_name / auth_header_value_env",
                    agent_id, redact_url(url))
    return clean


async def upsert_agent(pool: asyncpg.Pool, record: AgentRecord) -> None:
    """Insert or replace an agent's registry row (``updated_at`` = now).

    Credentials in the URL (``user:pass@``, token parameters) are stripped before storing
    (``docs/security.md#secrets``): the registry names the header and the environment variable
    holding its value instead.

    Raises:
        StorageError: PostgreSQL failed (e.g. a header name without its env variable).
    """
    with storage_errors(f"storing agent {record.agent_id}"):
        await pool.execute(
            "INSERT INTO agents (agent_id, endpoint_url, auth_header_name, auth_header_value_env,"
            " response_format, updated_at) VALUES ($1, $2, $3, $4, $5, now()) "
            "ON CONFLICT (agent_id) DO UPDATE SET endpoint_url = EXCLUDED.endpoint_url, "
            "auth_header_name = EXCLUDED.auth_header_name, "
            "auth_header_value_env = EXCLUDED.auth_header_value_env, "
            "response_format = EXCLUDED.response_format, updated_at = now()",
            record.agent_id, _stored_url(record.agent_id, record.endpoint_url),
            record.auth_header_name, record.auth_header_value_env, record.response_format)


async def get_agent(pool: asyncpg.Pool, agent_id: str) -> AgentRecord | None:
    """The registry row of ``agent_id``, or ``None``.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"reading agent {agent_id}"):
        row = await pool.fetchrow("SELECT * FROM agents WHERE agent_id = $1", agent_id)
    return AgentRecord(**dict(row)) if row else None


async def list_agents(pool: asyncpg.Pool) -> list[AgentRecord]:
    """Every registered agent, by id.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("listing agents"):
        rows = await pool.fetch("SELECT * FROM agents ORDER BY agent_id")
    return [AgentRecord(**dict(r)) for r in rows]


# --------------------------------------------------------------------------- web app reads


async def known_agent_ids(pool: asyncpg.Pool) -> list[str]:
    """Every agent id any store knows (monitor, triage, golden sets, runs, the registry),
    sorted.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors("listing agents"):
        rows = await pool.fetch(
            """
            SELECT agent_id FROM monitor_state UNION SELECT agent_id FROM clusters
            UNION SELECT agent_id FROM review_queue UNION SELECT agent_id FROM golden_sets
            UNION SELECT agent_id FROM eval_runs WHERE agent_id IS NOT NULL
            UNION SELECT agent_id FROM agents ORDER BY 1
            """)
    return [r["agent_id"] for r in rows]


@dataclass(frozen=True, slots=True)
class RunRow:
    """One evaluation run as a list shows it (times UTC).

    Attributes:
        run_id, job_id: the run and the re-evaluation job that started it (``None`` by hand).
        status: running, passed, failed or error.
        golden_version: the golden-set version number it ran (``None`` for a file).
        summary: the run's ``RunSummary`` as JSON (``None`` while running).
        review_cases: cases marked ``requires_human_review``.
    """

    run_id: UUID
    job_id: UUID | None
    agent_id: str | None
    status: str
    started_at: datetime
    finished_at: datetime | None
    golden_set_id: str | None
    golden_version: int | None
    summary: dict[str, Any] | None
    review_cases: int
    error: str | None


async def list_eval_runs(pool: asyncpg.Pool, agent_id: str, limit: int = 100) -> list[RunRow]:
    """The newest ``limit`` runs of ``agent_id``, newest first.

    Raises:
        StorageError: PostgreSQL failed.
    """
    with storage_errors(f"listing runs of {agent_id}"):
        rows = await pool.fetch(
            """
            SELECT r.run_id, r.job_id, r.agent_id, r.status, r.started_at, r.finished_at,
                   v.golden_set_id, v.version AS golden_version, r.summary, r.error,
                   (SELECT count(*) FROM eval_results e WHERE e.run_id = r.run_id
                      AND e.requires_human_review)::int AS review_cases
            FROM eval_runs r
            LEFT JOIN golden_set_versions v ON v.version_id = r.golden_set_version_id
            WHERE r.agent_id = $1 ORDER BY r.started_at DESC, r.run_id LIMIT $2
            """, agent_id, limit)
    return [RunRow(**dict(r)) for r in rows]
