"""Run the web app with uvicorn: ``python -m services.web`` (bind from ``settings.web``)."""

from __future__ import annotations

import uvicorn

from evalloop.adapters.http_server import http_options
from evalloop.settings import Settings
from services.web.app import build_http_app


def main() -> None:
    """Serve the web app against the PostgreSQL named by the environment's settings until
    interrupted (``docs/web.md``)."""
    settings = Settings()
    uvicorn.run(build_http_app(settings), host=settings.web.host, port=settings.web.port,
                log_level="info", **http_options("web", settings))


if __name__ == "__main__":
    main()
