"""Process-wide GC tuning is the recorder's opt-in (docs/operations.md#process-wide-settings):
by default a recorder sharing its process (``evalloop up``, the demo) leaves the collector as
it found it."""

from __future__ import annotations

import gc

import asyncpg

from evalloop.adapters.bus import InProcessBus
from evalloop.runtime import Deps
from evalloop.settings import RecorderSettings, Settings
from evalloop.topics import Topics
from services.recorder.service import RecorderService


async def test_default_recorder_leaves_the_collector_alone(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    before = (gc.get_threshold(), gc.get_freeze_count())
    svc = RecorderService(Deps(pg_settings, pool, InProcessBus(), Topics()))
    await svc.start()
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    await svc.stop()


async def test_opted_in_recorder_tunes_and_restores(
    pg_settings: Settings, pool: asyncpg.Pool
) -> None:
    threshold = gc.get_threshold()
    settings = pg_settings.model_copy(update={"recorder": RecorderSettings(process_gc=True)})
    svc = RecorderService(Deps(settings, pool, InProcessBus(), Topics()))
    try:
        await svc.start()
        assert gc.get_threshold()[0] == max(threshold[0], RecorderService.GC_GEN0_THRESHOLD)
        assert gc.get_freeze_count() > 0
        await svc.stop()
        assert gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
