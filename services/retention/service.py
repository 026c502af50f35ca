"""Retention: every ``retention.interval_s`` seconds, delete what is older than the retention
settings allow (``docs/security.md#retention``; :func:`evalloop.adapters.privacy_store.prune`).

The loop is supervised by itself: a failed run (database down, anything unexpected) is logged
with its cause and retried with exponential backoff (5 s doubling up to ``interval_s``), so the
task never dies in silence; ``describe()`` reports the last run, its counts and the last error.
Consumes nothing; publishes nothing.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Any

from evalloop.adapters.privacy_store import prune
from evalloop.events import utc_now
from evalloop.runtime import Deps, Service

__all__ = ["RetentionService"]

log = logging.getLogger("evalloop.retention")


class RetentionService(Service):
    """Periodic pruning of events, monitor turns, triage cases and results.

    Attributes:
        runs: completed pruning runs.
        last_run_at: when the last run finished (UTC), or ``None``.
        last_deleted: rows deleted per table by the last run.
        last_error: the last failure's message (cleared by a successful run).
    """

    name = "retention"

    def __init__(self, deps: Deps) -> None:
        """Keep the deps; ``deps.extras["clock"]`` may replace the wall clock (tests)."""
        super().__init__(deps)
        self.cfg = deps.settings.retention
        self.clock = deps.extras.get("clock", utc_now)
        self.runs = 0
        self.last_run_at: datetime | None = None
        self.last_deleted: dict[str, int] = {}
        self.last_error: str | None = None

    async def start(self) -> None:
        """Start the pruning loop (first run at once)."""
        self.start_background(self._loop, name="retention")

    async def run_once(self) -> dict[str, int]:
        """Prune now; returns rows deleted per table.

        Raises:
            StorageError: PostgreSQL failed.
        """
        deleted = await prune(self.deps.pool, self.cfg, now=self.clock())
        self.runs += 1
        self.last_run_at = self.clock()
        self.last_deleted = deleted
        self.last_error = None
        if any(deleted.values()):
            log.info("retention: pruned %s", ", ".join(f"{t} {n}" for t, n in deleted.items()
                                                        if n))
        return deleted

    async def _loop(self) -> None:
        backoff = 5.0
        while True:
            try:
                await self.run_once()
                backoff = 5.0
                await asyncio.sleep(self.cfg.interval_s)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # supervised: log with context, back off, go on
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("retention: pruning failed; retrying in %.0f s", backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, self.cfg.interval_s)

    def describe(self) -> dict[str, Any]:
        """Health: runs, last run time, last counts, last error."""
        return {
            "runs": self.runs,
            "last_run_at": self.last_run_at.isoformat() if self.last_run_at else None,
            "last_deleted": self.last_deleted, "last_error": self.last_error,
        }
