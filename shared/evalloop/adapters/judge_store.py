"""PostgreSQL store of the judge: the judgement cache and calibration records (migration 0008).

asyncpg errors become :class:`~evalloop.errors.StorageError` here, in one place.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import asyncpg

from evalloop.adapters.postgres import storage_errors
from evalloop.core.judge.cache import CachedRaw, CacheKey
from evalloop.core.judge.calibration import CalibrationRecord
from evalloop.core.judge.types import DIMENSIONS, Dimension, UnscoredReason
from evalloop.errors import StorageError

__all__ = ["PgJudgementCache", "latest_calibration", "save_calibration"]

T = TypeVar("T")


async def _guard(what: str, call: Callable[[], Awaitable[T]]) -> T:
    with storage_errors(f"judge store: {what}"):
        return await call()


class PgJudgementCache:
    """The :class:`~evalloop.core.judge.cache.JudgementCache` on table ``judge_cache``.

    Args:
        pool: an asyncpg pool with the jsonb codec (``evalloop.adapters.postgres.connect_pool``).
    """

    def __init__(self, pool: asyncpg.Pool) -> None:
        self.pool = pool

    async def get(self, key: CacheKey) -> CachedRaw | None:
        """Return the cached raw judgement for ``key`` or ``None``.

        Raises:
            StorageError: the query failed.
        """
        row = await _guard(
            "reading the judgement cache",
            lambda: self.pool.fetchrow(
                """SELECT raw, unscored, prompt_tokens, completion_tokens FROM judge_cache
                   WHERE judge_model = $1 AND prompt_version = $2 AND case_id = $3
                     AND answer_sha256 = $4 AND input_sha256 = $5""",
                key.judge_model, key.prompt_version, key.case_id,
                key.answer_sha256, key.input_sha256,
            ),
        )  # fmt: skip
        if row is None:
            return None
        raw_json: dict[str, Any] = row["raw"]
        unscored_json: dict[str, Any] = row["unscored"]
        raw: dict[Dimension, float | None] = {}
        unscored: dict[Dimension, tuple[UnscoredReason, str]] = {}
        for dim in DIMENSIONS:
            value = raw_json.get(dim)
            raw[dim] = None if value is None else float(value)
            if dim in unscored_json:
                reason, detail = unscored_json[dim]
                unscored[dim] = (reason, str(detail))
        return CachedRaw(raw, unscored, row["prompt_tokens"], row["completion_tokens"])

    async def put(self, key: CacheKey, value: CachedRaw) -> None:
        """Store ``value`` under ``key``; an existing row is kept (first write wins).

        Raises:
            StorageError: the statement failed.
        """
        await _guard(
            "writing the judgement cache",
            lambda: self.pool.execute(
                """INSERT INTO judge_cache (judge_model, prompt_version, case_id, answer_sha256,
                       input_sha256, raw, unscored, prompt_tokens, completion_tokens)
                   VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING""",
                key.judge_model, key.prompt_version, key.case_id, key.answer_sha256,
                key.input_sha256, dict(value.raw),
                {d: [r, detail] for d, (r, detail) in value.unscored.items()},
                value.prompt_tokens, value.completion_tokens,
            ),
        )  # fmt: skip


async def save_calibration(pool: asyncpg.Pool, record: CalibrationRecord) -> None:
    """Insert ``record`` into ``judge_calibrations`` (same id again: kept as it was).

    Raises:
        StorageError: the statement failed.
    """
    await _guard(
        "saving a calibration record",
        lambda: pool.execute(
            """INSERT INTO judge_calibrations (calibration_id, judge_model, prompt_version,
                   record) VALUES ($1, $2, $3, $4) ON CONFLICT (calibration_id) DO NOTHING""",
            record.calibration_id, record.judge_model, record.prompt_version, record.as_dict(),
        ),
    )  # fmt: skip


async def latest_calibration(
    pool: asyncpg.Pool, judge_model: str, prompt_version: str
) -> CalibrationRecord | None:
    """The newest stored record for this model and prompt version, or ``None``.

    Raises:
        StorageError: the query failed, or the stored record is malformed.
    """
    row = await _guard(
        "reading calibration records",
        lambda: pool.fetchrow(
            """SELECT record FROM judge_calibrations WHERE judge_model = $1
                 AND prompt_version = $2 ORDER BY created_at DESC LIMIT 1""",
            judge_model, prompt_version,
        ),
    )  # fmt: skip
    if row is None:
        return None
    try:
        return CalibrationRecord.from_dict(row["record"])
    except ValueError as exc:
        raise StorageError(f"stored calibration record is malformed: {exc}") from exc
