"""Sign-in (a local user's password, or an API token) and sign-out."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from evalloop.adapters import user_store
from evalloop.web.auth import SESSION_USER, safe_next
from evalloop.web.render import page

__all__ = ["login_page", "login_submit", "logout"]


async def login_page(request: Request) -> Response:
    """``GET /login``: the sign-in form."""
    return page(request, "login.html", next=safe_next(request.query_params.get("next")),
                failed=False)


async def login_submit(request: Request) -> Response:
    """``POST /login``: check a password or a token; on success start a session.

    A failed sign-in answers 401 with the form again and the same message for every cause
    (unknown user, wrong password, disabled, bad token): nothing tells which.
    """
    form = await request.form()
    pool = request.app.state.pool
    target = safe_next(str(form.get("next") or ""))
    token = str(form.get("token") or "").strip()
    if token:
        user = await user_store.authenticate_token(pool, token)
    else:
        user = await user_store.authenticate_password(
            pool, str(form.get("username") or "").strip(), str(form.get("password") or ""))
    if user is None:
        return page(request, "login.html", status_code=401, next=target, failed=True)
    request.session.clear()
    request.session[SESSION_USER] = user.username
    return RedirectResponse(target, status_code=303)


async def logout(request: Request) -> Response:
    """``POST /logout``: end the session."""
    request.session.clear()
    return RedirectResponse(request.url_for("login"), status_code=303)
