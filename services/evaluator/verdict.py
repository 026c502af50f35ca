"""The evaluator's verdict step: every re-evaluation run is judged and gated.

After a job's run is stored, :func:`judge_and_decide` asks the judge about its answers
(:func:`evalloop.readiness.verdict.judge_run`; ``readiness.judge_sample`` bounds how many),
decides the production gate (:func:`evalloop.readiness.verdict.decide_run`, which stores the
decision, schedules a CONDITIONAL GO's re-evaluation and publishes ``readiness.decided.v1``),
and returns what the job's result and ``reeval.completed.v1`` carry.

A judge that cannot start (no weights, no endpoint) does not fail the job: the gate decides on
what is stored (nothing scored: NO-GO, "readiness cannot be shown") and the reason is recorded.

:func:`schedule_nightly` writes the nightly jobs of ``readiness.nightly_agents`` (one per agent
and night, a deterministic id: the sweep writes it once and claims it when due).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from evalloop.adapters import readiness_store
from evalloop.adapters.bus import Record
from evalloop.core.judge.types import Judge
from evalloop.errors import ConfigError, JudgeError
from evalloop.events import AgentChanged, ReevalRequested
from evalloop.readiness.judges import open_judge
from evalloop.readiness.knowledge import Knowledge
from evalloop.readiness.verdict import decide_run, judge_run
from evalloop.runtime import Deps

__all__ = ["JudgeHolder", "judge_and_decide", "nightly_job", "record_deployments",
           "schedule_nightly"]

log = logging.getLogger("evalloop.evaluator")
_NIGHTLY_NAMESPACE = uuid.UUID("8d0b6f0e-3a51-4c52-9a0b-1f7e2c9d4a63")


class JudgeHolder:
    """The evaluator's judge: ``deps.extras["judge"]`` when injected, else the one
    ``readiness.judge`` names, opened on first use and kept until :meth:`close`."""

    def __init__(self, deps: Deps) -> None:
        """Keep the dependencies; nothing starts until :meth:`get`."""
        self.deps = deps
        self._given: Judge | None = deps.extras.get("judge")
        self._stack: contextlib.AsyncExitStack | None = None
        self._judge: Judge | None = None
        self.knowledge: Knowledge | None = deps.extras.get("knowledge")

    async def get(self) -> Judge | None:
        """The judge (``None`` when ``readiness.judge`` is ``off``).

        Raises:
            ConfigError: missing weights, model or API key.
            JudgeError: the embedded server did not start.
        """
        if self._given is not None:
            return self._given
        if self._judge is None and self.deps.settings.readiness.judge != "off":
            stack = contextlib.AsyncExitStack()
            try:
                self._judge = await stack.enter_async_context(
                    open_judge(self.deps.settings.readiness, self.deps.pool))
            except BaseException:
                await stack.aclose()
                raise
            self._stack = stack
        return self._judge

    async def close(self) -> None:
        """Stop a judge this holder started."""
        if self._stack is not None:
            await self._stack.aclose()
            self._stack = None
            self._judge = None


async def judge_and_decide(deps: Deps, holder: JudgeHolder, run_id: UUID) -> dict[str, Any]:
    """Judge and gate stored run ``run_id``; return the keys the job's result gains
    (``decision``, ``decision_why``, ``decision_id``, ``composite``, ``hallucinations``,
    ``judge``, ``reeval_job_id``).

    Raises:
        StorageError: PostgreSQL failed.
        BusError: the decision was stored but could not be published.
    """
    cfg = deps.settings.readiness
    judged: dict[str, Any] = {}
    try:
        judge = await holder.get()
    except (ConfigError, JudgeError) as exc:
        log.error("evaluator: the judge could not start: %s", exc)
        judge, judged = None, {"error": f"judge not started: {exc}"}
    if judge is not None:
        if holder.knowledge is None:
            holder.knowledge = Knowledge.shipped()
        res = await judge_run(deps.pool, judge, run_id, knowledge=holder.knowledge,
                              sample=cfg.judge_sample, concurrency=cfg.judge_concurrency,
                              max_claims=cfg.max_claims, budget_s=cfg.judge_budget_s,
                              passage_chars=cfg.passage_chars)
        judged = {"judge": judge.model, "judged": res.judged, "answered": res.answered,
                  "sampled": res.sampled, "claims": res.claims, "calls": res.usage.calls,
                  "cache_hits": res.usage.cache_hits, "prompt_tokens": res.usage.prompt_tokens,
                  "completion_tokens": res.usage.completion_tokens,
                  "cost_usd": res.usage.cost_usd, "seconds": round(res.seconds, 1),
                  "skipped_for_budget": res.skipped}
    elif not judged:
        judged = {"error": "readiness.judge is off"}
    verdict = await decide_run(
        deps.pool, run_id, composite_bar=cfg.composite_bar,
        reeval_after=timedelta(seconds=cfg.reeval_after_s), bus=deps.bus, topics=deps.topics,
        judged=judged)
    report = verdict.report
    return {
        "decision": verdict.gate.decision, "decision_why": list(verdict.gate.why),
        "decision_id": str(verdict.decision_id),
        "composite": report["scores"]["composite"]["mean"],
        "baseline_run_id": report["regression"].get("baseline_run_id"),
        "hallucinations": report["hallucinations"], "judge": judged,
        "reeval_job_id": str(verdict.reeval.job_id) if verdict.reeval else None,
    }


def nightly_job(agent_id: str, night: datetime) -> ReevalRequested:
    """The nightly re-evaluation of ``agent_id`` due at ``night`` (UTC); its id is derived
    from both, so writing it twice is a no-op."""
    return ReevalRequested(
        job_id=uuid.uuid5(_NIGHTLY_NAMESPACE, f"{agent_id}@{night.isoformat()}"),
        agent_id=agent_id, requested_at=night, trigger="nightly",
        reason=f"nightly evaluation ({night:%Y-%m-%d %H:%M}Z; readiness.nightly_agents)",
    )


async def schedule_nightly(deps: Deps, now: datetime) -> list[UUID]:
    """Write the next nightly job of every agent in ``readiness.nightly_agents``.

    Returns:
        The ids of jobs written now (already scheduled ones are not repeated).

    Raises:
        StorageError: PostgreSQL failed.
    """
    cfg = deps.settings.readiness
    night = now.replace(hour=cfg.nightly_hour_utc, minute=0, second=0, microsecond=0)
    if night <= now:
        night += timedelta(days=1)
    out = []
    for agent in cfg.nightly_agents:
        job = nightly_job(agent, night)
        if await readiness_store.schedule_reeval(deps.pool, job):
            out.append(job.job_id)
    return out


async def record_deployments(deps: Deps, records: list[Record]) -> int:
    """Record a deployment for every ``agent_changed`` event naming a ``deployed_run_id``
    (idempotent on the event id; a run that does not exist is logged and skipped).

    Returns:
        Deployments recorded now.

    Raises:
        StorageError: PostgreSQL failed (the batch is redelivered).
    """
    from pydantic import ValidationError

    done = 0
    for rec in records:
        if b'"agent_changed"' not in rec.value or b"deployed_run_id" not in rec.value:
            continue
        try:
            event = AgentChanged.model_validate_json(rec.value)
        except ValidationError:
            continue  # not an agent_changed event, or malformed: the recorder dead-letters it
        if event.deployed_run_id is None:
            continue
        if await readiness_store.run_info(deps.pool, event.deployed_run_id) is None:
            log.warning("evaluator: agent_changed %s names unknown run %s; no deployment "
                        "recorded", event.event_id, event.deployed_run_id)
            continue
        if await readiness_store.record_deployment(
                deps.pool, agent_id=event.agent_id, run_id=event.deployed_run_id,
                deployed_at=event.occurred_at, source="agent_changed",
                event_id=event.event_id, note=f"{event.change_kind} {event.new_version}"):
            done += 1
    return done
