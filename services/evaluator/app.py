"""FastStream app of the evaluator
(``faststream run services.evaluator.app:build_app --factory``).
"""

from __future__ import annotations

from typing import Any

from evalloop.runtime import build_faststream_app
from evalloop.settings import Settings
from services.evaluator.service import EvaluatorService

__all__ = ["build_app"]


def build_app(settings: Settings | None = None) -> Any:
    """Build the evaluator's FastStream app against the Kafka and PostgreSQL named by
    ``settings`` (default: ``Settings()`` from the environment). Nothing connects until the app
    starts.

    Returns:
        A ``faststream.FastStream`` app.
    """
    return build_faststream_app(EvaluatorService, settings or Settings())
