"""One precision for percentages in the web app and the CLI reports (docs/web.md#numbers)."""

from __future__ import annotations

from evalloop.core.percent import percent
from evalloop.web.render import pct


def test_two_decimals_below_ten_percent_one_from_ten() -> None:
    # the report's examples: "74 %" next to "0.85 %"; "[60.45 %, 84.13 %]" next to
    # "[0.39 %, 1.3 %]"
    assert [pct(r) for r in (0.74, 0.0085, 0.6045, 0.8413, 0.0039, 0.013)] == [
        "74.0 %", "0.85 %", "60.5 %", "84.1 %", "0.39 %", "1.30 %"]
    assert [percent(r, sep="") for r in (0.02, 0.0999, 0.09999, 1.0, 0.0)] == [
        "2.00%", "9.99%", "10.0%", "100.0%", "0.00%"]
    assert pct(None) == "—"
