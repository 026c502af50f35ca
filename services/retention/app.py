"""FastStream app of the retention service
(``faststream run services.retention.app:build_app --factory``)."""

from __future__ import annotations

from typing import Any

from evalloop.runtime import build_faststream_app
from evalloop.settings import Settings
from services.retention.service import RetentionService

__all__ = ["build_app"]


def build_app(settings: Settings | None = None) -> Any:
    """Build the retention service's app against the PostgreSQL named by ``settings`` (default:
    ``Settings()`` from the environment). Nothing connects until the app starts.

    Returns:
        A ``faststream.FastStream`` app.
    """
    return build_faststream_app(RetentionService, settings or Settings())
