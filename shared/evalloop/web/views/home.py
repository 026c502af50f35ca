"""The overview (every agent's current state) and the agent's landing redirect."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import asyncpg
from starlette.authentication import requires
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from evalloop.adapters import golden_store, monitor_store
from evalloop.core.window import wilson_interval
from evalloop.web.render import page

__all__ = ["AgentRow", "agent_home", "agent_rows", "healthz", "overview"]


@dataclass(frozen=True, slots=True)
class AgentRow:
    """One agent's current state, as the overview and the Feedback loop tab show it.

    Attributes:
        agent_id: the agent.
        phase: trigger phase (``armed`` / ``fired``), ``None`` if the monitor never saw it.
        negatives, turns, rate: the current 24 h window (``None`` before the first turn).
        low, high: Wilson 95 % interval of the rate (ratios 0-1).
        below_min_volume: fewer turns than the minimum volume (the trigger does not fire).
        window_end: end of the current window (UTC).
        jobs: re-evaluation requests so far.
    """

    agent_id: str
    phase: str | None
    negatives: int | None
    turns: int | None
    rate: float | None
    low: float | None
    high: float | None
    below_min_volume: bool
    window_end: datetime | None
    jobs: int


async def agent_rows(pool: asyncpg.Pool, min_turns: int) -> list[AgentRow]:
    """Every known agent with its current window (agents the monitor never saw included)."""
    snapshots = {s.agent_id: s for s in await monitor_store.agent_snapshots(pool)}
    names = sorted(set(await golden_store.known_agent_ids(pool)) | set(snapshots))
    rows = []
    for name in names:
        s = snapshots.get(name)
        if s is None or s.turns is None or s.negatives is None:
            rows.append(AgentRow(name, s.phase if s else None, None, None, None, None, None,
                                 True, s.newest_event_at if s else None, s.jobs if s else 0))
            continue
        low, high = wilson_interval(s.negatives, s.turns)
        rows.append(AgentRow(name, s.phase, s.negatives, s.turns, s.rate, low, high,
                             s.turns < min_turns, s.newest_event_at, s.jobs))
    return rows


@requires("authenticated", redirect="login")
async def overview(request: Request) -> Response:
    """``/``: every agent's current negative rate, interval and trigger phase."""
    monitor = request.app.state.settings.monitor
    rows = await agent_rows(request.app.state.pool, monitor.min_turns)
    return page(request, "overview.html", agents=rows, monitor=monitor)


@requires("authenticated", redirect="login")
async def agent_home(request: Request) -> Response:
    """``/agents/{agent_id}``: the agent's first tab."""
    first = request.app.state.tabs.ordered()[0]
    return RedirectResponse(
        request.url_for(f"tab:{first.key}", agent_id=request.path_params["agent_id"]), 303)


async def healthz(request: Request) -> Response:
    """``/healthz``: 200 when the database answers (no sign-in needed)."""
    await request.app.state.pool.fetchval("SELECT 1")
    return JSONResponse({"status": "ok"})
