"""Per-key locks: serialise per key, and exist only while in use (bounded per-agent state)."""

from __future__ import annotations

import asyncio

from evalloop.locks import KeyedLocks


async def test_one_key_is_serialised_and_the_lock_is_dropped_after_use() -> None:
    locks = KeyedLocks()
    order: list[str] = []

    async def work(key: str, name: str) -> None:
        async with locks(key):
            order.append(f"{name}+")
            await asyncio.sleep(0.01)
            order.append(f"{name}-")

    async with asyncio.TaskGroup() as tg:
        tg.create_task(work("a", "1"))
        tg.create_task(work("a", "2"))
        tg.create_task(work("b", "3"))
        await asyncio.sleep(0)
        assert len(locks) == 2  # two keys in use
    assert order[:2] == ["1+", "3+"] and order.index("2+") > order.index("1-")
    assert len(locks) == 0


async def test_ten_thousand_agents_leave_no_locks_behind() -> None:
    locks = KeyedLocks()
    for i in range(10_000):
        async with locks(f"agent-{i}"):
            pass
    assert len(locks) == 0


async def test_a_failing_holder_releases_the_key() -> None:
    locks = KeyedLocks()
    try:
        async with locks("a"):
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert len(locks) == 0
    async with asyncio.timeout(1):
        async with locks("a"):
            pass
