"""Fuzzing the ingest endpoint (docs/operations.md#poison-records): whatever body arrives with a
valid API key, ingest answers 202, 413 or 422 with a bounded body (never 500). Bounded: 100
derandomized examples (the inputs of ``tests/fuzz_inputs.py``)."""

from __future__ import annotations

import asyncio

from fuzz_inputs import raw_bodies
from hypothesis import HealthCheck, given, settings
from starlette.testclient import TestClient

from evalloop.adapters.bus import InProcessBus
from evalloop.adapters.key_store import create_key
from evalloop.adapters.postgres import connect_pool
from evalloop.settings import PostgresSettings, Settings
from services.ingest.app import build_http_app


async def _token(dsn: str) -> str:
    pool = await connect_pool(dsn, min_size=1, max_size=1)
    try:
        new, _ = await create_key(pool, "fuzz", agent_ids=None, rate_limit="1000000/second")
        return new.token
    finally:
        await pool.close()


def test_ingest_never_answers_500(db_dsn: str) -> None:
    token = asyncio.run(_token(db_dsn))
    app = build_http_app(Settings(postgres=PostgresSettings(dsn=db_dsn)), bus=InProcessBus())
    headers = {"content-type": "application/json", "authorization": f"Bearer {token}"}
    with TestClient(app) as client:  # the lifespan opens the key store's pool

        @settings(max_examples=100, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(raw_bodies())
        def check(body: bytes) -> None:
            r = client.post("/v1/events", content=body, headers=headers)
            assert r.status_code in (202, 413, 422), (r.status_code, r.text[:300])
            assert len(r.content) < 64_000

        check()
