"""``evalloop demo``: every service in one process on replayed real feedback (no servers needed).

    evalloop demo                      # the shipped sample, 4 days ending now, ~1-3 min
    evalloop demo --full               # the full public data in ../shared/data
    evalloop demo --keep               # keep the database; its DSN is printed
    evalloop demo --serve              # then serve the web app on the demo's data (Ctrl-C ends)
    evalloop demo --agent-config standard --seed 3 --span-hours 48
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from rich.console import Console

if TYPE_CHECKING:
    import asyncpg

    from evalloop.demo import DemoReport
    from evalloop.settings import Settings

__all__ = ["demo", "serve_after"]

#: the admin the demo creates for its web app (an API token is printed for it)
DEMO_USER = "demo"


async def _serve_until_signal(config: Any) -> None:
    """Serve until SIGINT/SIGTERM, then return normally (uvicorn would re-raise the signal
    after shutting down, and the demo's clean-up -- dropping its database -- would not run)."""
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    server = Server(config)
    loop = asyncio.get_running_loop()
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, lambda: setattr(server, "should_exit", True))
            handled.append(sig)
    try:
        await server.serve()
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)


def serve_after(console: Console, host: str | None, port: int | None) -> Any:
    """The ``after`` hook of ``evalloop demo --serve``: print the report, create the admin
    ``demo`` with a fresh API token, print the URL and the token, then serve the web app on
    the demo database until Ctrl-C (``docs/web.md#open-it-on-the-demos-data``)."""

    async def after(report: DemoReport, pool: asyncpg.Pool, settings: Settings) -> None:
        import uvicorn

        from evalloop.adapters import user_store
        from evalloop.adapters.http_server import http_options
        from evalloop.core.access import Role
        from evalloop.replay.report import dsn_export_line, render
        from evalloop.web.app import build_app

        render(report, console)
        web = settings.web.model_copy(update={k: v for k, v in (("host", host), ("port", port))
                                              if v is not None})
        settings = settings.model_copy(update={"web": web})
        if await user_store.get_user(pool, DEMO_USER) is None:
            await user_store.create_user(pool, DEMO_USER, Role.ADMIN)
        token = await user_store.issue_token(pool, DEMO_USER, "evalloop demo --serve")
        url = f"http://{web.host}:{web.port}/"
        console.print(f"\n[bold]web app[/] {url}  sign in with the API token (user "
                      f"{DEMO_USER}, admin):\n  {token}\nCtrl-C stops it"
                      + ("" if report.kept else " and drops the demo database") + ".",
                      highlight=False, soft_wrap=True)
        console.print("the same data from the command line (queue list, golden list, jobs "
                      "list...) while it serves:", highlight=False)
        console.print(f"  {dsn_export_line(report.dsn)}", highlight=False, soft_wrap=True)
        await _serve_until_signal(uvicorn.Config(build_app(settings, pool=pool), host=web.host,
                                                 port=web.port, log_level="warning",
                                                 **http_options("web", settings)))

    return after


def demo(
    span_hours: Annotated[float, typer.Option(help="replayed span, hours, ending now")] = 96.0,
    seed: Annotated[int, typer.Option(help="seed of the replay schedule")] = 7,
    keep: Annotated[bool, typer.Option(help="keep the demo database (DSN printed)")] = False,
    full: Annotated[bool, typer.Option(
        help="replay the full public data in ../shared/data instead of the shipped sample",
    )] = False,
    source: Annotated[Path | None, typer.Option(
        help="an explicit data folder with feedbackqa/ and tau-bench-airline/",
    )] = None,
    agent_config: Annotated[str, typer.Option(
        help="reference agent behind the incident agent: weak (the regressed deploy) | "
        "standard",
    )] = "weak",
    via: Annotated[str, typer.Option(
        help="ingest (POST /v1/events through the ingest app) | bus (produce directly)",
    )] = "ingest",
    limit: Annotated[int | None, typer.Option(help="replay only the first N events")] = None,
    end: Annotated[str | None, typer.Option(
        help="end of the replayed span, ISO-8601 with a zone (default: now, to the minute); "
        "the same --seed and --end replay the same events",
    )] = None,
    verbose: Annotated[bool, typer.Option(help="log the services' INFO messages")] = False,
    serve: Annotated[bool, typer.Option(
        help="after the report, serve the web app on the demo's data (prints the URL and a "
        "sign-in token; Ctrl-C ends)")] = False,
    host: Annotated[str | None, typer.Option(help="web app address with --serve")] = None,
    port: Annotated[int | None, typer.Option(
        help="web app port with --serve (default settings web.port, 8090)")] = None,
    judge: Annotated[str | None, typer.Option(
        help="embedded (the llama.cpp judge scores a sample of each run: the readiness "
        "verdict) | off; default: readiness.judge (embedded)")] = None,
    judge_sample: Annotated[int, typer.Option(
        min=1, help="answered cases the judge scores per run (the same cases in the baseline "
        "and the re-evaluation)")] = 3,
    judge_budget_s: Annotated[float, typer.Option(
        min=1, help="per run, the judge starts no new case after this many seconds")] = 60.0,
) -> None:
    """Run the whole loop in one process on replayed FeedbackQA/tau-bench feedback and report
    what it found (events, negative rates, re-evaluations and their runs, clusters, candidates).
    """
    from evalloop.cli.replay import parse_end
    from evalloop.demo import DemoOptions, run_demo
    from evalloop.replay.report import render

    if agent_config not in ("weak", "standard"):
        raise typer.BadParameter(f"expected weak or standard, got {agent_config!r}",
                                 param_hint="--agent-config")
    if via not in ("ingest", "bus"):
        raise typer.BadParameter(f"expected ingest or bus, got {via!r}", param_hint="--via")
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # Piped or logged output has no terminal width: rich would fold the report into 80 columns.
    console = Console() if sys.stdout.isatty() else Console(width=140)
    cfg: Literal["weak", "standard"] = "weak" if agent_config == "weak" else "standard"
    mode: Literal["ingest", "bus"] = "ingest" if via == "ingest" else "bus"
    if judge not in (None, "embedded", "off"):
        raise typer.BadParameter(f"expected embedded or off, got {judge!r}", param_hint="--judge")
    judge_mode: Literal["embedded", "off"] | None = (
        None if judge is None else "embedded" if judge == "embedded" else "off")
    options = DemoOptions(span_hours=span_hours, seed=seed, keep=keep, full=full, source=source,
                          agent_config=cfg, via=mode, limit=limit, end=parse_end(end),
                          judge=judge_mode, judge_sample=judge_sample,
                          judge_budget_s=judge_budget_s,
                          after=serve_after(console, host, port) if serve else None)
    try:
        report = asyncio.run(run_demo(options, console))
    except Exception as exc:
        from evalloop.cli._common import fail

        fail(exc, "evalloop demo")  # one line, the docs/exit-codes.md code
    if not serve:  # --serve printed it before serving
        render(report, console)
