"""Fuzzing the ingest endpoint (docs/operations.md#poison-records): with a valid API key,
whatever body arrives, ingest answers 202, 413 or 422 with a bounded body, never 500.
Bounded: derandomized, a fixed number of examples."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import asyncpg
from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_fuzz_decoders import raw_bodies

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.key_store import create_key
from evalloop.adapters.postgres import connect_pool
from evalloop.settings import Settings
from services.ingest.app import build_http_app


async def _token(dsn: str) -> str:
    pool: asyncpg.Pool = await connect_pool(dsn, min_size=1, max_size=1)
    try:
        new, _ = await create_key(pool, "fuzz", agent_ids=None, rate_limit="100000/second")
        return new.token
    finally:
        await pool.close()


def test_ingest_never_answers_500(pg_settings: Settings) -> None:
    assert pg_settings.postgres.dsn is not None
    token = asyncio.run(_token(pg_settings.postgres.dsn))
    app = build_http_app(pg_settings, bus=InProcessBus())  # keys read by the app's own pool
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}

    with TestClient(app) as client:

        @settings(max_examples=100, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(raw_bodies())
        def post(body: bytes) -> None:
            r = client.post("/v1/events", content=body, headers=headers)
            assert r.status_code in (202, 413, 422), (r.status_code, r.text[:300])
            assert len(r.content) < 64_000

        post()
