"""FastStream app of the recorder (``faststream run services.recorder.app:build_app --factory``)."""

from __future__ import annotations

from faststream import FastStream

from evalloop.runtime import build_faststream_app
from evalloop.settings import Settings
from services.recorder.service import RecorderService

__all__ = ["build_app"]


def build_app(settings: Settings | None = None) -> FastStream:
    """The recorder against the Kafka and PostgreSQL named by ``settings`` (default: env).

    Nothing connects until the app starts (the pool, migrations and topics are set up in its
    lifespan); batches hold up to ``settings.recorder.max_records`` records.
    """
    settings = settings or Settings()
    service_cls = RecorderService.with_batch_size(settings.recorder.max_records)
    app: FastStream = build_faststream_app(service_cls, settings)
    return app
