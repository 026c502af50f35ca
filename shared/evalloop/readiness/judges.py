"""The judge a deployment uses, from settings (``readiness.judge``).

``embedded``: the llama.cpp server on loopback (:func:`evalloop.adapters.judge_embedded.
embedded_judge`); ``openai``: any OpenAI-compatible endpoint; ``off``: no judge. Judgements
are cached in PostgreSQL (``judge_cache``) so a re-run of an unchanged answer costs nothing.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import asyncpg

from evalloop.core.judge.types import Judge
from evalloop.settings import ReadinessSettings

__all__ = ["open_judge"]


@asynccontextmanager
async def open_judge(cfg: ReadinessSettings, pool: asyncpg.Pool | None
                     ) -> AsyncIterator[Judge | None]:
    """Start the configured judge for the ``async with`` body (``None`` when ``off``).

    Raises:
        ConfigError: unknown model, missing weights or API key.
        JudgeError: the embedded server did not start or its weights fail their SHA-256.
    """
    if cfg.judge == "off":
        yield None
        return
    from evalloop.adapters.judge_store import PgJudgementCache

    cache = PgJudgementCache(pool) if pool is not None else None
    if cfg.judge == "embedded":
        from evalloop.adapters.judge_embedded import embedded_judge

        async with embedded_judge(cfg.judge_model, cache=cache,
                                  timeout_s=cfg.judge_timeout_s) as judge:
            yield judge
        return
    from evalloop.adapters.judge_embedded import shipped_calibration
    from evalloop.adapters.judge_openai import OpenAIJudge, openai_client

    assert cfg.judge_base_url is not None  # checked by the settings
    client = openai_client(cfg.judge_base_url, api_key_env=cfg.judge_api_key_env,
                           timeout_s=cfg.judge_timeout_s)
    try:
        yield OpenAIJudge(client, cfg.judge_model, calibration=shipped_calibration(
            cfg.judge_model), cache=cache, concurrency=cfg.judge_concurrency,
            timeout_s=cfg.judge_timeout_s)
    finally:
        await client.close()
