"""``evalloop demo``: the whole loop in one process on replayed real feedback, then what it found.

No external servers: an embedded PostgreSQL 18 (a fresh database per run, dropped afterwards
unless ``keep``), the :class:`~evalloop.adapters.bus.InProcessBus` with every service mounted
(recorder, monitor, triage, evaluator: the same handler code as on Kafka), the ingest service's
HTTP app (over ``httpx.ASGITransport``), and the reference agent served over real HTTP on a
free port, registered as the endpoint of the incident agent with the shipped golden set.

Phases (wall time of each is measured and reported):

1. start PostgreSQL, create and migrate the demo database; load the embedder (MiniLM);
2. start the reference agent, register it, import the golden set;
3. replay the sample (or ``../shared/data`` with ``full``) through ``POST /v1/events`` while
   the services consume; progress bars for delivery, storage and triage;
4. drain the bus, wait for the re-evaluation jobs to finish, drain again;
5. report: events stored by type, dead letters, the 24 h negative rate per agent over time
   (Wilson 95% interval, denominator), the re-evaluation requests (when, why) and the run each
   produced (gate results) with its **readiness verdict** (scores, composite, regression
   against the baseline, hallucination counts, decision and why), the top clusters (labels,
   sizes, example questions) and the top golden-set candidates.

The verdict needs a baseline: before the replay the demo evaluates the agent's *standard*
configuration on the same golden set, judges it and **pins** it as the baseline (the demo has
no deployed GO run; pinning is the guide's other way to choose one). The judge (the embedded
llama.cpp server, ``judge``) scores a seeded sample of ``judge_sample`` cases of each run, the
same cases in both (``docs/readiness.md#the-demo``), so the demo stays within minutes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import asyncpg
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evalloop.adapters import monitor_store
from evalloop.adapters.postgres import connect_pool, create_database, migrate, start_embedded
from evalloop.core.window import WindowReport
from evalloop.replay import Replay, prepare_replay
from evalloop.replay.corpus import SAMPLE_DIR
from evalloop.replay.loop import Loop, in_process_loop
from evalloop.replay.producer import deliver
from evalloop.settings import Settings

if TYPE_CHECKING:
    from evalloop.readiness.verdict import JudgeRunResult

__all__ = ["DemoOptions", "DemoReport", "baseline_line", "run_demo"]


@dataclass(frozen=True)
class DemoOptions:
    """What ``evalloop demo`` runs.

    Attributes:
        span_hours: replayed span, hours (event times end now).
        seed: seed of the replay schedule.
        keep: keep the demo database (its DSN is printed) instead of dropping it.
        full: replay the full public data (``../shared/data``) instead of the shipped sample.
        source: an explicit data folder (overrides ``full``).
        agent_config: the reference agent serving the incident agent: ``weak`` (the
            deliberately regressed configuration: the bad deploy behind the incident) or
            ``standard``.
        via: ``ingest`` (POST through the ingest service's HTTP app) or ``bus`` (produce to
            the topic directly).
        admin_dsn: an existing PostgreSQL admin DSN (tests); default the embedded server in
            ``settings.postgres.embedded_dir``.
        embedder: the triage embedder (tests inject a fast one); default MiniLM, offline.
        end: end of the replayed span (default now); ``limit``, ``agents``: see ``replay``.
        settings: base settings (default from the environment).
        job_timeout_s: how long to wait for re-evaluation runs (judged) to finish, seconds.
        services: the service classes to run (default recorder, monitor, triage, evaluator).
        after: called with the finished report, the open pool and the demo's settings while
            the demo database still exists (``evalloop demo --serve`` serves the web app on
            it); the database is dropped (unless ``keep``) once it returns.
        judge: ``embedded`` (the llama.cpp judge scores the runs) or ``off`` (no verdict
            scores: the gate says readiness cannot be shown); ``None``: ``readiness.judge``.
        judge_sample: answered cases the judge scores per run (the same in both runs).
        judge_claims: claims checked per judged answer.
        judge_budget_s: per run, the judge starts no new case after this many seconds (the
            demo stays within minutes on a busy machine; what it skipped is said).
    """

    span_hours: float = 96.0
    seed: int = 7
    keep: bool = False
    full: bool = False
    source: Path | None = None
    agent_config: Literal["weak", "standard"] = "weak"
    via: Literal["ingest", "bus"] = "ingest"
    admin_dsn: str | None = None
    embedder: Any | None = None
    end: datetime | None = None
    limit: int | None = None
    agents: list[str] | None = None
    settings: Settings | None = None
    job_timeout_s: float = 900.0
    services: tuple[type, ...] | None = None
    after: Callable[[DemoReport, asyncpg.Pool, Settings], Awaitable[None]] | None = None
    judge: Literal["embedded", "off"] | None = None
    judge_sample: int = 3
    judge_claims: int = 2
    judge_budget_s: float = 60.0


@dataclass
class DemoReport:
    """Everything the demo found (rendered by :func:`evalloop.replay.report.render`).

    Attributes:
        dsn: the demo database; ``kept``: whether it still exists.
        origin: where the replayed turns came from; ``schedule``: the replay's description.
        events_sent: events delivered; ``events_by_type``: rows stored per event type.
        dead_letters: records sent to ``feedback.events.dlq.v1``.
        negative_cases: fused negative cases per agent; ``negative_published``: messages on
            ``feedback.negative.v1`` (a case a later signal changes is published again, so
            there may be more messages than cases).
        rates: per agent, the hourly 24 h window reports (Wilson interval, denominator).
        jobs: re-evaluation jobs (``monitor_store.JobRow``), oldest first; ``requests``: the
            ``reeval.requested.v1`` payload of each (window, counts, rate, Wilson interval).
        min_turns: the monitor's minimum volume (settings.monitor.min_turns).
        runs: evaluation runs by job id (``EvalRun``); ``verdicts``: the readiness report of
            each run's newest gate decision, by job id; ``baseline``: the pinned baseline run
            (``run_id``, ``agent_config``, its scores) or why there is none.
        clusters, candidates: the triage view (dicts; see :func:`_triage_view`).
        timings: wall time per phase, seconds (``total`` included).
        agent_url, agent_config, incident_agent: the reference agent and whom it serves.
    """

    dsn: str
    kept: bool
    origin: str
    schedule: list[str]
    events_sent: int = 0
    events_by_type: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0
    negative_cases: dict[str, int] = field(default_factory=dict)
    negative_published: int = 0
    rates: dict[str, list[WindowReport]] = field(default_factory=dict)
    jobs: list[Any] = field(default_factory=list)
    runs: dict[Any, Any] = field(default_factory=dict)
    clusters: list[dict[str, Any]] = field(default_factory=list)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    agent_url: str = ""
    agent_config: str = ""
    incident_agent: str | None = None
    requests: dict[Any, dict[str, Any]] = field(default_factory=dict)
    min_turns: int = 200
    verdicts: dict[Any, dict[str, Any]] = field(default_factory=dict)
    baseline: dict[str, Any] | None = None


class _Clock:
    """Wall time per phase."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.phases: dict[str, float] = {}

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.phases[name] = self.phases.get(name, 0.0) + time.perf_counter() - start

    def total(self) -> dict[str, float]:
        return {**self.phases, "total": time.perf_counter() - self.t0}


# --------------------------------------------------------------------------- database


@contextlib.asynccontextmanager
async def _database(admin_dsn: str, keep: bool) -> AsyncIterator[str]:
    """A fresh, migrated database on ``admin_dsn``'s server; dropped afterwards unless ``keep``."""
    name = f"evalloop_demo_{datetime.now(UTC):%Y%m%d_%H%M%S}_{os.getpid()}"
    dsn = await create_database(admin_dsn, name)
    try:
        await migrate(dsn)
        yield dsn
    finally:
        if not keep:
            conn = await asyncpg.connect(admin_dsn)
            try:
                await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            finally:
                await conn.close()


def _embedder(settings: Settings) -> Any:
    from evalloop.adapters.embedder import build_embedder

    return build_embedder(settings.triage)


# --------------------------------------------------------------------------- the run


def _service_classes() -> list[type]:
    from services.evaluator.service import EvaluatorService
    from services.monitor.service import MonitorService
    from services.recorder.service import RecorderService
    from services.triage.service import TriageService

    return [RecorderService, MonitorService, TriageService, EvaluatorService]


async def _register_agent(pool: asyncpg.Pool, agent_id: str, url: str) -> None:
    from evalloop.adapters.golden_store import AgentRecord, import_golden_set, upsert_agent
    from evalloop.core.evaluation.cases import load_eval_file

    await upsert_agent(pool, AgentRecord(agent_id=agent_id, endpoint_url=url))
    golden = SAMPLE_DIR / "golden" / f"{agent_id}.json"
    if golden.is_file():
        await import_golden_set(
            pool, load_eval_file(golden), agent_id=agent_id, created_by="evalloop demo"
        )


async def _wait_for_jobs(pool: asyncpg.Pool, timeout_s: float) -> None:
    """Until no re-evaluation job is ``requested`` or ``running`` (at most ``timeout_s``); a job
    scheduled for later (a CONDITIONAL GO's re-evaluation) is not waited for.

    Raises:
        TimeoutError: jobs still open after ``timeout_s`` seconds (named in the message).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        open_jobs = await pool.fetch(
            "SELECT agent_id, trigger, status FROM reeval_jobs"
            " WHERE status IN ('requested', 'running') AND requested_at <= now()"
        )
        if not open_jobs:
            return
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"re-evaluation jobs still open after {timeout_s:.0f} s: "
                + ", ".join(f"{r['agent_id']} {r['trigger']} ({r['status']})" for r in open_jobs)
            )
        await asyncio.sleep(0.5)


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("[bold]{task.description:<22}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=console, transient=False,
    )


async def _watch(loop: Loop, progress: Progress, tasks: dict[str, Any], stop: asyncio.Event,
                 total: int) -> None:
    """Move the consumption / triage bars from the services' counters until ``stop`` is set."""
    from services.recorder.service import RecorderService
    from services.triage.service import TriageService

    recorder = loop.service(RecorderService)
    try:
        triage: TriageService | None = loop.service(TriageService)
    except KeyError:
        triage = None
    while True:
        progress.update(tasks["stored"], completed=min(total, recorder.stats.records))
        if triage is not None:
            published = loop.bus.topic_size(loop.deps.topics.feedback_negative)
            progress.update(tasks["negatives"], total=max(published, 1),
                            completed=triage.stats.records)
        if stop.is_set():
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.25)


async def _final_recluster(loop: Loop) -> None:
    """Re-cluster every agent with cases added since its last re-clustering (the periodic
    loop would do it within ``recluster_interval_s``; the demo does not wait for it)."""
    from services.triage.service import TriageService

    try:
        triage = loop.service(TriageService)
    except KeyError:
        return
    rows = await loop.deps.pool.fetch(
        "SELECT agent_id FROM triage_agents WHERE new_cases > 0 ORDER BY agent_id")
    for r in rows:
        await triage.recluster(r["agent_id"])


async def _replay_and_drain(
    loop: Loop, prepared: Replay, options: DemoOptions, console: Console, clock: _Clock
) -> int:
    total = len(prepared.events)
    stop = asyncio.Event()
    with _progress(console) as progress:
        tasks = {
            "sent": progress.add_task(f"replayed ({options.via})", total=total),
            "stored": progress.add_task("consumed (recorder)", total=total),
            "negatives": progress.add_task("case messages triaged", total=1),
        }
        async with asyncio.TaskGroup() as tg:
            tg.create_task(_watch(loop, progress, tasks, stop, total))
            try:
                with clock.phase("replay"):
                    def sent(n: int) -> None:
                        progress.advance(tasks["sent"], n)

                    if options.via == "ingest":
                        async with loop.ingest_sink() as sink:
                            n = await deliver(prepared.events, sink, on_batch=sent)
                    else:
                        n = await deliver(prepared.events, loop.bus_sink(), on_batch=sent)
                with clock.phase("drain"):
                    await loop.drain()
                with clock.phase("recluster"):
                    await _final_recluster(loop)
                    await loop.drain()
                with clock.phase("evaluation"):
                    await _wait_for_jobs(loop.deps.pool, options.job_timeout_s)
                    await loop.drain()
            finally:
                stop.set()
    return n


async def run_demo(options: DemoOptions, console: Console | None = None) -> DemoReport:
    """Run the demo and return what it found (render it with ``replay.report.render``).

    Raises:
        StorageError: PostgreSQL could not be started or migrated.
        FileNotFoundError: the sample (or the data folder of ``full``) is missing.
        TimeoutError: the loop did not drain or the jobs did not finish in time.
    """
    console = console or Console()
    clock = _Clock()
    settings = options.settings or Settings()
    source = options.source
    if source is None and options.full:
        from evalloop.agent.kb import shared_data_dir

        source = shared_data_dir()
        if source is None:
            raise FileNotFoundError(
                "--full needs the public data folder ../shared/data (or EVALLOOP_SHARED_DATA)"
            )
    with clock.phase("prepare"):
        prepared = prepare_replay(
            source=source, span_hours=options.span_hours, seed=options.seed,
            agents=options.agents, limit=options.limit, end=options.end,
        )
    console.print(f"[bold]replaying[/] {prepared.origin}")
    for line in prepared.schedule.describe():
        console.print("  " + line)
    with clock.phase("postgres"):
        if options.admin_dsn:
            admin_dsn = options.admin_dsn
        else:
            admin_dsn = await asyncio.to_thread(start_embedded, settings.postgres.embedded_dir)
    incident = prepared.schedule.incident[2] if prepared.schedule.incident else None
    async with _database(admin_dsn, options.keep) as dsn:
        settings = settings.model_copy(update={
            "postgres": settings.postgres.model_copy(update={"dsn": dsn}),
            "readiness": settings.readiness.model_copy(update={
                "judge": options.judge or settings.readiness.judge,
                "judge_sample": options.judge_sample,
                "max_claims": options.judge_claims,
                "judge_budget_s": options.judge_budget_s,
                "passage_chars": 600}),
        })
        report = DemoReport(dsn=dsn, kept=options.keep, origin=prepared.origin,
                            schedule=prepared.schedule.describe(), incident_agent=incident,
                            agent_config=options.agent_config,
                            min_turns=settings.monitor.min_turns)
        with clock.phase("model"):
            embedder = options.embedder or await asyncio.to_thread(_embedder, settings)
        pool = await connect_pool(dsn, min_size=2, max_size=8)
        try:
            await _run(options, settings, pool, embedder, prepared, report, console, clock)
            with clock.phase("report"):
                await _collect(pool, report)
            if options.after is not None:
                report.timings = clock.total()
                await options.after(report, pool, settings)
        finally:
            await pool.close()
    report.timings = clock.total()
    return report


async def _run(options: DemoOptions, settings: Settings, pool: asyncpg.Pool, embedder: Any,
               prepared: Replay, report: DemoReport, console: Console, clock: _Clock) -> None:
    from evalloop.agent import AgentConfig
    from evalloop.agent.server import serve_agent

    kb = f"feedbackqa-{(report.incident_agent or 'covid-qa-uk').removeprefix('covid-qa-')}"
    config = AgentConfig(kb=kb, weak=options.agent_config == "weak", full_kb=options.full)
    async with serve_agent(config, port=0, default_format="openai") as url:
        report.agent_url = url
        if report.incident_agent:
            await _register_agent(pool, report.incident_agent, url)
        console.print(
            f"[bold]reference agent[/] {config.version} at {url} serves "
            f"{report.incident_agent} ({options.agent_config} configuration)"
        )
        extras: dict[str, Any] = {"embedder": embedder}
        async with contextlib.AsyncExitStack() as stack:
            if settings.readiness.judge != "off":
                from evalloop.errors import ConfigError, JudgeError
                from evalloop.readiness.judges import open_judge
                from evalloop.readiness.knowledge import Knowledge

                with clock.phase("judge start"):
                    try:
                        extras["judge"] = await stack.enter_async_context(
                            open_judge(settings.readiness, pool))
                    except (ConfigError, JudgeError) as exc:
                        # the loop still runs; the verdict then says nothing was scored
                        console.print(f"[yellow]judge not started ({exc}); the readiness "
                                      "verdict will have no scores (--judge off skips it)")
                        settings = settings.model_copy(update={
                            "readiness": settings.readiness.model_copy(
                                update={"judge": "off"})})
                extras["knowledge"] = Knowledge.shipped(full=options.full)
                if report.incident_agent and "judge" in extras:
                    with clock.phase("baseline"):
                        report.baseline = await _baseline(
                            pool, settings, extras, report.incident_agent, kb, options, console)
            classes = list(options.services or _service_classes())
            async with in_process_loop(settings, pool, classes, extras=extras) as loop:
                report.events_sent = await _replay_and_drain(loop, prepared, options, console,
                                                             clock)
                report.dead_letters = loop.bus.topic_size(loop.deps.topics.feedback_dlq)
                report.negative_published = loop.bus.topic_size(
                    loop.deps.topics.feedback_negative)


async def _baseline(pool: asyncpg.Pool, settings: Settings, extras: dict[str, Any],
                    agent_id: str, kb: str, options: DemoOptions, console: Console
                    ) -> dict[str, Any]:
    """Evaluate the agent's standard configuration on its golden set, judge the same sample the
    re-evaluation will, and pin the run as the agent's baseline."""
    from evalloop.adapters import readiness_store
    from evalloop.adapters.agent_client import AgentClient
    from evalloop.adapters.golden_store import save_eval_run
    from evalloop.agent import AgentConfig
    from evalloop.agent.server import serve_agent
    from evalloop.evaluation import run_eval
    from evalloop.readiness.verdict import case_scores, judge_run
    from services.evaluator import golden

    version_id = await golden.current_version_id(pool, agent_id)
    if version_id is None:
        return {"run_id": None, "why": f"{agent_id} has no golden set"}
    label, cases = await golden.load_version(pool, version_id)
    config = AgentConfig(kb=kb, weak=False, full_kb=options.full)
    async with serve_agent(config, port=0, default_format="openai") as url, \
            AgentClient(url, timeout_s=settings.evaluator.timeout_s, max_connections=4) as client:
        run = await run_eval(cases, client, concurrency=4, agent_id=agent_id,
                             golden_set_version_id=version_id, eval_source=f"golden:{label}")
    await save_eval_run(pool, run)
    console.print(f"[bold]baseline[/] {config.version}: judging a sample of up to "
                  f"{settings.readiness.judge_sample} of {run.summary.total} answers with "
                  f"{extras['judge'].model} (no new case after "
                  f"{settings.readiness.judge_budget_s:.0f} s) ...")
    res = await judge_run(pool, extras["judge"], run.run_id, knowledge=extras["knowledge"],
                          sample=settings.readiness.judge_sample,
                          max_claims=settings.readiness.max_claims,
                          budget_s=settings.readiness.judge_budget_s,
                          passage_chars=settings.readiness.passage_chars)
    await readiness_store.pin_baseline(
        pool, agent_id, run.run_id, pinned_by="evalloop demo",
        note=f"the {config.version} configuration before the incident")
    scored = case_scores(await readiness_store.load_cases(pool, run.run_id))
    console.print(escape(baseline_line(
        config.version, str(run.run_id), label, res, agent_id,
        budget_s=settings.readiness.judge_budget_s)))
    return {"run_id": str(run.run_id), "agent_config": config.version, "judged": res.judged,
            "scored_cases": [s.case_id for s in scored]}


def baseline_line(version: str, run_id: str, label: str, res: JudgeRunResult, agent_id: str,
                  *, budget_s: float | None) -> str:
    """The demo's one line about its judged baseline run: how many answers the judge scored,
    why it stopped short of its sample (the time budget), and that the run is pinned.

    Args:
        version: the agent configuration, run_id: the run, label: the golden-set version.
        res: what :func:`evalloop.readiness.verdict.judge_run` did.
        agent_id: the agent the run is pinned for.
        budget_s: the judge's time budget, seconds (``None``: none).
    """
    short = ""
    if res.skipped:
        budget = f"the {budget_s:.0f} s time budget" if budget_s is not None else "the budget"
        short = (f", {res.skipped} sampled case(s) left unjudged: {budget} ran out "
                 "(a case already started finishes)")
    return (f"baseline {version}: run {run_id[:8]} on {label}, {res.judged} of {res.answered} "
            f"answers judged ({res.usage.calls} judge questions in {res.seconds:.0f} s{short}); "
            f"pinned as {agent_id}'s baseline")


# --------------------------------------------------------------------------- what it found


async def _collect(pool: asyncpg.Pool, report: DemoReport) -> None:
    from evalloop.adapters import readiness_store
    from evalloop.adapters.golden_store import load_eval_run

    rows = await pool.fetch("SELECT event_type, count(*) n FROM events GROUP BY 1 ORDER BY 1")
    report.events_by_type = {r["event_type"]: r["n"] for r in rows}
    rows = await pool.fetch("SELECT agent_id, count(*) n FROM negative_cases GROUP BY 1 ORDER BY 1")
    report.negative_cases = {r["agent_id"]: r["n"] for r in rows}
    agents = [r["agent_id"] for r in await pool.fetch(
        "SELECT DISTINCT agent_id FROM monitor_buckets ORDER BY 1")]
    for agent in agents:
        report.rates[agent] = await monitor_store.rate_timeline(pool, agent, step_s=3600)
    jobs = await monitor_store.list_jobs(pool, limit=1000)
    report.requests = {r["job_id"]: r["request"] for r in await pool.fetch(
        "SELECT job_id, request FROM reeval_jobs")}
    report.jobs = sorted(jobs, key=lambda j: (
        report.requests[j.job_id].get("window_end") or "", j.requested_at, str(j.job_id)))
    for job in report.jobs:
        run_id = await pool.fetchval("SELECT run_id FROM reeval_jobs WHERE job_id = $1",
                                     job.job_id)
        if run_id is not None:
            run = await load_eval_run(pool, run_id)
            if run is not None:
                report.runs[job.job_id] = run
            decision = await readiness_store.latest_decision(pool, run_id)
            if decision is not None:
                report.verdicts[job.job_id] = decision["report"]
    report.clusters, report.candidates = await _triage_view(pool)


async def _triage_view(
    pool: asyncpg.Pool, *, clusters: int = 10, candidates: int = 10
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The largest clusters (label, terms, size, golden coverage, two example questions of
    the most confident cases) and the most confident pending candidates of the review queue."""
    rows = await pool.fetch(
        "SELECT agent_id, cluster_id, label, terms, size, covered_by_golden FROM clusters"
        " WHERE size > 0 ORDER BY size DESC, agent_id, cluster_id LIMIT $1", clusters)
    from evalloop.adapters.triage_store import cluster_examples

    out = []
    examples: dict[str, dict[str, list[str]]] = {}
    for r in rows:
        if r["agent_id"] not in examples:  # two different questions per cluster
            examples[r["agent_id"]] = await cluster_examples(pool, r["agent_id"], 2)
        out.append({**dict(r), "label": r["label"] or ", ".join(r["terms"][:4]),
                    "examples": examples[r["agent_id"]].get(r["cluster_id"], [])})
    cands = await pool.fetch(
        "SELECT agent_id, cluster_id, cluster_label, question, answer_given, expected_answer,"
        " confidence, cardinality(evidence_event_ids) AS evidence FROM review_queue"
        " WHERE status = 'pending' ORDER BY confidence DESC, candidate_id LIMIT $1", candidates)
    return out, [dict(c) for c in cands]
