"""Run ingest with uvicorn: ``python -m services.ingest`` (bind from ``settings.ingest``)."""

from __future__ import annotations

import uvicorn

from evalloop.adapters.http_server import http_options
from evalloop.settings import Settings
from services.ingest.app import build_http_app


def main() -> None:
    """Serve ingest against the Kafka named by the environment's settings until interrupted."""
    settings = Settings()
    uvicorn.run(
        build_http_app(settings), host=settings.ingest.host, port=settings.ingest.port,
        log_level="info", **http_options("ingest", settings),
    )


if __name__ == "__main__":
    main()
