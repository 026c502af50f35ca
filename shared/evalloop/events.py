"""The wire contract: every message evalloop reads or writes on the bus.

Feedback events (topic ``feedback.events.v1``, key = ``agent_id``) are a discriminated union on
``event_type`` (README "Running the services"; schemas/events/). Internal messages (negative cases,
re-evaluation requests and
results, golden-set candidates) have one model per topic. All models are pydantic v2, frozen and
``extra="forbid"``; timestamps must be timezone-aware and are normalised to UTC.

Use :func:`parse_event` / :func:`parse_events` to decode bytes or dicts; they raise
:class:`evalloop.errors.InvalidEvent` with one :class:`~evalloop.errors.FieldProblem` per bad field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal
from uuid import UUID

from pydantic import (
    AfterValidator,
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from evalloop.errors import FieldProblem, InvalidEvent

__all__ = [
    "DEFAULT_LIMITS",
    "EARLIEST_EVENT_TIME",
    "MAX_BODY_BYTES",
    "MAX_EVENT_BYTES",
    "MAX_FUTURE_SKEW",
    "AgentChanged",
    "AgentResponse",
    "BatchLimits",
    "CandidateProposed",
    "ContextChunk",
    "ConversationOutcome",
    "Escalation",
    "FeedbackEvent",
    "GoldenSetPublished",
    "NegativeCase",
    "OperatorCorrection",
    "ReadinessDecided",
    "ReevalCompleted",
    "ReevalRequested",
    "SafetyTrigger",
    "UserRating",
    "parse_event",
    "parse_events",
    "undecodable",
    "utc_now",
]

#: Events older than this are "absurd" (a zeroed clock, a unit mix-up): rejected at ingest.
EARLIEST_EVENT_TIME = datetime(2000, 1, 1, tzinfo=UTC)
#: How far ahead of the receiver's clock an event time may be (clock skew), seconds-valued.
MAX_FUTURE_SKEW = timedelta(hours=1)
#: Largest encoded event accepted, bytes (ingest rejects larger records with 413 / DLQ reason).
MAX_EVENT_BYTES = 256 * 1024
#: Largest body of one batch, bytes (``docs/operations.md#bounded-work-per-request``).
MAX_BODY_BYTES = 10 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class BatchLimits:
    """How much work one batch may cost (``docs/operations.md#bounded-work-per-request``).

    The one place the limits live: ingest builds its instance from ``settings.ingest`` and
    :func:`parse_events` enforces it.

    Attributes:
        max_body_bytes: largest body, bytes.
        max_records: most records per batch (a larger batch is refused before any is validated).
        max_errors: most invalid records described in an error (the rest are only counted).
    """

    max_body_bytes: int = MAX_BODY_BYTES
    max_records: int = 1000
    max_errors: int = 100

    def __post_init__(self) -> None:
        if min(self.max_body_bytes, self.max_records, self.max_errors) < 1:
            raise ValueError(f"expected positive batch limits, got {self}")


DEFAULT_LIMITS = BatchLimits()


def utc_now() -> datetime:
    """Return the current time as a timezone-aware UTC datetime."""
    return datetime.now(UTC)


def _to_utc(value: datetime) -> datetime:
    value = value.astimezone(UTC)
    if value < EARLIEST_EVENT_TIME:
        raise ValueError(f"event time before {EARLIEST_EVENT_TIME.isoformat()} is not plausible")
    if value > utc_now() + MAX_FUTURE_SKEW:
        raise ValueError(
            f"event time more than {MAX_FUTURE_SKEW} in the future is not plausible"
        )
    return value


#: Event time: timezone-aware (naive is rejected), normalised to UTC, plausible.
EventTime = Annotated[AwareDatetime, AfterValidator(_to_utc)]
AgentId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:\-]+$")]
Text = Annotated[str, Field(max_length=32_000)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", str_strip_whitespace=False)


class ContextChunk(_Model):
    """One retrieved passage the agent used: ``id`` (knowledge-base key) and its ``text``."""

    id: Annotated[str, Field(min_length=1, max_length=256)]
    text: Text = ""
    source: str | None = None


class _Event(_Model):
    """Fields every feedback event carries (README "Running the services"; schemas/events/).

    ``event_id`` is chosen by the producer and is the idempotency key: a re-sent event is the
    same event. ``occurred_at`` is the event time; ``received_at`` is set by ingest (UTC).
    """

    event_id: UUID
    agent_id: AgentId
    agent_version: Annotated[str, Field(max_length=128)] | None = None
    conversation_id: Annotated[str, Field(min_length=1, max_length=256)]
    turn_id: Annotated[str, Field(min_length=1, max_length=256)]
    occurred_at: EventTime
    received_at: AwareDatetime | None = None
    # the end user's pseudonymous id, when the producer knows it: `evalloop erase --user`
    # removes every conversation that carries it (docs/security.md#erasure)
    user_id: Annotated[str, Field(min_length=1, max_length=256)] | None = None
    question: Text | None = None
    answer: Text | None = None
    context_chunks: list[ContextChunk] | None = Field(default=None, max_length=64)


class AgentResponse(_Event):
    """The agent answered a turn (every turn, rated or not); the negative-rate denominator."""

    event_type: Literal["agent_response"] = "agent_response"
    latency_ms: Annotated[float, Field(ge=0)] | None = None
    model_version: str | None = None
    prompt_version: str | None = None


class UserRating(_Event):
    """An end user rated an answer: ``thumbs`` up/down, or ``score`` 1-5 (at least one)."""

    event_type: Literal["user_rating"] = "user_rating"
    thumbs: Literal["up", "down"] | None = None
    score: Annotated[int, Field(ge=1, le=5)] | None = None
    comment: Text | None = None

    @model_validator(mode="after")
    def _needs_a_rating(self) -> UserRating:
        if self.thumbs is None and self.score is None:
            raise ValueError("a user_rating needs 'thumbs' ('up'|'down') or 'score' (1-5)")
        return self


class OperatorCorrection(_Event):
    """A human operator overrode an answer; ``corrected_answer`` becomes the expected answer."""

    event_type: Literal["operator_correction"] = "operator_correction"
    corrected_answer: Annotated[str, Field(min_length=1, max_length=32_000)]
    reason: Text | None = None
    operator_id: str | None = None


class Escalation(_Event):
    """The conversation went to a human. ``requested_by``: who asked for it."""

    event_type: Literal["escalation"] = "escalation"
    requested_by: Literal["user", "agent", "policy"]
    reason: Text | None = None


class SafetyTrigger(_Event):
    """A production safety gate fired on the turn."""

    event_type: Literal["safety_trigger"] = "safety_trigger"
    gate: Annotated[str, Field(min_length=1, max_length=128)]
    category: Annotated[str, Field(min_length=1, max_length=128)]
    severity: Literal["low", "medium", "high", "critical"]
    action: Literal["logged", "warned", "blocked", "redacted", "escalated"]


class ConversationOutcome(_Event):
    """Analytics on a finished conversation (``turn_id`` = the conversation's last turn)."""

    event_type: Literal["conversation_outcome"] = "conversation_outcome"
    resolved: bool
    follow_up_count: Annotated[int, Field(ge=0)] = 0
    abandoned: bool = False


class AgentChanged(_Event):
    """The agent's prompt, model or knowledge base changed (drives re-evaluation triggers).

    ``deployed_run_id``: the change went to production and this is the evaluation run of the
    deployed configuration (a baseline candidate, ``docs/readiness.md#baseline``).
    """

    event_type: Literal["agent_changed"] = "agent_changed"
    change_kind: Literal["system_prompt", "model_version", "knowledge_base"]
    new_version: Annotated[str, Field(min_length=1, max_length=128)]
    changed_documents: list[str] = Field(default_factory=list, max_length=10_000)
    deployed_run_id: UUID | None = None


FeedbackEvent = Annotated[
    AgentResponse
    | UserRating
    | OperatorCorrection
    | Escalation
    | SafetyTrigger
    | ConversationOutcome
    | AgentChanged,
    Field(discriminator="event_type"),
]
FEEDBACK_EVENT_TYPES: tuple[type[_Event], ...] = (
    AgentResponse,
    UserRating,
    OperatorCorrection,
    Escalation,
    SafetyTrigger,
    ConversationOutcome,
    AgentChanged,
)
_FEEDBACK_ADAPTER: TypeAdapter[Any] = TypeAdapter(FeedbackEvent)


# --------------------------------------------------------------------------- internal messages


class NegativeCase(_Model):
    """One turn judged negative after fusing its signals (topic ``feedback.negative.v1``).

    ``case_id`` is deterministic (agent, conversation, turn) so a re-fused turn is the same case;
    ``confidence`` is 0-1; ``signals`` names the rules that fired (``core.fusion.SignalKind``:
    ``thumbs_down``, ``operator_correction``, ... and positive ones such as ``thumbs_up``);
    ``evidence_event_ids`` are the fused events. ``expected_answer`` comes from an operator
    correction when one exists.
    """

    case_id: UUID
    agent_id: AgentId
    conversation_id: str
    turn_id: str
    occurred_at: AwareDatetime
    confidence: Annotated[float, Field(ge=0, le=1)]
    signals: list[str]
    evidence_event_ids: list[UUID]
    question: str | None = None
    answer: str | None = None
    comment: str | None = None
    expected_answer: str | None = None
    context_chunks: list[ContextChunk] | None = None


class ReevalRequested(_Model):
    """A re-evaluation job was requested (topic ``reeval.requested.v1``).

    ``trigger``: why (docs/rules.md#feedback-loop-trigger: negative rate > 2% over 24 h; cadence,
    docs/rules.md#eval-cadence: agent change,
    knowledge-base update, weekly sample, manual). For ``negative_rate`` the window and counts are
    set; ``rate`` and the Wilson 95% interval bounds are ratios 0-1.
    """

    job_id: UUID
    agent_id: AgentId
    requested_at: AwareDatetime
    trigger: Literal[
        "negative_rate", "system_prompt", "model_version", "knowledge_base", "weekly_sample",
        "manual", "conditional_go", "nightly",
    ]
    reason: str
    window_start: AwareDatetime | None = None
    window_end: AwareDatetime | None = None
    negatives: int | None = None
    turns: int | None = None
    denominator: Literal["agent_response", "signalled_turns"] | None = None
    rate: float | None = None
    wilson_low: float | None = None
    wilson_high: float | None = None
    changed_documents: list[str] = Field(default_factory=list)
    sample_size: int | None = None
    sample_seed: int | None = None


class ReevalCompleted(_Model):
    """A re-evaluation job finished (topic ``reeval.completed.v1``); ``summary`` is the run's.

    ``decision`` / ``decision_why``: the readiness gate's verdict on the run
    (``docs/readiness.md#the-gate``), ``None`` / empty when no run was made.
    """

    job_id: UUID
    run_id: UUID | None
    agent_id: AgentId
    status: Literal["succeeded", "failed"]
    golden_set_version_id: UUID | None
    finished_at: AwareDatetime
    summary: dict[str, Any]
    error: str | None = None
    decision: Literal["GO", "CONDITIONAL GO", "NO-GO"] | None = None
    decision_why: list[str] = Field(default_factory=list)


class ReadinessDecided(_Model):
    """The production gate decided on a run (topic ``readiness.decided.v1``;
    ``docs/readiness.md#the-gate``).

    ``composite`` is the run's mean composite 0-1 (``None``: unscored); ``failed_checks`` the
    names of the checks that did not pass; ``reeval_due_at`` / ``reeval_job_id`` the
    re-evaluation a CONDITIONAL GO scheduled; ``hallucinations`` claim counts by category.
    """

    decision_id: UUID
    run_id: UUID
    agent_id: str | None
    decision: Literal["GO", "CONDITIONAL GO", "NO-GO"]
    decided_at: AwareDatetime
    why: list[str]
    composite: float | None = None
    baseline_run_id: UUID | None = None
    shared_cases: int | None = None
    failed_checks: list[str] = Field(default_factory=list)
    monitoring_flags: list[str] = Field(default_factory=list)
    reeval_due_at: AwareDatetime | None = None
    reeval_job_id: UUID | None = None
    hallucinations: dict[str, int] = Field(default_factory=dict)


class CandidateProposed(_Model):
    """A golden-set candidate entered the review queue (topic ``golden.candidate.proposed.v1``)."""

    candidate_id: UUID
    agent_id: AgentId
    cluster_id: str
    cluster_label: str
    question: str
    answer_given: str | None
    expected_answer: str | None
    evidence_event_ids: list[UUID]
    confidence: Annotated[float, Field(ge=0, le=1)]
    proposed_at: AwareDatetime


class GoldenSetPublished(_Model):
    """A new golden-set version was made by a review action (topic ``golden.set.published.v1``).

    Emitted from an outbox, once per version (``version_id`` is the idempotency key); the
    evaluator's next run of the agent uses this version (``docs/review.md#publication``).
    ``diff`` lists case ids ``added`` / ``removed`` / ``changed`` against the parent.
    """

    version_id: UUID
    agent_id: AgentId
    golden_set_id: str
    version: Annotated[int, Field(ge=1)]
    parent_version_id: UUID | None
    case_count: Annotated[int, Field(ge=0)]
    diff: dict[str, list[str]]
    content_hash: str
    created_by: str | None
    reason: str
    created_at: AwareDatetime


# --------------------------------------------------------------------------- decoding


def _problems(exc: ValidationError) -> list[FieldProblem]:
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith("function-"))
        # The discriminated union puts the tag first in ``loc`` (e.g. "user_rating.score");
        # the tag is not a field, drop it.
        parts = loc.split(".", 1)
        if parts[0] in _TAGS:
            loc = parts[1] if len(parts) == 2 else ""  # a model-level rule: the whole record
        # A missing field has the whole record as its "input": say what arrived instead.
        missing = err["type"] == "missing"
        received = "nothing (field missing)" if missing else _short(err.get("input"))
        out.append(FieldProblem(field=loc or "(record)", expected=err["msg"], received=received))
    return out


_TAGS = {cls.model_fields["event_type"].default for cls in FEEDBACK_EVENT_TYPES}


def _short(value: Any, limit: int = 120) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _strict_json(raw: bytes | str) -> Any:
    """``json.loads`` without Python's extensions: ``NaN``/``Infinity`` are refused, as every
    other JSON parser on the path (pydantic's, PostgreSQL's jsonb) refuses them; text nested
    too deep for the decoder's recursion is refused as not JSON
    (``docs/operations.md#poison-records``).

    Raises:
        ValueError: not JSON (a ``json.JSONDecodeError`` or ``UnicodeDecodeError`` included),
            or nested too deep to decode.
    """
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except RecursionError as exc:
        raise ValueError("JSON nested too deep to decode") from exc


def parse_event(raw: bytes | str | dict[str, Any], *, index: int | None = None) -> FeedbackEvent:
    """Decode and validate one feedback event.

    Args:
        raw: JSON bytes/str or an already-decoded dict.
        index: position in a batch, echoed in the error.

    Returns:
        The concrete event model (``AgentResponse``, ``UserRating``, ...).

    Raises:
        InvalidEvent: not JSON, larger than ``MAX_EVENT_BYTES``, not an object, unknown
            ``event_type``, or any field invalid; ``problems`` lists each field, what was
            expected and what arrived; ``undecodable`` when decoding itself failed
            (e.g. ``RecursionError``): one record never raises anything else.
    """
    try:
        return _parse_event(raw, index)
    except InvalidEvent:
        raise
    except Exception as exc:  # poison: never a crash (docs/operations.md#poison-records)
        raise undecodable(exc, index=index) from exc


def _parse_event(raw: bytes | str | dict[str, Any], index: int | None) -> FeedbackEvent:
    if isinstance(raw, bytes | str):
        size = len(raw.encode() if isinstance(raw, str) else raw)
        if size > MAX_EVENT_BYTES:
            raise InvalidEvent(
                "oversized",
                [FieldProblem("(record)", f"at most {MAX_EVENT_BYTES} bytes", f"{size} bytes")],
                index=index,
            )
        try:
            data = _strict_json(raw)
        except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity
            raise InvalidEvent(
                "malformed_json", [FieldProblem("(record)", "a JSON object", str(exc))], index=index
            ) from exc
    else:
        data = raw
    if not isinstance(data, dict):
        raise InvalidEvent(
            "not_an_object",
            [FieldProblem("(record)", "a JSON object", type(data).__name__)],
            index=index,
        )
    etype = data.get("event_type")
    if etype not in _TAGS:
        raise InvalidEvent(
            "unknown_event_type",
            [FieldProblem("event_type", f"one of {sorted(_TAGS)}", _short(etype))],
            event_id=_maybe_id(data),
            index=index,
        )
    try:
        return _FEEDBACK_ADAPTER.validate_python(data)  # type: ignore[no-any-return]
    except ValidationError as exc:
        raise InvalidEvent(
            "invalid_fields", _problems(exc), event_id=_maybe_id(data), index=index
        ) from exc


def _maybe_id(data: dict[str, Any]) -> str | None:
    value = data.get("event_id")
    return str(value) if isinstance(value, str) else None


def parse_events(raw: bytes | str, limits: BatchLimits = DEFAULT_LIMITS) -> list[FeedbackEvent]:
    """Decode a JSON body holding one event object or an array of them.

    The work is bounded by ``limits`` (``docs/operations.md#bounded-work-per-request``): a body
    over ``max_body_bytes`` or with more than ``max_records`` records is refused before any
    record is validated, and an :class:`~evalloop.errors.InvalidBatch` describes at most
    ``max_errors`` records (``omitted`` counts the others).

    Raises:
        InvalidEvent: the body itself is too large (``oversized``), has too many records
            (``too_many_records``), or is not JSON / not an object or array.
        InvalidBatch: one or more records are invalid; ``errors`` holds one ``InvalidEvent``
            per bad record (with its ``index``, the first ``max_errors`` of them), and nothing
            of the batch should be accepted.
    """
    from evalloop.errors import InvalidBatch

    if len(raw) > limits.max_body_bytes:
        raise InvalidEvent(
            "oversized",
            [FieldProblem("(body)", f"at most {limits.max_body_bytes} bytes",
                          f"{len(raw)} bytes")],
        )
    try:
        data = _strict_json(raw)
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, NaN/Infinity, too deep
        raise InvalidEvent(
            "malformed_json", [FieldProblem("(body)", "a JSON object or array", str(exc))]
        ) from exc
    records = data if isinstance(data, list) else [data]
    if len(records) > limits.max_records:
        raise InvalidEvent(
            "too_many_records",
            [FieldProblem("(body)", f"at most {limits.max_records} records per batch",
                          f"{len(records)} records")],
        )
    events: list[FeedbackEvent] = []
    errors: list[InvalidEvent] = []
    omitted = 0
    for i, record in enumerate(records):
        try:
            events.append(_parse_record(record, i))
        except InvalidEvent as exc:
            if len(errors) < limits.max_errors:
                errors.append(exc)
            else:
                omitted += 1
    if errors:
        raise InvalidBatch(errors, omitted=omitted)
    return events


def _parse_record(record: Any, index: int) -> FeedbackEvent:
    """One record of a decoded batch (see :func:`parse_events`).

    Raises:
        InvalidEvent: the record is invalid, including whatever surprising error its decoding
            raised (``undecodable``): one record never fails the decoding of its batch.
    """
    try:
        if not isinstance(record, dict):  # a string element is not JSON text to re-parse
            raise InvalidEvent(
                "not_an_object",
                [FieldProblem("(record)", "a JSON object", type(record).__name__)],
                index=index,
            )
        size = len(json.dumps(record, ensure_ascii=False).encode("utf-8", "surrogatepass"))
        if size > MAX_EVENT_BYTES:
            raise InvalidEvent(
                "oversized",
                [FieldProblem("(record)", f"at most {MAX_EVENT_BYTES} bytes", f"{size} bytes")],
                event_id=_maybe_id(record),
                index=index,
            )
        return parse_event(record, index=index)
    except InvalidEvent:
        raise
    except Exception as exc:  # RecursionError and the like: poison, never a crash
        raise undecodable(exc, index=index) from exc


def undecodable(exc: BaseException, *, index: int | None = None) -> InvalidEvent:
    """The :class:`InvalidEvent` (reason ``undecodable``) for a record whose decoding raised
    something other than a validation error, e.g. ``RecursionError`` on deep nesting
    (``docs/operations.md#poison-records``)."""
    return InvalidEvent(
        "undecodable",
        [FieldProblem("(record)", "a JSON object a decoder can read",
                      f"{type(exc).__name__}: {_short(str(exc))}")],
        index=index,
    )


def dump_event(event: BaseModel) -> bytes:
    """Encode any wire model as compact UTF-8 JSON bytes (UTC ISO-8601 timestamps)."""
    return event.model_dump_json(exclude_none=False).encode()
