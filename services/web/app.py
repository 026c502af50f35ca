"""``evalloop up`` entry point of the web app: ``build_http_app(settings)`` is the ASGI app
(:func:`evalloop.web.app.build_app`), served on ``settings.web.host:port`` (8090)."""

from __future__ import annotations

from starlette.types import ASGIApp

from evalloop.settings import Settings
from evalloop.web.app import build_app

__all__ = ["build_http_app"]


def build_http_app(settings: Settings) -> ASGIApp:
    """The web app; it opens (and migrates) its database pool in its lifespan."""
    return build_app(settings)
