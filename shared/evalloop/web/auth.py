"""Who is asking: a session cookie (signed, set at sign-in) or an ``Authorization: Bearer``
API token, resolved once per request by Starlette's ``AuthenticationMiddleware``.

Scopes given to a signed-in user (``docs/web.md#access``): ``authenticated`` always,
``review`` for reviewers and admins, ``admin`` for admins. Views declare what they need with
``starlette.authentication.requires``. The user is re-read on every request, so a disabled
user or a changed role takes effect at once.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.authentication import (
    AuthCredentials,
    AuthenticationBackend,
    BaseUser,
)
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from evalloop.adapters import user_store
from evalloop.core.access import Role, can_review

__all__ = [
    "SESSION_USER",
    "ReviewerMiddleware",
    "SessionOrTokenBackend",
    "WebUser",
    "safe_next",
    "scopes_of",
]

#: the session key holding the signed-in user's name
SESSION_USER = "user"


class WebUser(BaseUser):
    """The signed-in person (Starlette's user protocol), with their role."""

    def __init__(self, username: str, role: Role, via: str) -> None:
        self.username = username
        self.role = role
        self.via = via  # "session" or "token"

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.username

    @property
    def can_review(self) -> bool:
        """Whether this user may change a review queue."""
        return can_review(self.role)


def scopes_of(role: Role) -> list[str]:
    """Starlette scopes of ``role``: ``authenticated`` (+ ``review``) (+ ``admin``)."""
    scopes = ["authenticated"]
    if can_review(role):
        scopes.append("review")
    if role is Role.ADMIN:
        scopes.append("admin")
    return scopes


class SessionOrTokenBackend(AuthenticationBackend):
    """Authenticate by ``Authorization: Bearer <token>`` or by the session's user name."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        pool = conn.app.state.pool
        header = conn.headers.get("authorization", "")
        if header.lower().startswith("bearer "):
            user = await user_store.authenticate_token(pool, header[7:])
            via = "token"
        else:
            name = conn.session.get(SESSION_USER) if "session" in conn.scope else None
            if not name:
                return None
            user = await user_store.get_user(pool, name)
            if user is not None and user.disabled_at is not None:
                user = None
            via = "session"
        if user is None:
            return None
        return AuthCredentials(scopes_of(user.role)), WebUser(user.username, user.role, via)


def safe_next(value: str | None, default: str = "/") -> str:
    """A local path to go to after sign-in: the path and query of ``value`` (never another
    host: an absolute URL keeps only its path), ``default`` when empty, not a path, or a path
    a browser would read as another host (``//host``, a backslash)."""
    if not value:
        return default
    parts = urlsplit(value)
    path = parts.path
    # browsers read a backslash as a slash: "/\\host" would leave the site
    if not path.startswith("/") or path.startswith("//") or "\\" in path:
        return default
    return path + (f"?{parts.query}" if parts.query else "")


class ReviewerMiddleware:
    """Put the signed-in user on ``request.state.reviewer`` as the review API's
    :class:`evalloop.core.review.Reviewer` (the API answers 401 without one, 403 to viewers
    that try to act)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from evalloop.core.review import Reviewer

        user = scope.get("user")
        if scope["type"] == "http" and isinstance(user, WebUser):
            scope.setdefault("state", {})["reviewer"] = Reviewer(user.username, user.role.value)
        await self.app(scope, receive, send)
