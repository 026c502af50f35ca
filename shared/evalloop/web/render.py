"""Rendering helpers shared by the views: the Jinja2 environment, its filters, error pages."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from markupsafe import Markup
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import HTMLResponse, Response
from starlette.templating import Jinja2Templates

__all__ = ["error", "http_error", "page", "pct", "storage_error", "templates", "utc"]

templates = Jinja2Templates(directory=str(Path(__file__).parent / "templates"))


def pct(value: float | None, digits: int = 2) -> str:
    """A ratio 0-1 as a percentage (``0.0312`` -> ``3.12 %``); ``None`` -> an em dash."""
    if value is None:
        return "—"
    text = f"{value * 100:.{digits}f}".rstrip("0").rstrip(".")
    return f"{text} %"


def utc(value: datetime | None, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """A datetime in UTC (``2026-11-30 10:05 UTC``); ``None`` -> an em dash."""
    if value is None:
        return "—"
    return value.astimezone(UTC).strftime(fmt) + " UTC"


templates.env.filters["pct"] = pct
templates.env.filters["utc"] = utc
templates.env.globals["Markup"] = Markup


def _csrf(conn: HTTPConnection) -> str:
    token = conn.scope.get("csrftoken")
    return token() if callable(token) else ""


def page(request: Request, template: str, status_code: int = 200, **context: Any
         ) -> HTMLResponse:
    """Render ``template`` with the layout's context: the user, the CSRF token, the tabs."""
    user = request.user if request.user.is_authenticated else None
    ctx = {"user": user, "csrf_token": _csrf(request), "tabs": request.app.state.tabs.ordered(),
           "settings": request.app.state.settings, **context}
    return templates.TemplateResponse(request, template, ctx, status_code=status_code)


def error(conn: HTTPConnection, status: int, detail: str) -> Response:
    """An error page (HTML) with ``status``."""
    if not isinstance(conn, Request):
        return HTMLResponse(f"{status}: {detail}", status_code=status)
    user = conn.user if "user" in conn.scope and conn.user.is_authenticated else None
    return templates.TemplateResponse(
        conn, "error.html",
        {"user": user, "csrf_token": _csrf(conn), "tabs": [], "status": status,
         "detail": detail, "settings": conn.app.state.settings},
        status_code=status)


async def http_error(request: Request, exc: Exception) -> Response:
    """Exception handler: an :class:`HTTPException` as an error page (JSON under ``/api``)."""
    assert isinstance(exc, HTTPException)
    if request.url.path.startswith("/api/"):
        from starlette.responses import JSONResponse

        return JSONResponse({"error": exc.detail}, status_code=exc.status_code)
    return error(request, exc.status_code, str(exc.detail))


async def storage_error(request: Request, exc: Exception) -> Response:
    """Exception handler: the database failed; 503 with a page that says so (nothing of the
    request was applied: every action is one transaction)."""
    import logging

    logging.getLogger(__name__).error("web: %s", exc)
    return error(request, 503, "The database could not be reached; nothing was changed. "
                 "Try again in a moment.")
