"""The embedded default judge in one call, and the calibration records shipped with evalloop.

``async with embedded_judge() as judge:`` joins and verifies the weights (once), starts the
llama.cpp server on loopback, and yields an :class:`~evalloop.adapters.judge_openai.OpenAIJudge`
calibrated by the record shipped for that model (``evalloop/data/judge/calibration/<model>.json``,
written by ``evalloop judge calibrate``; ``docs/judge.md#calibration``).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from evalloop.adapters.judge_openai import OpenAIJudge, openai_client
from evalloop.adapters.llama_server import DEFAULT_MODEL, MODELS, LlamaServer
from evalloop.core.judge.cache import JudgementCache
from evalloop.core.judge.calibration import CalibrationRecord
from evalloop.errors import ConfigError

__all__ = ["embedded_judge", "shipped_calibration", "shipped_calibration_path"]


def shipped_calibration_path(model: str) -> Path:
    """Path of the calibration record shipped for ``model`` (it may not exist)."""
    base = resources.files("evalloop") / "data" / "judge" / "calibration" / f"{model}.json"
    return Path(str(base))


def shipped_calibration(model: str) -> CalibrationRecord | None:
    """Load the calibration record shipped for ``model``; ``None`` when there is none.

    Raises:
        ConfigError: the shipped file exists but is malformed.
    """
    path = shipped_calibration_path(model)
    if not path.exists():
        return None
    try:
        return CalibrationRecord.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as exc:
        raise ConfigError(f"calibration record {path} is malformed: {exc}") from exc


@asynccontextmanager
async def embedded_judge(
    model: str = DEFAULT_MODEL,
    *,
    cache: JudgementCache | None = None,
    calibration: CalibrationRecord | None = None,
    n_threads: int = 2,
    timeout_s: float = 60.0,
    retries: int = 1,
) -> AsyncIterator[OpenAIJudge]:
    """Start the embedded llama.cpp judge and yield a judge bound to it; stop it on exit.

    Args:
        model: one of ``evalloop.adapters.llama_server.MODELS``.
        cache: judgement cache (``None``: no caching).
        calibration: overrides the shipped record for ``model``.
        n_threads: llama.cpp CPU threads.
        timeout_s: seconds per question (a loaded 2-core machine needs generous ones).
        retries: extra attempts after a timeout or connection error.

    Raises:
        ConfigError: unknown model, weights packages or llama-cpp-python missing.
        JudgeError: weights fail their SHA-256, or the server does not start.
    """
    if model not in MODELS:
        raise ConfigError(
            f"unknown embedded judge model {model!r}; expected one of {sorted(MODELS)}"
        )
    record = calibration or shipped_calibration(model)
    async with LlamaServer(MODELS[model], n_threads=n_threads) as server:
        client = openai_client(server.base_url, timeout_s=timeout_s)
        try:
            yield OpenAIJudge(
                client,
                server.model,
                calibration=record,
                cache=cache,
                concurrency=1,  # one llama.cpp slot: parallel requests would only queue
                timeout_s=timeout_s,
                retries=retries,
            )
        finally:
            await client.close()
