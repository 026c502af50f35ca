"""``evalloop replay``: produce the replayed feedback events to Kafka or to the ingest API.

    evalloop replay                                  # shipped sample -> Kafka (settings.kafka)
    evalloop replay --source ../shared/data          # the full public data sets
    evalloop replay --ingest-url http://127.0.0.1:8080 --span-hours 48 --seed 3
    evalloop replay --agents covid-qa-uk,covid-qa-who --limit 5000
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

if TYPE_CHECKING:
    from evalloop.replay.schedule import ScheduledEvent
    from evalloop.settings import Settings

__all__ = ["event_progress", "replay"]


def event_progress(console: Console) -> Progress:
    """The rich progress bar used by ``replay`` and ``demo`` (events delivered / total)."""
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TextColumn("events"), TimeElapsedColumn(), console=console,
    )


def _agents(value: str | None) -> list[str] | None:
    return [a.strip() for a in value.split(",") if a.strip()] if value else None


def _end(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        end = datetime.fromisoformat(value)
    except ValueError as exc:
        raise typer.BadParameter(
            f"expected an ISO-8601 time with a zone, e.g. 2025-06-01T12:00:00Z; got {value!r}",
            param_hint="--end",
        ) from exc
    if end.tzinfo is None:
        raise typer.BadParameter(f"expected a time zone in {value!r} (e.g. Z)", param_hint="--end")
    return end


def replay(
    source: Annotated[Path | None, typer.Option(
        help="data folder with feedbackqa/ and tau-bench-airline/ (default: the shipped sample)",
    )] = None,
    ingest_url: Annotated[str | None, typer.Option(
        help="POST to this ingest service (http://host:port) instead of producing to Kafka",
    )] = None,
    bootstrap: Annotated[str | None, typer.Option(
        help="Kafka bootstrap servers (default: settings, EVALLOOP_KAFKA__BOOTSTRAP)",
    )] = None,
    span_hours: Annotated[float, typer.Option(help="length of the replayed span, hours")] = 96.0,
    seed: Annotated[int, typer.Option(help="seed of every random choice of the schedule")] = 7,
    limit: Annotated[int | None, typer.Option(help="deliver only the first N events")] = None,
    agents: Annotated[str | None, typer.Option(help="comma-separated agent ids to replay")] = None,
    end: Annotated[str | None, typer.Option(
        help="end of the span, ISO-8601 with a zone (default: now)",
    )] = None,
    batch_size: Annotated[int, typer.Option(help="events per publish / POST")] = 500,
    api_key_env: Annotated[str, typer.Option(
        help="environment variable holding ingest's API key (sent as a Bearer token; the "
        "token itself never goes on the command line: docs/security.md#api-keys)",
    )] = "EVALLOOP_API_KEY",
) -> None:
    """Replay FeedbackQA and tau-bench as production feedback events (times assigned here)."""
    from evalloop.replay import prepare_replay
    from evalloop.settings import Settings

    console = Console()
    try:
        prepared = prepare_replay(
            source=source, span_hours=span_hours, seed=seed, agents=_agents(agents),
            limit=limit, end=_end(end),
        )
    except (ValueError, FileNotFoundError) as exc:
        console.print(f"[red]evalloop replay: {exc}")
        raise typer.Exit(2) from exc
    console.print(f"source: {prepared.origin}")
    for line in prepared.schedule.describe():
        console.print(line)
    settings = Settings()
    if bootstrap:
        settings = settings.model_copy(
            update={"kafka": settings.kafka.model_copy(update={"bootstrap": bootstrap})}
        )
    from evalloop.core.redaction import redact_url

    target = redact_url(ingest_url) if ingest_url else f"Kafka {settings.kafka.bootstrap}"
    token = os.environ.get(api_key_env) if ingest_url else None
    if ingest_url and not token:
        console.print(f"[red]evalloop replay: --ingest-url needs an API key in the environment "
                      f"variable {api_key_env} (create one with: evalloop keys create)")
        raise typer.Exit(2)
    try:
        sent = asyncio.run(
            _run(prepared.events, settings, ingest_url, batch_size, console, token))
    except Exception as exc:
        from evalloop.cli._common import fail

        fail(exc, "evalloop replay")  # docs/exit-codes.md: broker/ingest unreachable -> 3
    console.print(f"delivered {sent} events to {target}")


async def _run(
    events: Sequence[ScheduledEvent],
    settings: Settings,
    ingest_url: str | None,
    batch_size: int,
    console: Console,
    token: str | None = None,
) -> int:
    import httpx

    from evalloop.replay.producer import IngestSink, deliver, kafka_sink

    with event_progress(console) as progress:
        task = progress.add_task("replaying", total=len(events))

        def advance(n: int) -> None:
            progress.advance(task, n)

        if ingest_url:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            async with httpx.AsyncClient(timeout=60.0, headers=headers) as client:
                return await deliver(
                    events, IngestSink(client, ingest_url), batch_size=batch_size,
                    on_batch=advance,
                )
        async with kafka_sink(settings) as sink:
            return await deliver(events, sink, batch_size=batch_size, on_batch=advance)
