"""Per-key asyncio locks that exist only while in use: per-agent locking is bounded by the
agents *being worked on*, not by every agent ever seen
(``docs/security.md#cost-amplification``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

__all__ = ["KeyedLocks"]


class KeyedLocks:
    """``async with locks(key):`` serialises work per key; a key's lock is dropped when its
    last holder or waiter leaves (``len(locks)`` = keys in use)."""

    def __init__(self) -> None:
        """No locks yet."""
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def __len__(self) -> int:
        """Keys whose lock is held or awaited now."""
        return len(self._locks)

    @contextlib.asynccontextmanager
    async def __call__(self, key: str) -> AsyncIterator[None]:
        """Hold ``key``'s lock for the block."""
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = asyncio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock_now, users_now = self._locks[key]
            if users_now <= 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock_now, users_now - 1)
