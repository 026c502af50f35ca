"""``evalloop web`` (serve the web app) and ``evalloop users create|list|token``.

    evalloop web --port 8090                          # http://127.0.0.1:8090
    evalloop users create alice --role reviewer --with-password
    evalloop users token alice                        # prints a new API token once
    evalloop users list --json

The database is ``EVALLOOP_POSTGRES__DSN`` (or ``--db``), else the embedded server; migrations
are applied first. Exit codes (``docs/exit-codes.md``): 2 for a bad name, role or password or
an existing / unknown user, 3 when the database cannot be reached.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable
from typing import Annotated, TypeVar

import asyncpg
import typer

from evalloop.adapters import user_store
from evalloop.adapters.postgres import DRIVER_ERRORS
from evalloop.cli._common import exit_if_missing, run_with_pool
from evalloop.core.access import Role
from evalloop.errors import ConfigError, StorageError
from evalloop.settings import Settings

__all__ = ["serve_web", "users_app", "web"]

T = TypeVar("T")
users_app = typer.Typer(no_args_is_help=True,
                        help="Web app users: create, list, issue API tokens (docs/web.md).")
DbOption = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default EVALLOOP_POSTGRES__DSN, else the embedded server).")]

#: PostgreSQL failed, as a store reports it or as the driver raised it.
_DB_ERRORS: tuple[type[BaseException], ...] = (StorageError, *DRIVER_ERRORS)


def _fail(code: int, message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _with_pool(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]], *,
               read_only: bool = False) -> T:
    """Run ``work`` on a pool. A read-only command (``users list``) uses the configured
    database as it is: no embedded server, no migrations (``docs/exit-codes.md``)."""
    try:
        return run_with_pool(db, work, read_only=read_only)
    except ConfigError as exc:
        raise _fail(2, str(exc)) from None
    except _DB_ERRORS as exc:
        if read_only:
            exit_if_missing(exc, tables="web-user",
                            remedy="`evalloop users create` or `evalloop web` applies them")
        raise _fail(3, f"database: {exc}") from None
    except (ValueError, user_store.UserError) as exc:
        raise _fail(2, str(exc)) from None


@users_app.command("create")
def create_cmd(
    name: Annotated[str, typer.Argument(help="User name (letters, digits, _.@-).")],
    role: Annotated[str, typer.Option(help="viewer | reviewer | admin")] = "viewer",
    with_password: Annotated[bool, typer.Option(
        "--with-password", help="Ask for a password (read from stdin when not a terminal); "
        "without it the user signs in with API tokens only.")] = False,
    db: DbOption = None,
) -> None:
    """Create a web app user."""
    try:
        parsed = Role.parse(role)
    except ValueError as exc:
        raise _fail(2, str(exc)) from None
    password = None
    if with_password:
        password = typer.prompt("password", hide_input=True,
                                confirmation_prompt=sys.stdin.isatty())
    user = _with_pool(db, lambda pool: user_store.create_user(pool, name, parsed, password))
    typer.echo(f"created {user.username} ({user.role.value}"
               + (", password set)" if user.has_password else ", token sign-in only)"))


@users_app.command("list")
def list_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
    db: Annotated[str | None, typer.Option(
        "--db", help="PostgreSQL DSN (default EVALLOOP_POSTGRES__DSN). Read-only: never the "
                     "embedded server, never a migration.")] = None,
) -> None:
    """List web app users with their role and active tokens."""
    users = _with_pool(db, user_store.list_users, read_only=True)
    for u in users:
        if as_json:
            typer.echo(json.dumps({
                "username": u.username, "role": u.role.value, "has_password": u.has_password,
                "tokens": u.tokens, "created_at": u.created_at.isoformat(),
                "disabled_at": u.disabled_at.isoformat() if u.disabled_at else None}))
        else:
            typer.echo(f"{u.username:<24} {u.role.value:<9} "
                       f"{'password' if u.has_password else 'no password':<12} "
                       f"{u.tokens} token(s)" + (" DISABLED" if u.disabled_at else ""))
    if not users and not as_json:
        typer.echo("no users; create one with `evalloop users create NAME --role admin`")


@users_app.command("token")
def token_cmd(
    name: Annotated[str, typer.Argument(help="User name.")],
    label: Annotated[str | None, typer.Option(help="What the token is for.")] = None,
    db: DbOption = None,
) -> None:
    """Issue an API token for a user and print it (only its hash is stored: copy it now).

    Sign in with it on the web app's sign-in page, or send ``Authorization: Bearer TOKEN`` to
    the JSON API.
    """
    typer.echo(_with_pool(db, lambda pool: user_store.issue_token(pool, name, label)))


def serve_web(settings: Settings, *, pool: asyncpg.Pool | None = None) -> None:
    """Serve the web app with uvicorn on ``settings.web.host:port`` until Ctrl-C."""
    import uvicorn

    from evalloop.adapters.http_server import http_options
    from evalloop.web.app import build_app

    uvicorn.run(build_app(settings, pool=pool), host=settings.web.host, port=settings.web.port,
                log_level="warning", **http_options("web", settings))


def web(
    host: Annotated[str | None, typer.Option(help="Address (default settings web.host).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default settings web.port, 8090).")
                    ] = None,
    db: DbOption = None,
) -> None:
    """Serve the web app: every agent's feedback loop, the review queue, golden sets and eval
    runs (docs/web.md).

    Create a user first: evalloop users create NAME --role admin.
    """
    settings = Settings()
    web_cfg = settings.web.model_copy(update={k: v for k, v in (("host", host), ("port", port))
                                              if v is not None})
    update: dict[str, object] = {"web": web_cfg}
    if db:
        update["postgres"] = settings.postgres.model_copy(update={"dsn": db})
    settings = settings.model_copy(update=update)
    typer.echo(f"evalloop web: http://{settings.web.host}:{settings.web.port}/", err=True)
    try:
        serve_web(settings)
    except (StorageError, OSError) as exc:
        raise _fail(3, f"web app: {exc}") from None
