"""Replay public feedback data as production traffic (``evalloop replay``, ``evalloop demo``).

Pipeline: converters (:mod:`.feedbackqa`, :mod:`.taubench`) -> untimed turns (:mod:`.turns`;
shipped subset: :mod:`.corpus`, rebuilt by :mod:`.build_sample`) -> seeded schedule with a
baseline and an incident (:mod:`.schedule`) -> delivery to Kafka, the in-process bus or the
ingest API (:mod:`.producer`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

from evalloop.replay.corpus import load_corpus
from evalloop.replay.schedule import (
    DEFAULT_PLAN,
    Schedule,
    ScheduledEvent,
    SchedulePlan,
    build_schedule,
)

__all__ = ["Replay", "default_end", "prepare_replay"]


@dataclass(frozen=True)
class Replay:
    """A prepared replay: the schedule, the events to deliver (after ``limit``) and the origin."""

    schedule: Schedule
    events: list[ScheduledEvent]
    origin: str


def default_end() -> datetime:
    """Now (UTC) floored to the minute: the default end of the replayed span."""
    return datetime.now(UTC).replace(second=0, microsecond=0)


def prepare_replay(
    *,
    source: Path | None = None,
    span_hours: float = DEFAULT_PLAN.span_hours,
    seed: int = 7,
    agents: list[str] | None = None,
    limit: int | None = None,
    end: datetime | None = None,
    plan: SchedulePlan = DEFAULT_PLAN,
) -> Replay:
    """Load the corpus, schedule it and cut it to ``limit`` events.

    Args:
        source: a data folder (``../shared/data``) or ``None`` for the shipped sample.
        span_hours: length of the replayed span, hours (ending at ``end``).
        seed: seed of every random choice.
        agents: replay only these agent ids (default: every agent of the plan).
        limit: deliver only the first ``limit`` events (delivery order).
        end: end of the span (default :func:`default_end`).
        plan: volumes and the incident (default :data:`DEFAULT_PLAN`).

    Raises:
        ValueError: ``span_hours`` or ``limit`` is not positive, or ``agents`` names an agent
            the plan does not know.
        FileNotFoundError: the sample or the data folder is missing.
    """
    if span_hours <= 0:
        raise ValueError(f"expected span_hours > 0, got {span_hours}")
    if limit is not None and limit < 1:
        raise ValueError(f"expected limit >= 1, got {limit}")
    plan = replace(plan, span_hours=span_hours)
    if agents:
        known = [a.agent_id for a in plan.agents] + ["airline-support"]
        unknown = sorted(set(agents) - set(known))
        if unknown:
            raise ValueError(f"unknown agent(s) {unknown}; expected some of {known}")
        plan = plan.only(agents)
    turns, origin = load_corpus(source)
    schedule = build_schedule(turns, plan, end=end or default_end(), seed=seed)
    events = schedule.events[:limit] if limit else schedule.events
    return Replay(schedule=schedule, events=events, origin=origin)
