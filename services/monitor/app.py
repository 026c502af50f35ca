"""FastStream app of the monitor (``faststream run services.monitor.app:build_app --factory``)."""

from __future__ import annotations

from typing import Any

from evalloop.runtime import build_faststream_app
from evalloop.settings import Settings
from services.monitor.service import MonitorService

__all__ = ["build_app"]


def build_app(settings: Settings | None = None) -> Any:
    """Build the monitor's FastStream app against the Kafka and PostgreSQL named by ``settings``
    (default: ``Settings()`` from the environment). Nothing connects until the app starts.

    Returns:
        A ``faststream.FastStream`` app.
    """
    return build_faststream_app(MonitorService, settings or Settings())
