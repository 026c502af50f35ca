"""Human review verdicts as calibration labels, read from PostgreSQL read-only
(``evalloop judge calibrate --reviews-dsn``; ``docs/judge.md#human-review-verdicts``).

The verdicts are the ones the review side stores (``eval_human_reviews``,
``docs/review.md#eval-human-review``), read through
:func:`evalloop.adapters.review_store.human_labels` on a connection whose transactions are
read-only (``default_transaction_read_only``): calibrating never writes to that database.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import asyncpg

from evalloop.adapters.judge_labels import LabelledItem, review_items
from evalloop.adapters.postgres import init_connection, storage_errors
from evalloop.adapters.review_store import human_labels
from evalloop.core.judge.types import Passage
from evalloop.core.redaction import redact_url

__all__ = ["ReviewLabels", "load_review_labels", "open_read_only"]


@dataclass(frozen=True, slots=True)
class ReviewLabels:
    """What the review database held.

    Attributes:
        verdicts: verdict rows found (one per reviewer and case).
        cases: distinct judged cases among them.
        items: the labelled items they give (:func:`~evalloop.adapters.judge_labels.review_items`).
    """

    verdicts: int
    cases: int
    items: list[LabelledItem]


async def open_read_only(dsn: str) -> asyncpg.Pool:
    """A one-connection pool on ``dsn`` whose transactions are read-only (a write fails with
    ``ReadOnlySQLTransactionError``), with the jsonb codec installed.

    Raises:
        StorageError: the server is unreachable or refused the login.
    """
    with storage_errors(f"reading review verdicts at {redact_url(dsn)}"):
        pool = await asyncpg.create_pool(
            dsn,
            min_size=1,
            max_size=1,
            init=init_connection,
            server_settings={"default_transaction_read_only": "on"},
        )
    assert pool is not None
    return pool


async def load_review_labels(
    dsn: str,
    *,
    passages: Callable[[Sequence[str]], Sequence[Passage]] | None = None,
    agent_id: str | None = None,
) -> ReviewLabels:
    """Read every human verdict (of ``agent_id``, or all agents) and map it to labelled items.

    Args:
        dsn: PostgreSQL DSN of the evalloop database holding the verdicts (opened read-only;
            it must be migrated: nothing is created).
        passages: passage ids -> passages with text (``None``: no passage text is known).
        agent_id: only this agent's runs (``None``: all).

    Returns:
        The counts and items (zero verdicts is a valid answer, not an error).

    Raises:
        StorageError: the server is unreachable, refused the login, or has no verdict table.
    """
    pool = await open_read_only(dsn)
    try:
        rows = await human_labels(pool, agent_id=agent_id)
    finally:
        await pool.close()
    cases = {(str(r["run_id"]), str(r["case_id"])) for r in rows}
    return ReviewLabels(len(rows), len(cases), review_items(rows, passages))
