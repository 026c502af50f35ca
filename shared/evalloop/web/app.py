"""The web app: Starlette + Jinja2 pages, htmx for actions, every asset served from the package.

``build_app(settings)`` returns an ASGI app; ``evalloop web`` serves it with uvicorn
(``docs/web.md``). Layers, outermost first:

1. CSRF (``asgi-csrf``): every POST/PUT/PATCH/DELETE carrying cookies must echo the signed
   ``csrftoken`` cookie in a ``csrftoken`` form field or an ``x-csrftoken`` header (htmx sends
   the header, see ``templates/base.html``); requests authenticated by an
   ``Authorization: Bearer`` token carry no ambient credentials and are exempt.
2. Sessions (Starlette ``SessionMiddleware``): a signed cookie holding the user name.
3. Authentication (:class:`evalloop.web.auth.SessionOrTokenBackend`), then
   :class:`evalloop.web.auth.ReviewerMiddleware`, which hands the signed-in user to the review
   JSON API (:mod:`evalloop.review.api`, mounted under ``/api/v1``) as its reviewer.

The database pool is built in the lifespan (or injected: tests, ``evalloop demo --serve``).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
from asgi_csrf import asgi_csrf
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp

from evalloop.errors import StorageError
from evalloop.settings import Settings
from evalloop.web import render
from evalloop.web.tabs import TabRegistry, default_tabs
from evalloop.web.views import home, signin

__all__ = ["build_app"]

STATIC_DIR = Path(__file__).parent / "static"


def _auth_error(conn: HTTPConnection, exc: Exception) -> Response:
    return render.error(conn, 401, str(exc))


def build_app(settings: Settings, *, pool: asyncpg.Pool | None = None,
              tabs: TabRegistry | None = None,
              extra_routes: list[BaseRoute] | None = None) -> ASGIApp:
    """Build the web app.

    Args:
        settings: ``settings.web`` (secret, session lifetime), ``settings.monitor`` (threshold
            and minimum volume drawn on the charts), ``settings.postgres`` (when no ``pool``).
        pool: an open asyncpg pool on a migrated database (the caller closes it); default: one
            is opened on ``settings.postgres`` (migrated first) for the app's lifetime.
        tabs: the per-agent tabs (default :func:`evalloop.web.tabs.default_tabs`).
        extra_routes: more routes (e.g. a JSON API) behind the same sign-in and CSRF layers.

    Returns:
        The ASGI app (CSRF-wrapped Starlette).
    """
    from evalloop.review.api import ReviewApi, review_routes

    registry = tabs or default_tabs()
    secret = settings.web.secret_key or secrets.token_urlsafe(48)
    # the API's handlers are bound now; its pool is set in the lifespan, once it exists
    api = ReviewApi(pool)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if pool is not None:
            app.state.pool = pool
            yield
            return
        from evalloop.adapters.postgres import connect_pool, migrate, resolve_dsn

        dsn = resolve_dsn(settings.postgres)
        await migrate(dsn)
        own = await connect_pool(dsn, min_size=settings.postgres.pool_min,
                                 max_size=settings.postgres.pool_max)
        app.state.pool = own
        api.pool = own
        try:
            yield
        finally:
            await own.close()

    routes: list[BaseRoute] = [
        Route("/", home.overview, name="home"),
        Route("/login", signin.login_page, methods=["GET"], name="login"),
        Route("/login", signin.login_submit, methods=["POST"], name="login_submit"),
        Route("/logout", signin.logout, methods=["POST"], name="logout"),
        Route("/healthz", home.healthz, name="healthz"),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        *registry.routes(),
        Route("/agents/{agent_id}", home.agent_home, name="agent"),
        *review_routes(api),
        *(extra_routes or []),
    ]
    from evalloop.web.auth import ReviewerMiddleware, SessionOrTokenBackend

    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(SessionMiddleware, secret_key=secret, session_cookie="evalloop_session",
                       max_age=settings.web.session_max_age_s, same_site="lax",
                       https_only=settings.web.https_only),
            Middleware(AuthenticationMiddleware, backend=SessionOrTokenBackend(),
                       on_error=_auth_error),
            Middleware(ReviewerMiddleware),
        ],
        exception_handlers={404: render.http_error, 403: render.http_error,
                            401: render.http_error, 400: render.http_error,
                            StorageError: render.storage_error},
    )
    app.state.settings = settings
    app.state.tabs = registry
    if pool is not None:  # also without a lifespan (httpx.ASGITransport runs none)
        app.state.pool = pool
    wrapped: ASGIApp = asgi_csrf(app, signing_secret=secret,
                                 always_protect={"/login", "/logout"},
                                 cookie_secure=settings.web.https_only,
                                 send_csrf_failed=_csrf_failed)
    return wrapped


async def _csrf_failed(scope: dict[str, Any], send: Any, message_id: Any) -> None:
    """Refuse a request whose CSRF token is missing or wrong: 403 with a page that says so."""
    body = (b"<!doctype html><title>403 CSRF check failed</title><h1>403: CSRF check failed</h1>"
            b"<p>The form was not sent with this session's CSRF token. Reload the page and "
            b"try again.</p>")
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"text/html; charset=utf-8")]})
    await send({"type": "http.response.body", "body": body})


def pool_of(request: Request) -> asyncpg.Pool:
    """The app's database pool."""
    return request.app.state.pool
