"""The Feedback loop tab: the 24 h negative rate over time, re-evaluation requests, clusters."""

from __future__ import annotations

from datetime import timedelta

from markupsafe import Markup
from starlette.authentication import requires
from starlette.requests import Request
from starlette.responses import Response

from evalloop.adapters import monitor_store, triage_store
from evalloop.core.charts import ChartMarker, RatePoint, rate_chart_svg
from evalloop.web.render import page, pct
from evalloop.web.tabs import Tab
from evalloop.web.views.home import agent_rows

__all__ = ["TAB", "feedback_tab"]

#: how much history the chart shows, ending at the agent's newest event
CHART_SPAN = timedelta(days=7)
#: clusters listed (largest first); the page says how many more there are
TOP_CLUSTERS = 25


@requires("authenticated", redirect="login")
async def feedback_tab(request: Request) -> Response:
    """``/agents/{agent_id}/feedback``: rate chart with its Wilson band, the threshold and the
    re-evaluation requests (each linking to its run); every agent's current state; clusters
    with labels, sizes, example questions and golden coverage."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    monitor = request.app.state.settings.monitor
    rows = await agent_rows(pool, monitor.min_turns)
    me = next((r for r in rows if r.agent_id == agent), None)
    timeline = await monitor_store.rate_timeline(pool, agent, step_s=3600, settings=monitor)
    if timeline:
        first = timeline[-1].window_end - CHART_SPAN
        timeline = [p for p in timeline if p.window_end >= first]
    requests = await monitor_store.reeval_markers(pool, agent)
    markers = [
        ChartMarker(
            at=m.window_end or m.requested_at,
            label=f"re-evaluation requested ({m.trigger}): {m.reason}",
            href=str(request.url_for("run", agent_id=agent, run_id=str(m.run_id)))
            if m.run_id else None)
        for m in requests
        if not timeline or (m.window_end or m.requested_at) >= timeline[0].window_end
    ]
    points = [RatePoint(p.window_end, p.rate, p.wilson_low, p.wilson_high, p.negatives,
                        p.turns) for p in timeline]
    chart = rate_chart_svg(points, threshold=monitor.threshold, min_turns=monitor.min_turns,
                           markers=markers,
                           title=f"{agent}: 24 h negative rate, threshold {pct(monitor.threshold)}")
    clusters = [c for c in await triage_store.list_clusters(pool, agent) if c["size"] > 0]
    examples = await triage_store.cluster_examples(pool, agent)
    return page(request, "feedback.html", agent=agent, active="feedback", me=me,
                agents=rows, monitor=monitor, chart=Markup(chart), requests=requests,
                clusters=clusters[:TOP_CLUSTERS],
                more_clusters=max(0, len(clusters) - TOP_CLUSTERS),
                uncovered=sum(1 for c in clusters if not c["covered_by_golden"]),
                examples=examples)


TAB = Tab(key="feedback", title="Feedback loop", order=10, endpoint=feedback_tab, hotkey="1")
