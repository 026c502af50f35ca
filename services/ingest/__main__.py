"""Run ingest with uvicorn: ``python -m services.ingest`` (bind from ``settings.ingest``)."""

from __future__ import annotations

import uvicorn

from evalloop.settings import Settings
from services.ingest.app import build_http_app


def main() -> None:
    """Serve ingest against the Kafka named by the environment's settings until interrupted."""
    settings = Settings()
    uvicorn.run(
        build_http_app(settings), host=settings.ingest.host, port=settings.ingest.port,
        log_level="info", **settings.ingest.uvicorn_limits(),  # type: ignore[arg-type]
    )


if __name__ == "__main__":
    main()
