"""Server-rendered SVG charts for the web app: the 24 h negative rate over time.

Pure: values in, an SVG string out (no JavaScript, no fonts to fetch: it renders offline and in
any browser). What the chart shows is ``docs/web.md#feedback-loop``:

* the rate of each 24 h window (a line; dashed grey where the window held fewer turns than the
  monitor's minimum volume, since the trigger ignores those windows);
* its Wilson 95 % interval (a shaded band; ``docs/rules.md#feedback-loop-trigger``);
* the threshold (2 % by default) as a dashed red line;
* each re-evaluation request as a vertical marker, a link to its evaluation run when it has one.

Coordinates are rounded to 0.1 px so the output is stable (tests compare it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape

__all__ = ["ChartMarker", "RatePoint", "nice_ceiling", "rate_chart_svg", "time_ticks"]


@dataclass(frozen=True, slots=True)
class RatePoint:
    """One 24 h window of the timeline.

    Attributes:
        at: window end (UTC).
        rate: negatives / turns, ratio 0-1.
        low, high: Wilson 95 % interval bounds, ratios 0-1.
        negatives, turns: the counts behind the rate.
    """

    at: datetime
    rate: float
    low: float
    high: float
    negatives: int
    turns: int


@dataclass(frozen=True, slots=True)
class ChartMarker:
    """A re-evaluation request on the time axis.

    Attributes:
        at: when the request's window ended (UTC).
        label: tooltip text (why it was requested).
        href: link to its evaluation run, or ``None`` while it has none.
    """

    at: datetime
    label: str
    href: str | None = None


_W_LEFT, _W_RIGHT, _W_TOP, _W_BOTTOM = 56.0, 36.0, 28.0, 40.0
_STEPS = (0.001, 0.002, 0.0025, 0.005, 0.01, 0.02, 0.025, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0)


def nice_ceiling(value: float, ticks: int = 4) -> tuple[float, float]:
    """The top of a rate axis and its tick step: the smallest ``step * ticks >= value`` with a
    step from 0.1 %, 0.2 %, 0.25 %, 0.5 %, 1 %, 2 %, 2.5 %, 5 %, 10 %, 20 %, 25 %, 50 %, 100 %.

    Args:
        value: the largest ratio to show (0-1; values <= 0 give the smallest axis).
        ticks: number of intervals on the axis.

    Returns:
        ``(top, step)``, ratios (``top`` is 4 for any value above 1 with the default ticks).
    """
    for step in _STEPS:
        if step * ticks >= value - 1e-12:
            return step * ticks, step
    return _STEPS[-1] * ticks, _STEPS[-1]


_TICK_HOURS = (1, 2, 3, 6, 12, 24, 48, 72, 168)


def time_ticks(start: datetime, end: datetime, max_ticks: int = 8) -> list[datetime]:
    """Round UTC instants in ``[start, end]`` for the time axis: every 1, 2, 3, 6, 12 or 24 h
    (or several days), the smallest interval giving at most ``max_ticks`` ticks."""
    span_h = max((end - start).total_seconds() / 3600, 1.0)
    hours = next((h for h in _TICK_HOURS if span_h / h <= max_ticks), _TICK_HOURS[-1])
    first = start.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
    if first < start:
        first += timedelta(hours=1)
    while first.hour % min(hours, 24) and first <= end:
        first += timedelta(hours=1)
    out = []
    t = first
    while t <= end:
        out.append(t)
        t += timedelta(hours=hours)
    return out


def _f(v: float) -> str:
    text = f"{round(v, 1):.1f}"
    return text[:-2] if text.endswith(".0") else text


def _pct(v: float) -> str:
    text = f"{v * 100:.2f}".rstrip("0").rstrip(".")
    return f"{text} %"


def rate_chart_svg(points: Sequence[RatePoint], *, threshold: float, min_turns: int,
                   markers: Sequence[ChartMarker] = (), width: int = 1100,
                   height: int = 300, title: str = "24 h negative rate") -> str:
    """Render the negative-rate timeline as an SVG document.

    Args:
        points: windows, oldest first (at least one for a chart; none gives a "no data" box).
        threshold: the trigger threshold, ratio 0-1 (drawn as a dashed red line). The rate
            axis reaches at least twice the threshold, every rate and the interval of every
            window with enough volume; taller bands are clipped at the top.
        min_turns: the minimum volume; windows with fewer turns are drawn dashed grey.
        markers: re-evaluation requests (drawn as vertical lines; links when ``href``).
        width, height: pixel size of the drawing.
        title: accessible title of the chart.

    Returns:
        ``<svg ...>...</svg>`` text (UTF-8, no XML declaration), ready to inline in HTML.
    """
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
            f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
            f"<title>{escape(title)}</title>")
    if not points:
        return (head + f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" '
                'class="frame"/><text x="50%" y="50%" text-anchor="middle" class="empty">'
                "no turns in any window yet</text></svg>")
    x0, x1 = _W_LEFT, width - _W_RIGHT
    y0, y1 = height - _W_BOTTOM, _W_TOP  # y0: the zero line (bottom)
    t_start, t_end = points[0].at, points[-1].at
    if t_end <= t_start:
        t_end = t_start + timedelta(hours=1)
    span = (t_end - t_start).total_seconds()
    # Scale to what the trigger reads: windows of enough volume (their band included) and the
    # threshold; the wide bands of near-empty windows are clipped rather than flattening the
    # chart.
    enough_high = [p.high for p in points if p.turns >= min_turns]
    top, step = nice_ceiling(max([*(p.rate for p in points), *enough_high, threshold * 2]))

    def x(t: datetime) -> float:
        frac = (t - t_start).total_seconds() / span
        return x0 + min(max(frac, 0.0), 1.0) * (x1 - x0)

    def y(v: float) -> float:
        return y0 - min(max(v, 0.0), top) / top * (y0 - y1)

    out = [head, '<g class="grid">']
    for i in range(round(top / step) + 1):
        v = i * step
        out.append(f'<line x1="{_f(x0)}" x2="{_f(x1)}" y1="{_f(y(v))}" y2="{_f(y(v))}"/>'
                   f'<text x="{_f(x0 - 6)}" y="{_f(y(v) + 4)}" text-anchor="end">'
                   f"{_pct(v)}</text>")
    for t in time_ticks(t_start, t_end):
        label = t.strftime("%b %d") if t.hour == 0 else t.strftime("%H:%M")
        out.append(f'<line x1="{_f(x(t))}" x2="{_f(x(t))}" y1="{_f(y1)}" y2="{_f(y0)}"/>'
                   f'<text x="{_f(x(t))}" y="{_f(y0 + 16)}" text-anchor="middle">'
                   f"{label}</text>")
    out.append("</g>")
    band = [f"{_f(x(p.at))},{_f(y(p.high))}" for p in points]
    band += [f"{_f(x(p.at))},{_f(y(p.low))}" for p in reversed(points)]
    out.append(f'<polygon class="band" points="{" ".join(band)}"><title>Wilson 95 % interval'
               "</title></polygon>")
    # the rate line, one polyline per run of windows on the same side of the minimum volume
    run: list[RatePoint] = []
    runs: list[tuple[bool, list[RatePoint]]] = []
    for p in points:
        enough = p.turns >= min_turns
        if run and (run[-1].turns >= min_turns) != enough:
            runs.append((run[-1].turns >= min_turns, run))
            run = [run[-1]]  # keep the line continuous across the change
        run.append(p)
    runs.append((run[-1].turns >= min_turns, run))
    for enough, pts in runs:
        cls = "rate" if enough else "rate low-volume"
        coords = " ".join(f"{_f(x(p.at))},{_f(y(p.rate))}" for p in pts)
        out.append(f'<polyline class="{cls}" points="{coords}"/>')
    out.append(f'<line class="threshold" x1="{_f(x0)}" x2="{_f(x1)}" y1="{_f(y(threshold))}" '
               f'y2="{_f(y(threshold))}"/><text class="threshold-label" x="{_f(x0 + 6)}" '
               f'y="{_f(y(threshold) - 5)}">threshold {_pct(threshold)}</text>')
    out.append('<g class="points">')
    for p in points:
        tip = (f"{p.at:%Y-%m-%d %H:%M} UTC: {_pct(p.rate)} [{_pct(p.low)}, {_pct(p.high)}], "
               f"{p.negatives}/{p.turns} turns"
               + ("" if p.turns >= min_turns else f" (below the minimum volume {min_turns})"))
        out.append(f'<circle cx="{_f(x(p.at))}" cy="{_f(y(p.rate))}" r="3">'
                   f"<title>{escape(tip)}</title></circle>")
    out.append("</g>")
    for m in markers:
        mx = _f(x(m.at))
        mark = (f'<g class="marker"><line x1="{mx}" x2="{mx}" y1="{_f(y1 - 8)}" '
                f'y2="{_f(y0)}"/><path d="M{mx} {_f(y1 - 2)} l-6 -10 h12 z"/>'
                f"<title>{escape(m.label)}</title></g>")
        if m.href:
            mark = f'<a href="{escape(m.href)}" class="marker-link">{mark}</a>'
        out.append(mark)
    out.append(f'<rect class="frame" x="{_f(x0)}" y="{_f(y1)}" width="{_f(x1 - x0)}" '
               f'height="{_f(y0 - y1)}"/>')
    out.append(f'<text class="axis-note" x="{_f(x0)}" y="{_f(height - 6)}">UTC; window ends '
               f"hourly; dashed grey: fewer than {min_turns} turns (below the minimum volume)"
               "</text></svg>")
    return "".join(out)
