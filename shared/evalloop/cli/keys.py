"""``evalloop keys create|list|revoke``: ingest's API keys (``docs/security.md#api-keys``).

``create`` prints the token once (it is stored only as a SHA-256 digest); ``list`` never shows
tokens. Connects to the PostgreSQL named by settings (``EVALLOOP_POSTGRES__DSN``) or the embedded
server, migrating it first. Exit codes: ``docs/exit-codes.md`` (2 unknown key / bad option,
3 database unreachable).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypeVar

import asyncpg
import typer
from limits import parse

from evalloop.adapters import key_store
from evalloop.cli._common import exit_if_missing, fail, run_with_pool
from evalloop.core.apikeys import check_key_name
from evalloop.errors import ConfigError, EvalloopError

__all__ = ["app", "create", "list_cmd", "revoke"]

app = typer.Typer(no_args_is_help=True, help="API keys of the ingest service.")
T = TypeVar("T")


def _with_pool(work: Callable[[asyncpg.Pool], Awaitable[T]], *, read_only: bool = False) -> T:
    """Run ``work`` on a pool. A read-only command (``keys list``) uses the configured database
    as it is: no embedded server, no migrations (``docs/exit-codes.md``)."""
    try:
        return run_with_pool(None, work, read_only=read_only, max_size=1)
    except ConfigError as exc:
        fail(exc)
    except Exception as exc:
        if read_only:
            exit_if_missing(exc, tables="API-key",
                            remedy="`evalloop keys create` or the ingest service applies them")
        if isinstance(exc, EvalloopError):
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(3) from None
        raise


def _describe(row: key_store.KeyRow) -> str:
    agents = ", ".join(row.agent_ids) if row.agent_ids is not None else "all agents"
    state = f"revoked {row.revoked_at:%Y-%m-%d %H:%M:%S}" if row.revoked_at else "active"
    rate = row.rate_limit or "default rate"
    return f"{row.key_id}  {row.name}  [{agents}]  {rate}  {state}"


@app.command("create")
def create(
    name: Annotated[str, typer.Option("--name", help="what the key is for (shown by list)")],
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", metavar="<str>",
        help="an agent id the key may send events for (repeatable)")] = None,
    all_agents: Annotated[bool, typer.Option(
        "--all-agents", help="the key may send events of every agent")] = False,
    rate_limit: Annotated[str | None, typer.Option(
        "--rate-limit", help="this key's rate, e.g. 20/second (default: ingest.rate_limit)")]
    = None,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON line")] = False,
) -> None:
    """Create a key and print its token ONCE (store it in a secret manager now).

    Example: evalloop keys create --name hr-frontend --agent hr-agent.
    """
    if bool(agent) == all_agents:
        raise typer.BadParameter("give --agent ID (repeatable) or --all-agents, not both/none")
    try:
        name = check_key_name(name)
    except ValueError as exc:
        fail(exc)
    if rate_limit is not None:
        try:
            parse(rate_limit)
        except ValueError:
            raise typer.BadParameter(
                f"expected a rate such as 20/second or 1000/minute, got {rate_limit!r}",
                param_hint="--rate-limit") from None
    agents = None if all_agents else list(agent or [])
    token, row = _with_pool(
        lambda pool: key_store.create_key(pool, name, agent_ids=agents, rate_limit=rate_limit))
    if as_json:
        typer.echo(json.dumps({**row.as_json(), "token": token.token}))
        return
    typer.echo(f"created {_describe(row)}")
    typer.echo(f"token (shown once): {token.token}")
    typer.echo("send it as: Authorization: Bearer <token>")


@app.command("list")
def list_cmd(
    active: Annotated[bool, typer.Option("--active", help="hide revoked keys")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines")] = False,
) -> None:
    """List keys (id, name, agents, rate, state); tokens are never shown."""
    rows = _with_pool(lambda pool: key_store.list_keys(pool, include_revoked=not active),
                      read_only=True)
    for row in rows:
        out: Any = json.dumps(row.as_json()) if as_json else _describe(row)
        typer.echo(out)


@app.command("revoke")
def revoke(
    key_id: Annotated[str, typer.Argument(help="the key id (from keys list)")],
    as_json: Annotated[bool, typer.Option("--json", help="one JSON line")] = False,
) -> None:
    """Revoke a key: ingest refuses it (401) within ingest.key_cache_s seconds."""
    row = _with_pool(lambda pool: key_store.revoke_key(pool, key_id))
    if row is None:
        typer.echo(f"error: no API key {key_id!r} (see evalloop keys list)", err=True)
        raise typer.Exit(2)
    typer.echo(json.dumps(row.as_json()) if as_json else f"revoked {_describe(row)}")
