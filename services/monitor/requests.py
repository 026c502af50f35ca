"""The monitor's re-evaluation requests (``reeval.requested.v1``), one builder per trigger.

Job ids are deterministic (uuid5 in :data:`JOB_NAMESPACE`) over what caused the job, so that a
redelivered cause maps to the job already recorded (``ON CONFLICT (job_id) DO NOTHING``):

* ``negative_rate``: the agent and the event time of the firing (> 2% over 24 h,
  docs/rules.md#feedback-loop-trigger);
* ``system_prompt`` / ``model_version`` / ``knowledge_base``: the agent, the change kind and the
  new version (cadence, docs/rules.md#eval-cadence: prompt or model change -> full set;
  knowledge-base update ->
  the cases relevant to the changed content). Not the event id: any number of events
  announcing one version are one job (``docs/security.md#cost-amplification``);
* ``weekly_sample``: the agent and the previous sample's time (cadence,
  docs/rules.md#eval-cadence: weekly
  production monitoring, a random sample of 10 cases, seeded).
"""

from __future__ import annotations

import zlib
from datetime import datetime
from uuid import UUID, uuid5

from evalloop.core.window import WindowReport
from evalloop.events import AgentChanged, ReevalRequested

__all__ = [
    "JOB_NAMESPACE",
    "change_job_id",
    "change_request",
    "negative_rate_request",
    "weekly_request",
    "weekly_seed",
]

#: Namespace of the monitor's job ids. Never change it: redelivered causes must map to old ids.
JOB_NAMESPACE = UUID("0b7d3c0e-5d2a-5f7e-8a41-2c9e6d1f4b70")


def negative_rate_request(
    agent_id: str, report: WindowReport, *, threshold: float, requested_at: datetime
) -> ReevalRequested:
    """The request for a negative-rate crossing observed in ``report``.

    Args:
        agent_id: the agent.
        report: the window at the firing (its ``window_end`` is the firing's event time key).
        threshold: the threshold crossed, ratio (named in the reason).
        requested_at: wall-clock time of the request (UTC).
    """
    return ReevalRequested(
        job_id=uuid5(JOB_NAMESPACE, f"negative_rate/{agent_id}/{report.window_end.isoformat()}"),
        agent_id=agent_id,
        requested_at=requested_at,
        trigger="negative_rate",
        reason=report.describe(threshold),
        window_start=report.window_start,
        window_end=report.window_end,
        negatives=report.negatives,
        turns=report.turns,
        denominator=report.denominator,
        rate=report.rate,
        wilson_low=report.wilson_low,
        wilson_high=report.wilson_high,
    )


def _doc_list(docs: list[str], limit: int = 5) -> str:
    shown = ", ".join(docs[:limit])
    return shown + (f" and {len(docs) - limit} more" if len(docs) > limit else "")


def change_job_id(agent_id: str, change_kind: str, new_version: str) -> UUID:
    """The one job id of a change: uuid5 of ``agent_changed/<agent>/<kind>/<version>``."""
    return uuid5(JOB_NAMESPACE, f"agent_changed/{agent_id}/{change_kind}/{new_version}")


def change_request(event: AgentChanged, *, requested_at: datetime) -> ReevalRequested:
    """The request an ``agent_changed`` event causes (the cadence table,
    docs/rules.md#eval-cadence).

    ``system_prompt`` and ``model_version`` run the full golden set; ``knowledge_base`` runs the
    cases touching ``changed_documents`` (the evaluator selects them by context chunks / tags).
    The job id is uuid5 of (agent, change kind, new version): a redelivered or re-sent event,
    or another event announcing the same version, is the same job
    (``docs/security.md#cost-amplification``).
    """
    when = event.occurred_at.strftime("%Y-%m-%dT%H:%M:%SZ")
    if event.change_kind == "knowledge_base":
        docs = event.changed_documents
        reason = (
            f"knowledge base updated to {event.new_version} at {when}: "
            f"{len(docs)} changed document(s) ({_doc_list(docs) or 'none named'}); "
            "runs the cases relevant to the changed content (docs/rules.md#eval-cadence)"
        )
    else:
        what = "system prompt" if event.change_kind == "system_prompt" else "model version"
        reason = (
            f"{what} changed to {event.new_version} at {when}: "
            "runs the full golden set (docs/rules.md#eval-cadence)"
        )
    return ReevalRequested(
        job_id=change_job_id(event.agent_id, event.change_kind, event.new_version),
        agent_id=event.agent_id,
        requested_at=requested_at,
        trigger=event.change_kind,
        reason=reason,
        changed_documents=list(event.changed_documents),
    )


def _period(interval_s: int) -> str:
    if interval_s == 7 * 86400:
        return "week"
    if interval_s % 86400 == 0:
        days = interval_s // 86400
        return "day" if days == 1 else f"{days} days"
    hours = interval_s / 3600
    return "hour" if hours == 1 else f"{hours:g} hours"


def weekly_seed(base_seed: int, agent_id: str, due_at: datetime) -> int:
    """Seed of one weekly sample: a 31-bit mix of the configured base seed, the agent and the
    due time, so every week samples other cases and a re-run of the same job the same ones."""
    mix = f"{base_seed}/{agent_id}/{due_at.isoformat()}".encode()
    return zlib.crc32(mix) & 0x7FFFFFFF


def weekly_request(
    agent_id: str,
    *,
    previous_at: datetime,
    interval_s: int,
    sample_size: int,
    base_seed: int,
    requested_at: datetime,
) -> ReevalRequested:
    """The weekly sampled re-evaluation (docs/rules.md#eval-cadence: "weekly production monitoring:
    random sample
    of 10 cases"). ``previous_at`` is the last sample's time (or the agent's first sighting);
    the job id is uuid5 of (agent, ``previous_at``), so one period yields one job."""
    every = _period(interval_s)
    seed = weekly_seed(base_seed, agent_id, previous_at)
    return ReevalRequested(
        job_id=uuid5(JOB_NAMESPACE, f"weekly_sample/{agent_id}/{previous_at.isoformat()}"),
        agent_id=agent_id,
        requested_at=requested_at,
        trigger="weekly_sample",
        reason=(
            f"scheduled production monitoring (every {every}): random sample of "
            f"{sample_size} cases, seed {seed} (docs/rules.md#eval-cadence)"
        ),
        sample_size=sample_size,
        sample_seed=seed,
    )
