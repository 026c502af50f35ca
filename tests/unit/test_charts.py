"""The server-rendered rate chart (``evalloop.core.charts``): axis, band, threshold, markers."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from evalloop.core.charts import ChartMarker, RatePoint, nice_ceiling, rate_chart_svg, time_ticks

T = datetime(2026, 11, 30, tzinfo=UTC)


def _points() -> list[RatePoint]:
    # hour i: rate i %, interval [i/2 %, 1.5 i % + 0.1 %], 100 i turns
    return [RatePoint(T + timedelta(hours=i), 0.01 * i, 0.005 * i, 0.015 * i + 0.001, i,
                      100 * i) for i in range(5)]


def test_nice_ceiling_picks_the_smallest_round_axis() -> None:
    assert nice_ceiling(0.06) == (0.08, 0.02)
    assert nice_ceiling(0.03) == (0.04, 0.01)
    assert nice_ceiling(0.04) == (0.04, 0.01)
    assert nice_ceiling(0.0) == (0.004, 0.001)
    assert nice_ceiling(0.9) == (1.0, 0.25)


def test_time_ticks_are_round_hours_within_the_span() -> None:
    assert time_ticks(T, T + timedelta(hours=4)) == [T + timedelta(hours=h) for h in range(5)]
    start = T + timedelta(minutes=20)
    assert time_ticks(start, start + timedelta(hours=48)) == [
        T + timedelta(hours=h) for h in (6, 12, 18, 24, 30, 36, 42, 48)]


def test_chart_draws_band_rate_threshold_and_linked_marker() -> None:
    svg = rate_chart_svg(_points(), threshold=0.02, min_turns=200,
                         markers=[ChartMarker(T + timedelta(hours=3), "fired <3.1%>", "/r/1")],
                         width=900, height=280)
    # plot box x 56..864, y 28..240; axis top = 8 % (twice the threshold is 4 %, rates reach 4 %,
    # the 6.1 % band of the last window has enough volume): 2 % is at y = 240 - 212/4
    assert svg.startswith('<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
                          'viewBox="0 0 900 280"')
    assert '<line class="threshold" x1="56" x2="864" y1="187" y2="187"/>' in svg
    assert ">threshold 2 %</text>" in svg
    assert re.findall(r'<polyline class="([^"]+)" points="([^"]+)"/>', svg) == [
        ("rate low-volume", "56,240 258,213.5"),
        ("rate", "258,213.5 460,187 662,160.5 864,134"),
    ]
    assert ('<polygon class="band" points="56,237.3 258,197.6 460,157.8 662,118.1 864,78.4 '
            '864,187 662,200.2 460,213.5 258,226.8 56,240">') in svg
    # the marker links to its run, at hour 3 (x = 56 + 3/4 * 808), with an escaped tooltip
    assert ('<a href="/r/1" class="marker-link"><g class="marker"><line x1="662" x2="662" '
            'y1="20" y2="240"/>') in svg
    assert "<title>fired &lt;3.1%&gt;</title>" in svg
    assert ("2026-11-30 01:00 UTC: 1 % [0.5 %, 1.6 %], 1/100 turns (below the minimum volume "
            "200)") in svg
    assert [t for t in re.findall(r'text-anchor="end">([^<]+)</text>', svg)] == [
        "0 %", "2 %", "4 %", "6 %", "8 %"]


def test_a_marker_without_a_run_is_not_a_link_and_no_points_says_so() -> None:
    svg = rate_chart_svg(_points(), threshold=0.02, min_turns=0,
                         markers=[ChartMarker(T, "weekly sample")])
    assert "marker-link" not in svg and '<g class="marker">' in svg
    assert 'class="rate low-volume"' not in svg
    empty = rate_chart_svg([], threshold=0.02, min_turns=200)
    assert "no turns in any window yet" in empty and "<polyline" not in empty


def test_near_empty_windows_do_not_flatten_the_axis() -> None:
    points = [RatePoint(T, 0.5, 0.1, 0.9, 1, 2),
              *(RatePoint(T + timedelta(hours=h), 0.01, 0.008, 0.012, 10, 1000)
                for h in (1, 2))]
    svg = rate_chart_svg(points, threshold=0.02, min_turns=200)
    # the 50 % rate of the one-turn window still fits under an 80 % axis; its band (up to
    # 90 %) is clipped at the top of the plot (y = 28) instead of stretching the axis to 100 %
    assert re.findall(r'text-anchor="end">([^<]+)</text>', svg)[-1] == "80 %"
    assert '<polygon class="band" points="56,28 ' in svg
