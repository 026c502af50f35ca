"""Publish ``golden.set.published.v1`` from the golden-set outbox (``docs/review.md#publication``).

A review action that makes a golden-set version writes one ``golden_outbox`` row in the same
transaction (migration 0007), so a version exists if and only if its announcement is queued.
:func:`publish_pending` sends the queued rows and stamps them, holding their row locks
(``FOR UPDATE SKIP LOCKED``) until the bus acknowledged: two publishers never send the same
version, and a version stamped as published is never sent again. Only a crash between the bus's
acknowledgement and the commit re-sends a version; consumers key on ``version_id``.
"""

from __future__ import annotations

import asyncpg

from evalloop.adapters.bus import Bus
from evalloop.adapters.review_store import mark_outbox_published, outbox_pending
from evalloop.adapters.triage_store import store_errors
from evalloop.events import GoldenSetPublished, dump_event

__all__ = ["publish_pending"]


async def publish_pending(pool: asyncpg.Pool, bus: Bus, topic: str, *, limit: int = 100
                          ) -> list[GoldenSetPublished]:
    """Send every unpublished version (oldest first, at most ``limit``) and mark it published.

    Args:
        pool: asyncpg pool.
        bus: where to publish (Kafka or the in-process bus); key = ``agent_id``.
        topic: ``topics.golden_set_published``.
        limit: rows per call.

    Returns:
        The events sent.

    Raises:
        BusError: the bus refused (nothing is stamped; the next call sends them again).
        StorageError: PostgreSQL failed.
    """
    with store_errors("publishing golden-set versions"):
        async with pool.acquire() as conn, conn.transaction():
            rows = await outbox_pending(conn, limit)
            if not rows:
                return []
            sent = [GoldenSetPublished.model_validate(r["payload"]) for r in rows]
            await bus.publish_batch(topic, [(e.agent_id, dump_event(e)) for e in sent])
            await mark_outbox_published(conn, [r["version_id"] for r in rows])
    return sent
