"""Evaluator: runs re-evaluation jobs against the agent and reports them.

Consumes ``reeval.requested.v1`` (group ``evalloop-evaluator``). For each job:

1. record it in ``reeval_jobs`` if the monitor's outbox did not (``ON CONFLICT DO NOTHING``),
   hand it to a job worker, commit the offset (the job row, not the Kafka offset, is now the
   durable to-do);
2. a worker **claims** the job atomically (``requested``, or ``running`` with a stale
   heartbeat): a redelivered or duplicated request finds it claimed or finished and does nothing;
3. looks up the agent's endpoint (the ``agents`` table, else ``settings.evaluator.agents``),
   resolves the agent's current golden-set version and **pins** it on the job (a retried job
   runs the version it started with);
4. selects the cases the trigger calls for (``docs/rules.md#eval-cadence``,
   :mod:`evalloop.core.cadence`),
   runs them with bounded concurrency (:func:`evalloop.evaluation.run_eval`) while
   heartbeating the claim;
5. stores the run (re-checking it still owns the job), then **judges and gates** it
   (:mod:`services.evaluator.verdict`: the seven dimensions and the claims of every answer,
   the GO / CONDITIONAL GO / NO-GO decision stored and published as ``readiness.decided.v1``;
   a CONDITIONAL GO schedules its re-evaluation within 7 days);
6. in one transaction: re-checks it still owns the job, marks it ``succeeded`` with the
   summary and the decision; then publishes ``reeval.completed.v1`` carrying the decision. A
   worker that lost its claim (it stalled past the lease) finishes nothing, so a job finishes
   once.

A periodic **sweep** (started by :meth:`EvaluatorService.start`, immediately and then every
``sweep_interval_s``) picks up jobs whose worker died (stale heartbeat), requested jobs the
bus never delivered and scheduled jobs now due (a CONDITIONAL GO's re-evaluation, the nightly
runs of ``readiness.nightly_agents``, which it also writes), and gives up on jobs that
exhausted ``max_attempts``. A job that cannot run
(no endpoint, no golden set) is finished as ``failed`` with the reason; an unreachable agent is
not a job failure: the runner reports it per case and the run's gate fails.

The second subscription (group ``evalloop-evaluator-incidents``) on ``feedback.recorded.v1`` (the
events the recorder accepted, ``docs/operations.md#the-recorded-stream``) turns escalation events
into golden-set candidates (``docs/rules.md#eval-cadence``: "After any escalation incident:
add case covering the incident scenario"); see :mod:`services.evaluator.incidents`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar
from uuid import UUID

from pydantic import ValidationError

from evalloop.adapters import job_store
from evalloop.adapters.agent_client import AgentClient
from evalloop.adapters.bus import Record
from evalloop.core.cadence import select_cases
from evalloop.core.evaluation.cases import EvalCase
from evalloop.core.evaluation.extract import format_hint
from evalloop.core.evaluation.results import EvalRun
from evalloop.errors import BusError, EvalloopError, StorageError
from evalloop.evaluation import run_eval
from evalloop.events import (
    CandidateProposed,
    FeedbackEvent,
    ReadinessDecided,
    ReevalCompleted,
    ReevalRequested,
    dump_event,
    utc_now,
)
from evalloop.runtime import Consumes, Deps, Publishes, Service
from evalloop.settings import AgentEndpoint
from evalloop.topics import GROUP_EVALUATOR
from services.evaluator import golden, incidents
from services.evaluator.verdict import (
    JudgeHolder,
    judge_and_decide,
    record_deployments,
    schedule_nightly,
)

__all__ = ["GROUP_EVALUATOR_INCIDENTS", "EvaluatorService", "JobFailed", "run_id_for"]

log = logging.getLogger("evalloop.evaluator")

#: Consumer group of the escalation-incident subscription (its own offsets on feedback events).
GROUP_EVALUATOR_INCIDENTS = GROUP_EVALUATOR + "-incidents"
#: Namespace of run ids: a job's run id is derived from its job id (one run per job).
_RUN_NAMESPACE = uuid.UUID("6f1c1f0e-5b1a-4f0e-9a57-2d1f7b0c3e11")
T = TypeVar("T")


class JobFailed(EvalloopError):
    """The job cannot run as requested (no endpoint, no golden set, a missing secret); it is
    finished as ``failed`` with this message and not retried."""


class _ClaimLost(Exception):
    """Another worker took the job over (this one stalled past the lease)."""


def run_id_for(job_id: UUID) -> UUID:
    """The run id of a job's run (UUIDv5 of the job id): a job stores at most one run."""
    return uuid.uuid5(_RUN_NAMESPACE, str(job_id))


@dataclass(frozen=True, slots=True)
class _Outcome:
    status: Literal["succeeded", "failed"]
    run: EvalRun | None
    result: dict[str, Any]
    error: str | None
    version_id: UUID | None


class EvaluatorService(Service):
    """Evaluator: ``reeval.requested.v1`` -> a stored run -> ``reeval.completed.v1``; escalation
    incidents -> golden-set candidates.

    Attributes:
        worker_id: the name this process claims jobs under.
        skipped: ``reeval.requested.v1`` records that could not be decoded (logged, dropped).
        completed: jobs this instance finished (succeeded or failed).
        job_errors: jobs that raised something unexpected (logged; retried by the sweep).
    """

    name = "evaluator"
    consumes = (
        Consumes("reeval_requested", GROUP_EVALUATOR, "on_reeval_requested", ReevalRequested,
                 100),
        Consumes("feedback_recorded", GROUP_EVALUATOR_INCIDENTS, "on_feedback_events",
                 FeedbackEvent, 1000),
    )
    publishes = (
        Publishes("reeval_completed", ReevalCompleted,
                  "a re-evaluation job finished: run id, pinned golden-set version, summary"),
        Publishes("candidate_proposed", CandidateProposed,
                   "a golden-set candidate covering an escalation incident "
                   "(docs/rules.md#eval-cadence)"),
        Publishes("readiness_decided", ReadinessDecided,
                  "the production gate decided on a run: GO / CONDITIONAL GO / NO-GO, why"),
    )

    def __init__(self, deps: Deps) -> None:
        """Keep the dependencies; nothing starts until :meth:`start`."""
        super().__init__(deps)
        self.cfg = deps.settings.evaluator
        self.worker_id = self.cfg.worker_id or (
            f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        )
        self._queue: asyncio.Queue[UUID] = asyncio.Queue()
        self._in_flight: set[UUID] = set()
        self._accepting = True
        self._running = 0  # jobs a worker is in (claim to published completion)
        # jobs waiting in the queue: a job is queued at most once however often the sweep
        # and the bus name it (docs/security.md#cost-amplification)
        self._queued: set[UUID] = set()
        self.skipped = 0
        self.completed = 0
        self.job_errors = 0
        self.judges = JudgeHolder(deps)

    # ------------------------------------------------------------------ bus handlers

    async def on_reeval_requested(self, records: list[Record]) -> None:
        """Record each requested job (idempotently) and queue it for a worker.

        Raises:
            StorageError: PostgreSQL failed (the batch is redelivered).
        """
        for rec in records:
            try:
                request = ReevalRequested.model_validate_json(rec.value)
            except ValidationError as exc:
                self.skipped += 1
                log.error("evaluator: dropped an undecodable reeval.requested record "
                          "(%s[%d]@%d): %s", rec.topic, rec.partition, rec.offset,
                          exc.errors(include_url=False))
                continue
            if await job_store.record_request(self.deps.pool, request):
                log.info("evaluator: job %s recorded from the bus (not in the outbox)",
                         request.job_id)
            self.enqueue(request.job_id)

    async def on_feedback_events(self, records: list[Record]) -> None:
        """Propose a golden-set candidate for every escalation event (see
        :func:`services.evaluator.incidents.propose_from_records`) and record the deployment an
        ``agent_changed`` event names (:func:`services.evaluator.verdict.record_deployments`).

        Raises:
            StorageError: PostgreSQL failed (the batch is redelivered).
            BusError: a proposal could not be published (the batch is redelivered; the
                queue insert is idempotent).
        """
        await incidents.propose_from_records(self.deps, records)
        await record_deployments(self.deps, records)

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start the job workers and the sweep (which runs once at once: a job left by a dead
        process is picked up on start-up)."""
        self._accepting = True
        workers = [self._worker] * self.cfg.max_parallel_jobs
        self.start_background(self._sweep_loop, *workers, name="evaluator-jobs")

    async def stop(self) -> None:
        """Drain, then stop (``docs/operations.md#supervision``): take no new job, let the
        jobs in flight finish for up to ``evaluator.drain_s`` seconds, then cancel the workers;
        a job still running is released (back to ``requested``) so another worker picks it up
        at once instead of after the lease."""
        self._accepting = False
        if self._running:
            log.info("evaluator: draining %d job(s) in flight (at most %.0f s)",
                     self._running, self.cfg.drain_s)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.cfg.drain_s):
                    while self._running:  # noqa: ASYNC110 - counted by the workers' tasks
                        await asyncio.sleep(0.05)
        await self.stop_background()

    async def _sweep_loop(self) -> None:
        while True:
            try:
                await self.sweep()
            except (StorageError, BusError):
                log.exception("evaluator: sweep failed; retrying in %.0f s",
                              self.cfg.sweep_interval_s)
            await asyncio.sleep(self.cfg.sweep_interval_s)

    async def _worker(self) -> None:
        while True:
            job_id = await self._queue.get()
            self._queued.discard(job_id)
            if not self._accepting:
                continue  # stopping: the job stays requested; the next sweep queues it again
            self._running += 1
            try:
                await self.run_job(job_id)
            except EvalloopError:
                # Storage or bus down mid-job: the claim goes stale and the sweep retries it.
                log.exception("evaluator: job %s interrupted; the sweep will retry it", job_id)
            except Exception:
                # Anything else (an httpx.DecodingError from a broken agent, a bug): logged
                # with the job, counted as an attempt (the claim goes stale and the sweep
                # retries it until max_attempts); the worker takes the next job.
                self.job_errors += 1
                log.exception("evaluator: job %s raised unexpectedly; the sweep will retry it "
                              "(attempts are limited by evaluator.max_attempts)", job_id)
            finally:
                self._running -= 1

    async def sweep(self) -> list[UUID]:
        """Give up on exhausted jobs (publishing their failure), then queue the due ones.

        Returns:
            The job ids queued.

        Raises:
            StorageError: PostgreSQL failed.
            BusError: a failure could not be published.
        """
        for job_id, agent_id, version_id in await job_store.give_up_exhausted(
            self.deps.pool, lease_s=self.cfg.lease_s, max_attempts=self.cfg.max_attempts
        ):
            log.error("evaluator: gave up on job %s after %d attempts", job_id,
                      self.cfg.max_attempts)
            await self._publish(ReevalCompleted(
                job_id=job_id, run_id=None, agent_id=agent_id, status="failed",
                golden_set_version_id=version_id, finished_at=utc_now(),
                summary={"status": "failed", "attempts": self.cfg.max_attempts},
                error=f"gave up after {self.cfg.max_attempts} attempts",
            ))
        if self.deps.settings.readiness.nightly_agents:
            await schedule_nightly(self.deps, utc_now())
        due: list[UUID] = await job_store.due_jobs(
            self.deps.pool, lease_s=self.cfg.lease_s, grace_s=self.cfg.request_grace_s,
            max_attempts=self.cfg.max_attempts,
        )
        for job_id in due:
            self.enqueue(job_id)
        return due

    def enqueue(self, job_id: UUID) -> bool:
        """Queue ``job_id`` for a worker unless it is already queued or running here.

        Returns:
            Whether it was queued now.
        """
        if job_id in self._queued or job_id in self._in_flight:
            return False
        self._queued.add(job_id)
        self._queue.put_nowait(job_id)
        return True

    # ------------------------------------------------------------------ one job

    async def run_job(self, job_id: UUID) -> ReevalCompleted | None:
        """Claim and run one job end to end.

        Returns:
            The published completion, or ``None`` when the job was not claimable (finished,
            running elsewhere, unknown) or this worker lost its claim mid-run.

        Raises:
            StorageError: PostgreSQL failed.
            BusError: the completion could not be published (the job is stored as finished).
        """
        claimed = await job_store.claim(
            self.deps.pool, job_id, self.worker_id, lease_s=self.cfg.lease_s,
            max_attempts=self.cfg.max_attempts,
        )
        if claimed is None:
            log.info("evaluator: job %s not claimable (finished or running elsewhere)", job_id)
            return None
        self._in_flight.add(job_id)
        try:
            try:
                outcome = await self._with_heartbeat(job_id, lambda: self._execute(claimed))
            except asyncio.CancelledError:
                # Shutting down mid-run: hand the job back so another worker starts it at once
                # (not after the lease); this claim does not count as an attempt.
                with contextlib.suppress(StorageError):
                    await job_store.release(self.deps.pool, job_id, self.worker_id)
                raise
            if outcome is None:
                log.warning("evaluator: lost the claim on job %s; its new owner finishes it",
                            job_id)
                return None
            if outcome.run is not None:
                if not await self._store_run(job_id, outcome.run):
                    log.warning("evaluator: job %s was taken over before its run was stored",
                                job_id)
                    return None
                run_id = outcome.run.run_id
                try:
                    verdict = await self._with_heartbeat(
                        job_id, lambda: judge_and_decide(self.deps, self.judges, run_id))
                except asyncio.CancelledError:
                    with contextlib.suppress(StorageError):  # as above: hand it back
                        await job_store.release(self.deps.pool, job_id, self.worker_id)
                    raise
                if verdict is None:
                    log.warning("evaluator: lost the claim on job %s while judging", job_id)
                    return None
                outcome.result.update(verdict)
            if not await self._store(job_id, outcome):
                log.warning("evaluator: job %s was taken over before it was stored", job_id)
                return None
        finally:
            self._in_flight.discard(job_id)
        self.completed += 1
        message = ReevalCompleted(
            job_id=job_id, run_id=outcome.run.run_id if outcome.run else None,
            agent_id=claimed.request.agent_id, status=outcome.status,
            golden_set_version_id=outcome.version_id, finished_at=utc_now(),
            summary=outcome.result, error=outcome.error,
            decision=outcome.result.get("decision"),
            decision_why=outcome.result.get("decision_why") or [],
        )
        await self._publish(message)
        return message

    async def _execute(self, claimed: job_store.ClaimedJob) -> _Outcome:
        req = claimed.request
        version_id = claimed.golden_set_version_id
        try:
            endpoint = await self._endpoint(req.agent_id)
            if version_id is None:
                version_id = await golden.current_version_id(self.deps.pool, req.agent_id)
                if version_id is None:
                    raise JobFailed(
                        f"agent {req.agent_id!r} has no golden set: import one with "
                        f"`evalloop golden import --agent {req.agent_id} <file>`"
                    )
            if not await job_store.pin_version(self.deps.pool, req.job_id, self.worker_id,
                                               version_id):
                raise _ClaimLost
            label, cases = await golden.load_version(self.deps.pool, version_id)
            return await self._evaluate(req, endpoint, version_id, label, cases)
        except JobFailed as exc:
            log.error("evaluator: job %s failed: %s", req.job_id, exc)
            return _Outcome("failed", None, {"status": "failed", "trigger": req.trigger,
                                             "error": str(exc)}, str(exc), version_id)

    async def _evaluate(self, req: ReevalRequested, endpoint: AgentEndpoint, version_id: UUID,
                        label: str, cases: list[EvalCase]) -> _Outcome:
        seed = None
        if req.trigger == "weekly_sample":
            # Every random choice takes an explicit seed: the request's, else one derived from
            # the job id (recorded in the result, so the sample can be drawn again).
            seed = req.sample_seed if req.sample_seed is not None else req.job_id.int % 2**31
        selection = select_cases(cases, req.trigger, changed_documents=req.changed_documents,
                                 sample_size=req.sample_size, sample_seed=seed)
        chosen = set(selection.case_ids)
        picked = [c for c in cases if c.id in chosen]
        result: dict[str, Any] = {
            "status": "succeeded", "trigger": req.trigger, "rule": selection.rule,
            "golden_set": label, "golden_set_version_id": str(version_id),
            "golden_set_cases": len(cases), "selected": len(picked),
            "selected_case_ids": list(selection.case_ids), "endpoint": endpoint.url,
        }
        if seed is not None:
            result["sample_seed"] = seed
        if req.changed_documents:
            result["changed_documents"] = list(req.changed_documents)
        if not picked:
            result |= {"total": 0, "passed": 0, "failed": 0, "gate_failures": 0,
                       "exit_code": 0, "run_id": None}
            return _Outcome("succeeded", None, result, None, version_id)
        async with self._client(req.agent_id, endpoint) as client:
            run = await run_eval(
                picked, client, concurrency=self.cfg.concurrency, run_id=run_id_for(req.job_id),
                eval_source=f"golden:{label}", agent_id=req.agent_id,
                golden_set_version_id=version_id, job_id=req.job_id,
            )
        s = run.summary
        result |= {
            "run_id": str(run.run_id), "total": s.total, "passed": s.passed,
            "failed": s.failed_gate, "agent_errors": s.agent_errors, "unscored": s.unscored,
            "flagged": s.flagged, "requires_human_review": s.requires_human_review,
            "pass_rate": s.pass_rate,
            "gate_failures": len(s.refusal_gate_failures) + len(s.escalation_gate_failures),
            "refusal_gate_failures": s.refusal_gate_failures,
            "escalation_gate_failures": s.escalation_gate_failures,
            "agent_error_cases": s.agent_error_cases, "gate_failed": s.gate_failed,
            "exit_code": 1 if s.gate_failed else 0, "duration_s": round(run.duration_s, 3),
        }
        return _Outcome("succeeded", run, result, None, version_id)

    async def _store_run(self, job_id: UUID, run: EvalRun) -> bool:
        async with self.deps.pool.acquire() as conn, conn.transaction():
            if not await job_store.lock_claim(conn, job_id, self.worker_id):
                return False
            await golden.store_run(conn, run)
            return True

    async def _store(self, job_id: UUID, outcome: _Outcome) -> bool:
        async with self.deps.pool.acquire() as conn, conn.transaction():
            if not await job_store.lock_claim(conn, job_id, self.worker_id):
                return False
            finished: bool = await job_store.finish(
                conn, job_id, self.worker_id, status=outcome.status,
                run_id=outcome.run.run_id if outcome.run else None,
                result=outcome.result, error=outcome.error,
            )
            return finished

    async def _with_heartbeat(self, job_id: UUID, work: Callable[[], Awaitable[T]]) -> T | None:
        """Run ``work()`` while heartbeating the claim every ``heartbeat_s``; ``None`` when
        the claim was lost (the work is cancelled)."""
        lost = False

        async def guarded() -> T | BaseException:
            nonlocal lost
            try:
                return await work()
            except _ClaimLost as exc:
                lost = True
                return exc
            except Exception as exc:  # re-raised below, outside the task group
                return exc

        async def beat(task: asyncio.Task[Any]) -> None:
            nonlocal lost
            while True:
                await asyncio.sleep(self.cfg.heartbeat_s)
                try:
                    alive = await job_store.heartbeat(self.deps.pool, job_id, self.worker_id)
                except StorageError:
                    # A database hiccup: keep working, the lease covers a few missed beats.
                    log.warning("evaluator: heartbeat of job %s failed", job_id, exc_info=True)
                    continue
                if not alive:
                    lost = True
                    task.cancel()
                    return

        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(guarded())
            beater = tg.create_task(beat(task))
            task.add_done_callback(lambda _: beater.cancel())
        if lost or task.cancelled():
            return None
        value = task.result()
        if isinstance(value, BaseException):
            raise value
        return value

    # ------------------------------------------------------------------ helpers

    async def _endpoint(self, agent_id: str) -> AgentEndpoint:
        """The agent's endpoint: the ``agents`` table first, then settings.

        Raises:
            JobFailed: neither knows the agent.
        """
        found = await golden.registered_endpoint(self.deps.pool, agent_id)
        if found is not None:
            return found
        if agent_id in self.cfg.agents:
            return self.cfg.agents[agent_id]
        raise JobFailed(
            f"no endpoint registered for agent {agent_id!r}: add a row to the agents table or "
            f"set EVALLOOP_EVALUATOR__AGENTS='{{\"{agent_id}\": {{\"url\": \"http://...\"}}}}'"
        )

    def _client(self, agent_id: str, endpoint: AgentEndpoint) -> AgentClient:
        headers = {}
        if endpoint.auth_header_name:
            env = endpoint.auth_header_value_env
            value = os.environ.get(env) if env else None
            if value is None:
                raise JobFailed(
                    f"agent {agent_id!r}: header {endpoint.auth_header_name} needs its value in "
                    f"the environment variable {env!r}, which is not set"
                )
            headers[endpoint.auth_header_name] = value
        try:
            hint = format_hint(None if endpoint.response_format == "auto"
                               else endpoint.response_format)
        except ValueError as exc:
            raise JobFailed(f"agent {agent_id!r}: {exc}") from exc
        return AgentClient(endpoint.url, headers=headers, timeout_s=self.cfg.timeout_s,
                           retries=self.cfg.retries, format_hint=hint,
                           max_connections=self.cfg.concurrency)

    async def _publish(self, message: ReevalCompleted) -> None:
        """Publish a completion, retrying a refused publish twice (0.5 s, then 1 s): the job is
        already stored as finished, so this is the message's only chance.

        Raises:
            BusError: the bus refused it three times (logged by the caller; the job row holds
                the result for ``evalloop jobs list``).
        """
        for attempt in range(3):
            try:
                await self.deps.bus.publish(self.deps.topics.reeval_completed,
                                            dump_event(message), key=message.agent_id)
                return
            except BusError:
                if attempt == 2:
                    raise
                log.warning("evaluator: publishing the completion of job %s failed; retrying",
                            message.job_id, exc_info=True)
                await asyncio.sleep(0.5 * 2**attempt)
