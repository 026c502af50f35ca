"""One way to write a ratio as a percentage, in the web app and in the command-line reports
(``docs/web.md#numbers``).

Below 10 % two decimals (``0.85 %``, ``1.30 %``, ``2.00 %``): a negative rate is judged
against a 2 % threshold, so its hundredths matter; from 10 % one decimal (``74.0 %``,
``100.0 %``). Trailing zeros are kept, so the numbers of one table line up.
"""

from __future__ import annotations

__all__ = ["percent"]


def percent(ratio: float | None, *, sep: str = " ") -> str:
    """``ratio`` (0-1) as a percentage: two decimals below 10 %, one decimal from 10 %.

    Args:
        ratio: the ratio, 0-1 (a value outside is written as it is); ``None`` -> ``"—"``.
        sep: between the number and ``%`` (the web app: a space; the CLI reports: none).

    Returns:
        For example ``percent(0.0085) == "0.85 %"``, ``percent(0.74) == "74.0 %"``,
        ``percent(0.013, sep="") == "1.30%"``.
    """
    if ratio is None:
        return "—"
    value = ratio * 100
    digits = 2 if abs(round(value, 2)) < 10 else 1
    return f"{value:.{digits}f}{sep}%"
