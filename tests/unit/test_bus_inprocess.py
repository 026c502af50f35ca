"""InProcessBus: order, consumer groups, redelivery on a raising handler, drain(), stop()."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from evalloop.adapters.bus import InProcessBus, Record
from evalloop.errors import BusError


@pytest.fixture
async def bus() -> AsyncIterator[InProcessBus]:
    """A bus whose run() loop is driven in a task for the test's duration."""
    b = InProcessBus(retry_delay_s=0.0, max_attempts=3)
    async with asyncio.TaskGroup() as tg:
        runner = tg.create_task(b.run())
        yield b
        b.stop()
        await runner


async def test_delivers_in_publish_order_with_keys_headers_offsets(bus: InProcessBus) -> None:
    seen: list[Record] = []

    async def handler(records: list[Record]) -> None:
        seen.extend(records)

    bus.subscribe("t", "g", handler)
    await bus.publish("t", b"a", key="k1", headers={"h": "1"})
    await bus.publish_batch("t", [("k2", b"b"), (None, b"c")])
    await bus.drain(timeout_s=5)
    assert [(r.key, r.value, r.offset) for r in seen] == [
        ("k1", b"a", 0), ("k2", b"b", 1), (None, b"c", 2)
    ]
    assert seen[0].headers == {"h": b"1"}
    assert {r.topic for r in seen} == {"t"}
    assert bus.lag() == 0


async def test_each_group_sees_every_message_and_topics_are_separate(bus: InProcessBus) -> None:
    got: dict[str, list[bytes]] = {"g1": [], "g2": [], "other": []}

    def collect(name: str):
        async def handler(records: list[Record]) -> None:
            got[name].extend(r.value for r in records)
        return handler

    bus.subscribe("t", "g1", collect("g1"))
    bus.subscribe("t", "g2", collect("g2"))
    bus.subscribe("u", "g1", collect("other"))
    for i in range(5):
        await bus.publish("t", str(i).encode())
    await bus.drain(timeout_s=5)
    assert got == {"g1": [b"0", b"1", b"2", b"3", b"4"], "g2": [b"0", b"1", b"2", b"3", b"4"],
                   "other": []}


async def test_batches_respect_max_records(bus: InProcessBus) -> None:
    sizes: list[int] = []

    async def handler(records: list[Record]) -> None:
        sizes.append(len(records))

    for i in range(7):
        await bus.publish("t", str(i).encode())
    bus.subscribe("t", "g", handler, max_records=3)
    await bus.drain(timeout_s=5)
    assert sizes == [3, 3, 1]


async def test_raising_handler_gets_the_same_batch_again_and_offset_waits(
    bus: InProcessBus,
) -> None:
    deliveries: list[list[bytes]] = []

    async def flaky(records: list[Record]) -> None:
        deliveries.append([r.value for r in records])
        if len(deliveries) == 1:
            assert bus.lag() == 2  # nothing committed while the handler runs
            raise RuntimeError("transient")

    await bus.publish_batch("t", [("a", b"1"), ("a", b"2")])
    bus.subscribe("t", "g", flaky)
    await bus.drain(timeout_s=5)
    assert deliveries == [[b"1", b"2"], [b"1", b"2"]]
    assert bus.lag() == 0


async def test_handler_failing_every_attempt_crashes_run() -> None:
    b = InProcessBus(retry_delay_s=0.0, max_attempts=3)
    calls = 0

    async def broken(records: list[Record]) -> None:
        nonlocal calls
        calls += 1
        raise ValueError("poison")

    b.subscribe("t", "g", broken)
    await b.publish("t", b"x")
    with pytest.raises(ValueError, match="poison"):
        await asyncio.wait_for(b.run(), timeout=5)
    assert calls == 3
    assert b.lag() == 1  # the failed batch was never committed


async def test_drain_includes_messages_published_by_handlers(bus: InProcessBus) -> None:
    downstream: list[bytes] = []

    async def relay(records: list[Record]) -> None:
        for r in records:
            await bus.publish("out", r.value.upper(), key=r.key)

    async def sink(records: list[Record]) -> None:
        downstream.extend(r.value for r in records)

    bus.subscribe("in", "relay", relay)
    bus.subscribe("out", "sink", sink)
    await bus.publish_batch("in", [("k", b"x"), ("k", b"y")])
    await bus.drain(timeout_s=5)
    assert downstream == [b"X", b"Y"]
    assert bus.messages("out")[1].value == b"Y"
    assert bus.topic_size("in") == 2


async def test_drain_times_out_when_a_subscription_cannot_catch_up() -> None:
    b = InProcessBus()  # run() not started: nothing is consumed
    b.subscribe("t", "g", lambda records: asyncio.sleep(0))
    await b.publish("t", b"x")
    with pytest.raises(TimeoutError):
        await b.drain(timeout_s=0.05)


async def test_publish_rejects_non_bytes_naming_the_type() -> None:
    b = InProcessBus()
    with pytest.raises(BusError, match="expected bytes, got str"):
        await b.publish("t", "text")  # type: ignore[arg-type]
