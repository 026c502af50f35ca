"""``evalloop gate`` / ``deploy`` / ``baseline`` / ``report``: the readiness verdict.

* ``gate RUN [--judge/--no-judge] [--sample N] [--json] [--conditional-exit 0|1]``: judge the
  run's answers (if not yet judged), decide GO / CONDITIONAL GO / NO-GO, store the decision with
  every input, publish ``readiness.decided.v1`` (``--publish``), print text or JSON.
  Exit (``docs/exit-codes.md``): 0 GO, 1 NO-GO, CONDITIONAL GO ``--conditional-exit`` (default
  ``readiness.conditional_go_exit``, 0), 2 bad input (unknown run), 3 infrastructure.
* ``gate checkpoint RUN NAME --approve|--reject [--note] [--reviewer]``: record a manual
  checkpoint; ``gate sample RUN``: the 10 conversations the sample review reads.
* ``deploy record RUN``: the run's configuration went to production (a baseline candidate).
* ``baseline pin RUN`` / ``baseline unpin --agent A`` / ``baseline show --agent A``.
* ``report hallucinations [--agent A] [--since 7d] [--run RUN] [--json]``.
* ``ab --agent-a URL --agent-b URL [--golden-set FILE] [--sample N] [--json]``: both
  configurations on the same cases at the same time, judged and compared.

The database: ``--db DSN``, else ``EVALLOOP_POSTGRES__DSN``, else the embedded server.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import re
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, TypeVar
from uuid import UUID

import asyncpg
import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from evalloop.adapters import readiness_store as store
from evalloop.adapters.postgres import DRIVER_ERRORS
from evalloop.cli._common import exit_if_missing, json_default, run_with_pool
from evalloop.core.readiness.checkpoints import CHECKPOINTS, CheckpointRecord, sample_conversations
from evalloop.errors import BusError, ConfigError, EvalloopError, JudgeError, StorageError
from evalloop.events import utc_now
from evalloop.settings import Settings

__all__ = ["ab", "baseline_app", "deploy_app", "gate_app", "parse_since", "report_app"]

T = TypeVar("T")
_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False)
DbOption = Annotated[str | None, typer.Option(
    "--db", help="PostgreSQL DSN (default: EVALLOOP_POSTGRES__DSN, else the embedded server).")]


class _DefaultDecide(TyperGroup):
    """``evalloop gate RUN`` runs ``gate decide RUN``; ``gate checkpoint ...`` its sub-command."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and not args[0].startswith("-"):
            args = ["decide", *args]
        return super().parse_args(ctx, args)


gate_app = typer.Typer(cls=_DefaultDecide, no_args_is_help=True,
                       help="The production gate. `evalloop gate RUN [--json] [--sample N] "
                       "[--conditional-exit 0|1]` decides GO / CONDITIONAL GO / NO-GO (exit 0 / "
                       "configurable / 1; `evalloop gate decide --help` lists its options); "
                       "checkpoint and sample record the manual checks.")
deploy_app = typer.Typer(no_args_is_help=True, help="Record deployments (baseline candidates).")
baseline_app = typer.Typer(no_args_is_help=True, help="Pin the run regression compares with.")
report_app = typer.Typer(no_args_is_help=True, help="Reports: hallucinations.")


def _fail(code: int, message: str) -> typer.Exit:
    _err.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def _run_id(value: str) -> UUID:
    try:
        return UUID(value)
    except ValueError:
        raise typer.BadParameter(f"expected a run id (UUID), got {value!r}") from None


#: What ends a command with 3 (infrastructure): the database, the broker, the judge.
_INFRA_ERRORS: tuple[type[BaseException], ...] = (StorageError, BusError, JudgeError,
                                                  *DRIVER_ERRORS)


def _with_pool(db: str | None, work: Callable[[asyncpg.Pool], Awaitable[T]], *,
               read_only: bool = False) -> T:
    """Run ``work`` against the database; errors map to the exit-code table. A read-only
    command (``report hallucinations``) uses the configured database as it is: no embedded
    server, no migrations (``docs/exit-codes.md``)."""
    try:
        return run_with_pool(db, work, read_only=read_only, max_size=4)
    except store_unknown() as exc:
        raise _fail(2, str(exc)) from exc
    except _INFRA_ERRORS as exc:
        if read_only and not isinstance(exc, BusError | JudgeError):
            exit_if_missing(exc, tables="readiness",
                            remedy="the evaluator service, `evalloop gate decide` or "
                                   "`evalloop demo` applies them")
        raise _fail(3, str(exc)) from exc
    except ConfigError as exc:
        raise _fail(2, str(exc)) from exc
    except EvalloopError as exc:
        raise _fail(2, str(exc)) from exc


def store_unknown() -> type[EvalloopError]:
    """The error of an unknown run (a usage error)."""
    from evalloop.readiness.verdict import UnknownRun

    return UnknownRun


@contextlib.asynccontextmanager
async def _bus(settings: Settings, publish: bool) -> AsyncIterator[Any]:
    if not publish:
        yield None
        return
    from evalloop.adapters.kafka import KafkaBus, build_broker, ensure_topics
    from evalloop.runtime import topics_for

    await ensure_topics(settings.kafka, topics_for(settings))
    broker = build_broker(settings.kafka)
    try:
        await broker.connect()
    except Exception as exc:
        raise BusError(f"cannot connect to Kafka at {settings.kafka.bootstrap}: {exc}") from exc
    try:
        yield KafkaBus(broker)
    finally:
        await broker.stop()


def exit_code_for(decision: str, conditional_exit: int) -> int:
    """``docs/exit-codes.md``: GO 0, NO-GO 1, CONDITIONAL GO as configured (0 or 1)."""
    return {"GO": 0, "NO-GO": 1}.get(decision, conditional_exit)


@gate_app.command("decide")
def decide_cmd(
    run: Annotated[str, typer.Argument(help="the evaluation run id")],
    judge: Annotated[bool, typer.Option(
        help="score the run's unjudged answers first (readiness.judge settings)")] = True,
    sample: Annotated[int | None, typer.Option(
        min=1, help="judge at most N answered cases, drawn reproducibly from the run")] = None,
    rejudge: Annotated[bool, typer.Option(help="judge already-scored answers again")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print the JSON report")] = False,
    conditional_exit: Annotated[int | None, typer.Option(
        min=0, max=1, help="exit code of CONDITIONAL GO (default: "
        "readiness.conditional_go_exit, 0)")] = None,
    publish: Annotated[bool | None, typer.Option(
        help="publish readiness.decided.v1 to Kafka (default: when EVALLOOP_KAFKA__BOOTSTRAP "
        "is set)")] = None,
    db: DbOption = None,
) -> None:
    """Decide GO / CONDITIONAL GO / NO-GO for RUN and store the decision (exit 0 GO, 1 NO-GO,
    CONDITIONAL GO configurable)."""
    import os

    from evalloop.readiness.judges import open_judge
    from evalloop.readiness.knowledge import Knowledge
    from evalloop.readiness.report import render_text
    from evalloop.readiness.verdict import decide_run, judge_run
    from evalloop.runtime import topics_for

    run_id = _run_id(run)
    settings = Settings()
    cfg = settings.readiness
    do_publish = publish if publish is not None else bool(
        os.environ.get("EVALLOOP_KAFKA__BOOTSTRAP"))

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        judged: dict[str, Any] = {}
        if await store.run_info(pool, run_id) is None:
            raise store_unknown()(f"no evaluation run {run_id}: see `evalloop jobs list` for "
                                  "run ids")
        pending = [c for c in await store.load_cases(pool, run_id)
                   if c.answer and (rejudge or not c.scores)]
        if judge and cfg.judge != "off" and pending:  # start the judge only if it has work
            async with open_judge(cfg, pool) as j:
                assert j is not None
                res = await judge_run(pool, j, run_id, knowledge=Knowledge.shipped(),
                                      sample=sample or cfg.judge_sample, rejudge=rejudge,
                                      concurrency=cfg.judge_concurrency,
                                      max_claims=cfg.max_claims,
                                      passage_chars=cfg.passage_chars)
                judged = {"judge": j.model, "judged": res.judged, "answered": res.answered,
                          "sampled": res.sampled, "claims": res.claims,
                          "calls": res.usage.calls, "cache_hits": res.usage.cache_hits,
                          "prompt_tokens": res.usage.prompt_tokens,
                          "completion_tokens": res.usage.completion_tokens,
                          "cost_usd": res.usage.cost_usd, "seconds": round(res.seconds, 1)}
        async with _bus(settings, do_publish) as bus:
            verdict = await decide_run(
                pool, run_id, composite_bar=cfg.composite_bar,
                reeval_after=timedelta(seconds=cfg.reeval_after_s), bus=bus,
                topics=topics_for(settings), judged=judged)
        return dict(verdict.report)

    report = _with_pool(db, work)
    if as_json:
        sys.stdout.write(json.dumps(report, sort_keys=True) + "\n")
    else:
        _out.print(escape(render_text(report)))
    exit_with = cfg.conditional_go_exit if conditional_exit is None else conditional_exit
    raise typer.Exit(exit_code_for(report["decision"], exit_with))


@gate_app.command("checkpoint")
def checkpoint_cmd(
    run: Annotated[str, typer.Argument(help="the evaluation run id")],
    name: Annotated[str, typer.Argument(help=f"one of {', '.join(CHECKPOINTS)}")],
    approve: Annotated[bool, typer.Option("--approve", help="approve the checkpoint")] = False,
    reject: Annotated[bool, typer.Option("--reject", help="reject the checkpoint")] = False,
    note: Annotated[str, typer.Option(help="the reviewer's note")] = "",
    reviewer: Annotated[str | None, typer.Option(help="who decided (default: $USER)")] = None,
    db: DbOption = None,
) -> None:
    """Record a manual checkpoint of RUN as approved or rejected (reviewer, time, note)."""
    if approve == reject:
        raise typer.BadParameter("give exactly one of --approve or --reject")
    if name not in CHECKPOINTS:
        raise typer.BadParameter(f"expected one of {', '.join(CHECKPOINTS)}, got {name!r}",
                                 param_hint="NAME")
    run_id = _run_id(run)
    who = reviewer or getpass.getuser()
    record = CheckpointRecord(name, "approved" if approve else "rejected", who, utc_now(), note)

    async def work(pool: asyncpg.Pool) -> list[str] | None:
        if await store.run_info(pool, run_id) is None:
            raise store_unknown()(f"no evaluation run {run_id}")
        sample = None
        if name == "sample_review":
            cases = await store.load_cases(pool, run_id)
            sample = sample_conversations(str(run_id), [c.case_id for c in cases])
        await store.add_checkpoint(pool, run_id, record, sample)
        return sample

    sample = _with_pool(db, work)
    _out.print(f"{name} {record.status} by {who} at {record.decided_at:%Y-%m-%dT%H:%M:%SZ}"
               + (f" (sample: {', '.join(sample)})" if sample else ""))


@gate_app.command("sample")
def sample_cmd(
    run: Annotated[str, typer.Argument(help="the evaluation run id")],
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines")] = False,
    db: DbOption = None,
) -> None:
    """The 10 conversations of RUN the sample review reads (drawn reproducibly from the run)."""
    run_id = _run_id(run)

    async def work(pool: asyncpg.Pool) -> list[store.RunCase]:
        if await store.run_info(pool, run_id) is None:
            raise store_unknown()(f"no evaluation run {run_id}")
        cases = await store.load_cases(pool, run_id)
        keep = sample_conversations(str(run_id), [c.case_id for c in cases])
        by_id = {c.case_id: c for c in cases}
        return [by_id[i] for i in keep]

    for c in _with_pool(db, work):
        if as_json:
            sys.stdout.write(json.dumps({"case_id": c.case_id, "question": c.question,
                                         "answer": c.answer, "status": c.status}) + "\n")
        else:
            _out.print(f"[bold]{escape(c.case_id)}[/bold] ({c.status})\n  Q: "
                       f"{escape(c.question)}\n  A: {escape(c.answer or '(no answer)')}")


@deploy_app.command("record")
def deploy_record(
    run: Annotated[str, typer.Argument(help="the evaluation run of the deployed configuration")],
    note: Annotated[str | None, typer.Option(help="a note (release, ticket)")] = None,
    db: DbOption = None,
) -> None:
    """Record that RUN's configuration was deployed: a GO run so recorded is the agent's
    baseline (unless a run is pinned)."""
    run_id = _run_id(run)

    async def work(pool: asyncpg.Pool) -> str:
        info = await store.run_info(pool, run_id)
        if info is None:
            raise store_unknown()(f"no evaluation run {run_id}")
        if info.agent_id is None:
            raise ConfigError(f"run {run_id} names no agent: it cannot be an agent's baseline")
        await store.record_deployment(pool, agent_id=info.agent_id, run_id=run_id,
                                      deployed_at=utc_now(), source="cli",
                                      recorded_by=getpass.getuser(), note=note)
        latest = await store.latest_decision(pool, run_id)
        return info.agent_id + ("" if latest and latest["decision"] == "GO" else
                                " (note: its decision is not GO, so it is not a baseline)")

    _out.print(f"recorded the deployment of run {run_id} for agent {_with_pool(db, work)}")


@baseline_app.command("pin")
def baseline_pin(
    run: Annotated[str, typer.Argument(help="the run to compare later runs with")],
    note: Annotated[str | None, typer.Option(help="why")] = None,
    db: DbOption = None,
) -> None:
    """Pin RUN as its agent's baseline (it wins over the last deployed GO run)."""
    run_id = _run_id(run)

    async def work(pool: asyncpg.Pool) -> str:
        info = await store.run_info(pool, run_id)
        if info is None:
            raise store_unknown()(f"no evaluation run {run_id}")
        if info.agent_id is None:
            raise ConfigError(f"run {run_id} names no agent: it cannot be an agent's baseline")
        await store.pin_baseline(pool, info.agent_id, run_id, pinned_by=getpass.getuser(),
                                 note=note)
        return info.agent_id

    _out.print(f"pinned run {run_id} as the baseline of agent {_with_pool(db, work)}")


@baseline_app.command("unpin")
def baseline_unpin(
    agent: Annotated[str, typer.Option("--agent", help="the agent")],
    db: DbOption = None,
) -> None:
    """Remove the agent's pinned baseline (the last deployed GO run is used again)."""
    removed = _with_pool(db, lambda pool: store.unpin_baseline(pool, agent))
    _out.print(f"unpinned the baseline of {agent}" if removed else f"{agent} had no pinned run")


@baseline_app.command("show")
def baseline_show(
    agent: Annotated[str, typer.Option("--agent", help="the agent")],
    db: DbOption = None,
) -> None:
    """Which run regression would compare the agent's next run with, and why."""
    choice = _with_pool(db, lambda pool: store.find_baseline(
        pool, agent, exclude=UUID(int=0)))
    _out.print(f"{agent}: {choice.run_id} ({choice.how})" if choice.run_id
               else f"{agent}: no baseline ({choice.how})")


_SINCE = re.compile(r"^(\d+)\s*([smhdw])$")


def parse_since(value: str, now: datetime) -> datetime:
    """``7d``, ``24h``, ``30m``, ``2w``, ``45s`` before ``now``, or an ISO-8601 time (UTC if naive).

    Raises:
        typer.BadParameter: anything else.
    """
    m = _SINCE.match(value.strip())
    if m:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
        return now - timedelta(**{unit[m.group(2)]: int(m.group(1))})
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise typer.BadParameter(f"expected a span like 7d / 24h or an ISO time, got {value!r}",
                                 param_hint="--since") from None
    return t if t.tzinfo else t.replace(tzinfo=now.tzinfo)


@report_app.command("hallucinations")
def report_hallucinations(
    agent: Annotated[str | None, typer.Option("--agent", help="only this agent")] = None,
    since: Annotated[str, typer.Option(help="claims judged since: 7d, 24h or an ISO time")] = "7d",
    run: Annotated[str | None, typer.Option("--run", help="only this run")] = None,
    limit: Annotated[int, typer.Option(min=1, help="claims listed at most")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines, one claim each")] = False,
    db: Annotated[str | None, typer.Option(
        "--db", help="PostgreSQL DSN (default EVALLOOP_POSTGRES__DSN). Read-only: never the "
                     "embedded server, never a migration.")] = None,
) -> None:
    """Hallucinated claims by category, each with its trace: claim, retrieved passages,
    groundedness (support) score, nearest passage, suggested correction."""
    from evalloop.readiness.report import hallucination_counts

    start = parse_since(since, utc_now())
    run_id = _run_id(run) if run else None

    async def work(pool: asyncpg.Pool) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        every = await store.list_claims(pool, agent_id=agent, since=start, run_id=run_id,
                                        hallucinated_only=False, limit=1_000_000)
        return every, [c for c in every if c["category"] is not None][:limit]

    every, bad = _with_pool(db, work, read_only=True)
    counts = hallucination_counts(every)
    if as_json:
        for c in bad:
            sys.stdout.write(json.dumps(c, default=json_default) + "\n")  # ISO times
        return
    scope = f"agent {agent}" if agent else "all agents"
    _out.print(f"hallucinations, {scope}, since {start:%Y-%m-%d %H:%M}Z: {counts['claims']} "
               f"claims checked, {counts['supported']} supported, {counts['unscored']} unscored")
    for cat in ("fabricated", "exaggerated", "conflated", "outdated", "implicit_assumption"):
        _out.print(f"  {cat:<20} {counts[cat]}")
    for c in bad:
        score = "-" if c["score"] is None else f"{c['score']:.2f}"
        _out.print(f"\n[bold]{c['category']}[/bold] run {c['run_id']} case "
                   f"{escape(c['case_id'])} claim {c['claim_index']} (support {score})")
        _out.print(f"  claim: {escape(c['claim'])}")
        _out.print(f"  why: {escape(c['reason'])}")
        _out.print(f"  retrieved: {escape(', '.join(c['passages']) or '(none)')}")
        if c["nearest_passage_id"]:
            text = c["nearest_passage"] or ""
            _out.print(f"  nearest passage {escape(c['nearest_passage_id'])}: "
                       f"{escape(text[:240])}{'...' if len(text) > 240 else ''}")
        if c["correction"]:
            _out.print(f"  suggested correction: {escape(c['correction'])}")


def ab(
    agent_a: Annotated[str, typer.Option("--agent-a", help="endpoint URL of configuration A")],
    agent_b: Annotated[str, typer.Option("--agent-b", help="endpoint URL of configuration B")],
    golden_set: Annotated[Path | None, typer.Option(
        "--golden-set", help="golden-set JSON or eval-set YAML (default: the shipped HR set)")
    ] = None,
    label: Annotated[str, typer.Option(
        "--agent", help="the agent id the cases and both runs are stored under")] = "ab",
    sample: Annotated[int | None, typer.Option(
        min=1, help="judge at most N cases (the same ones on both sides)")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="requests in flight per side")] = 4,
    as_json: Annotated[bool, typer.Option("--json", help="print the JSON report")] = False,
    db: DbOption = None,
) -> None:
    """Run the same cases against A and B at the same time, judge both, and report per
    dimension both means, the paired difference with its interval and p-value, the most
    divergent cases with both answers, and which version is better and by how much."""
    from evalloop.cli.eval_cmd import bundled_evals
    from evalloop.core.evaluation.cases import load_eval_file
    from evalloop.readiness.ab import ab_json, render_ab, run_ab
    from evalloop.readiness.judges import open_judge

    for name, url in (("--agent-a", agent_a), ("--agent-b", agent_b)):
        if not url.startswith(("http://", "https://")):
            raise typer.BadParameter(f"expected an http(s) URL, got {url!r}", param_hint=name)
    try:
        eval_set = load_eval_file(golden_set or bundled_evals())
    except EvalloopError as exc:
        raise _fail(2, str(exc)) from exc
    cfg = Settings().readiness
    if cfg.judge == "off":
        raise _fail(2, "A/B needs a judge: readiness.judge is off "
                       "(EVALLOOP_READINESS__JUDGE=embedded|openai)")

    async def work(pool: asyncpg.Pool) -> dict[str, Any]:
        async with open_judge(cfg, pool) as judge:
            assert judge is not None
            res = await run_ab(pool, judge, eval_set, agent_a, agent_b, agent_id=label,
                               concurrency=concurrency, sample=sample or cfg.judge_sample,
                               timeout_s=cfg.judge_timeout_s)
        return ab_json(res)

    data = _with_pool(db, work)
    if as_json:
        sys.stdout.write(json.dumps(data, sort_keys=True) + "\n")
    else:
        _out.print(escape(render_ab(data)))
