"""Topic names (``<domain>.<event>.v<N>``; key = ``agent_id``) and consumer groups.

Services take a :class:`Topics` (built from settings) instead of the constants, so that a test or
a second deployment can run on its own namespace (``Topics.with_prefix("t1.")``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

FEEDBACK_EVENTS = "feedback.events.v1"
FEEDBACK_DLQ = "feedback.events.dlq.v1"
#: Events the recorder accepted and stored, published after its commit: what every consumer
#: other than the recorder reads (``docs/operations.md#the-recorded-stream``).
FEEDBACK_RECORDED = "feedback.recorded.v1"
FEEDBACK_NEGATIVE = "feedback.negative.v1"
REEVAL_REQUESTED = "reeval.requested.v1"
REEVAL_COMPLETED = "reeval.completed.v1"
CANDIDATE_PROPOSED = "golden.candidate.proposed.v1"
GOLDEN_SET_PUBLISHED = "golden.set.published.v1"
READINESS_DECIDED = "readiness.decided.v1"

GROUP_RECORDER = "evalloop-recorder"
GROUP_MONITOR = "evalloop-monitor"
GROUP_TRIAGE = "evalloop-triage"
GROUP_EVALUATOR = "evalloop-evaluator"


@dataclass(frozen=True, slots=True)
class Topics:
    """The topic names one deployment uses (defaults: ``<domain>.<event>.v<N>``)."""

    feedback_events: str = FEEDBACK_EVENTS
    feedback_dlq: str = FEEDBACK_DLQ
    feedback_negative: str = FEEDBACK_NEGATIVE
    reeval_requested: str = REEVAL_REQUESTED
    reeval_completed: str = REEVAL_COMPLETED
    candidate_proposed: str = CANDIDATE_PROPOSED
    golden_set_published: str = GOLDEN_SET_PUBLISHED
    feedback_recorded: str = FEEDBACK_RECORDED
    readiness_decided: str = READINESS_DECIDED

    @classmethod
    def with_prefix(cls, prefix: str) -> Topics:
        """Every default name prefixed by ``prefix`` (e.g. ``"test-3f2a."``)."""
        return cls(**{f.name: prefix + f.default for f in fields(cls)})  # type: ignore[operator]

    def all(self) -> tuple[str, ...]:
        """Every topic name, in declaration order."""
        return tuple(getattr(self, f.name) for f in fields(self))
