"""Background loops are supervised (docs/operations.md#supervision): a loop that raises is
logged, restarted with backoff and reported by health(); the others go on."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import pytest

from evalloop.adapters.bus import InProcessBus
from evalloop.runtime import Deps, Service, health_answer
from evalloop.settings import Settings
from evalloop.topics import Topics


class Flaky(Service):
    name: ClassVar[str] = "flaky"
    RESTART_BACKOFF_S: ClassVar[float] = 0.01

    def __init__(self, failures: int) -> None:
        super().__init__(Deps(Settings(), pool=None, bus=InProcessBus(), topics=Topics()))  # type: ignore[arg-type]
        self.failures = failures
        self.runs = 0
        self.ticks = 0

    async def start(self) -> None:
        self.start_background(self.flaky, self.steady, name="flaky-loops")

    async def flaky(self) -> None:
        self.runs += 1
        if self.runs <= self.failures:
            raise RuntimeError(f"boom {self.runs}")
        await asyncio.Event().wait()

    async def steady(self) -> None:
        while True:
            self.ticks += 1
            await asyncio.sleep(0.01)


async def _until(predicate: Any) -> None:
    async with asyncio.timeout(10):
        while not predicate():  # noqa: ASYNC110 - polls state owned by other tasks
            await asyncio.sleep(0.01)


async def test_a_failing_loop_is_restarted_and_the_others_go_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    svc = Flaky(failures=3)
    with caplog.at_level(logging.ERROR, logger="evalloop.runtime"):
        await svc.start()
        await _until(lambda: svc.runs == 4 and svc.loops[0].state == "running")
        ticks = svc.ticks
        await _until(lambda: svc.ticks > ticks + 2)  # the other loop never stopped
    health = svc.health()
    assert health["status"] == "ok" and health["ready"] is True
    flaky, steady = health["loops"]
    assert (flaky["name"], flaky["state"], flaky["restarts"], flaky["last_error"]) == (
        "flaky.flaky", "running", 3, "RuntimeError: boom 3")
    assert (steady["name"], steady["state"], steady["restarts"]) == ("flaky.steady", "running", 0)
    failures = [r for r in caplog.records if "background loop failed" in r.getMessage()]
    assert [r.getMessage() for r in failures] == [
        "flaky.flaky: background loop failed (RuntimeError: boom 1); restart 1 in 0.01 s",
        "flaky.flaky: background loop failed (RuntimeError: boom 2); restart 2 in 0.02 s",
        "flaky.flaky: background loop failed (RuntimeError: boom 3); restart 3 in 0.04 s",
    ]
    assert all(r.exc_info is not None for r in failures)  # the traceback is logged
    await svc.stop()
    assert [h.state for h in svc.loops] == ["stopped", "stopped"]
    assert svc.health()["status"] == "stopped"


async def test_a_loop_waiting_to_restart_is_degraded_and_not_ready() -> None:
    svc = Flaky(failures=1)
    svc.RESTART_BACKOFF_S = 30.0  # type: ignore[misc]
    await svc.start()
    try:
        await _until(lambda: svc.loops[0].state == "restarting")
        health = svc.health()
        assert (health["status"], health["ready"]) == ("degraded", False)
        assert health_answer(True, [health], readiness=True)[0] == 503
        assert health_answer(True, [health], readiness=False)[0] == 200
    finally:
        await svc.stop()


def test_health_answers() -> None:
    ok = {"service": "monitor", "status": "ok", "ready": True, "loops": []}
    stopped = {"service": "triage", "status": "stopped", "ready": False, "loops": []}
    assert health_answer(True, [ok], readiness=True) == (
        200, {"status": "ok", "ready": True, "services": [ok]})
    assert health_answer(False, [ok], readiness=True) == (
        503, {"status": "degraded", "ready": False, "services": [ok]})
    assert health_answer(True, [ok, stopped], readiness=False) == (
        503, {"status": "stopped", "ready": False, "services": [ok, stopped]})
