"""``evalloop demo``: every service in one process on replayed real feedback (no servers needed).

    evalloop demo                      # the shipped sample, 4 days ending now, ~1-3 min
    evalloop demo --full               # the full public data in ../shared/data
    evalloop demo --keep               # keep the database; its DSN is printed
    evalloop demo --agent-config standard --seed 3 --span-hours 48
"""

from __future__ import annotations

import asyncio
import logging
import sys
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console

__all__ = ["demo"]


def _root_cause(exc: BaseException) -> BaseException:
    """The first leaf of (nested) exception groups: what actually went wrong."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


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
    verbose: Annotated[bool, typer.Option(help="log the services' INFO messages")] = False,
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
    from evalloop.demo import DemoOptions, run_demo
    from evalloop.errors import EvalloopError
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
                          agent_config=cfg, via=mode, limit=limit, judge=judge_mode,
                          judge_sample=judge_sample, judge_budget_s=judge_budget_s)
    try:
        report = asyncio.run(run_demo(options, console))
    except BaseException as exc:
        cause = _root_cause(exc)
        if isinstance(cause, EvalloopError | FileNotFoundError | TimeoutError | ValueError):
            console.print(f"[red]evalloop demo: {type(cause).__name__}: {cause}")
            raise typer.Exit(1) from exc
        raise
    render(report, console)
