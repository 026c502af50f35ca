"""FastStream app of triage (``faststream run services.triage.app:build_app --factory``)."""

from __future__ import annotations

from typing import Any

from evalloop.adapters.embedder import build_embedder
from evalloop.runtime import build_faststream_app
from evalloop.settings import Settings
from services.triage.service import TriageService

__all__ = ["build_app"]


def build_app(settings: Settings | None = None) -> Any:
    """Build triage's FastStream app against the Kafka and PostgreSQL named by ``settings``
    (default: ``Settings()`` from the environment). The embedding model is loaded once, in the
    app's lifespan (``settings.triage.embedder``), not at import.

    Returns:
        A ``faststream.FastStream`` app.
    """
    return build_faststream_app(
        TriageService, settings or Settings(),
        extras=lambda s: {"embedder": build_embedder(s.triage)},
    )
