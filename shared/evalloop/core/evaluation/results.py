"""Result records of an evaluation run: one per case, a run summary, the exit-code gate.

A :class:`CaseResult` carries what the runner reports (``docs/rules.md#eval-run-outputs``: the
response, gates, quality flags, ``requires_human_review``) plus an **empty-by-default slot for
the quality dimensions** (``docs/rules.md#quality-dimensions``):
``scores`` (the seven dimensions, 0-1, ``None`` = not scored), ``composite`` and ``judge``. The
judge fills these in; nothing here reads them, so adding it needs no rewrite.

JSON form: ``model_dump(mode="json")`` -- the ``evals-results-<timestamp>.json`` file and the
``eval_runs``/``eval_results`` rows are both made from it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import Any, Literal
from uuid import UUID

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from evalloop.core.evaluation.gates import GateResult

__all__ = [
    "DIMENSIONS",
    "AgentFailure",
    "CaseResult",
    "CaseStatus",
    "CategorySummary",
    "EvalRun",
    "FailureKind",
    "FlagRecord",
    "GateRecord",
    "RunSummary",
    "ToolCallRecord",
    "exit_code",
    "summarise",
]

#: ``docs/rules.md#quality-dimensions`` (names only; weights/thresholds belong to the judge).
DIMENSIONS: tuple[str, ...] = ("correctness", "relevance", "tone", "safety", "groundedness",
                               "faithfulness", "context_utilization")


class CaseStatus(StrEnum):
    """A case's outcome.

    ``passed``: every gate passed. ``failed_gate``: a refusal or escalation gate failed.
    ``agent_error``: the agent was unreachable, timed out, answered 5xx after retries, or sent
    a body the endpoint contract cannot read. ``unscored``: no response to score.
    """

    PASSED = "passed"
    FAILED_GATE = "failed_gate"
    AGENT_ERROR = "agent_error"
    UNSCORED = "unscored"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class GateRecord(_Frozen):
    """One gate's verdict (see :class:`evalloop.core.evaluation.gates.GateResult`)."""

    gate: Literal["refusal", "escalation"]
    expected: bool
    observed: bool
    passed: bool
    kind: str | None = None
    evidence: str | None = None
    reason: str
    rule: str | None = None
    clause: str | None = None
    source: str = "rules"
    score: float | None = Field(None, ge=0.0, le=1.0)

    @classmethod
    def of(cls, result: GateResult) -> GateRecord:
        """Copy a gate result into its record."""
        return cls(**result.as_dict())


class ToolCallRecord(_Frozen):
    """One tool call the answer made beside its text (``docs/rules.md#tool-calls``): the tool's
    ``name`` and its ``arguments`` as text (JSON as the agent sent it)."""

    name: str
    arguments: str = ""


class FlagRecord(_Frozen):
    """One quality flag (name from ``flags.FLAG_DOCS``) and its detail."""

    name: str
    detail: str


#: Why an agent gave no usable answer (``docs/rules.md#endpoint-contract``). Transport:
#: ``unreachable`` (connection refused, DNS), ``connection_lost`` (reset or closed mid-reply),
#: ``timeout``, ``unsupported_url`` (not an http(s) URL), ``transport_error`` (any other HTTP
#: client error, named in the message). Status: ``rate_limited`` (429), ``http_5xx``,
#: ``http_4xx``, ``redirect`` (3xx: not followed). Body: ``too_large`` (over the size cap),
#: ``bad_content_encoding`` (e.g. labelled gzip but not), ``not_text`` (undecodable in its
#: charset, or a charset that is no text encoding), ``html_page`` (an HTML document, whatever
#: the status), ``non_text_document`` (XML, PDF, an image, ``application/octet-stream``...: a
#: body that is neither text nor JSON), ``no_text`` (no answer text: empty body or string, tool
#: calls only), ``malformed_response`` (malformed, too deeply nested or unrecognised JSON, an
#: error object even beside text, an unreadable reply; the message starts with which).
FailureKind = Literal[
    "unreachable", "connection_lost", "timeout", "unsupported_url", "transport_error",
    "rate_limited", "http_5xx", "http_4xx", "redirect", "too_large", "bad_content_encoding",
    "not_text", "html_page", "non_text_document", "no_text", "malformed_response",
]


class AgentFailure(_Frozen):
    """Why the agent gave no usable answer.

    Attributes:
        kind: one of :data:`FailureKind`.
        message: the error, one line.
        http_status: the last HTTP status, if one arrived.
        attempts: requests made (1 + retries used; 0 for a canned response).
    """

    kind: FailureKind
    message: str
    http_status: int | None = None
    attempts: int = Field(1, ge=0)


class CaseResult(_Frozen):
    """The result of one eval case.

    Attributes:
        case_id, category, input, expected_behavior: copied from the case.
        should_refuse, should_escalate: the case's expectations.
        response: the answer text (``None`` when there was none: agent error / unscored).
        response_format: the format it was read from (``sse``, ``openai``, ``anthropic``,
            ``json``, ``text``; ``canned`` for a responses file).
        latency_ms: wall time of the successful request incl. retries, milliseconds.
        attempts: HTTP requests made for this case.
        status: see :class:`CaseStatus`.
        gates: ``{"refusal": ..., "escalation": ...}`` (empty for errors/unscored).
        flags: quality flags (never change ``status``).
        requires_human_review: ``bool(review_reasons)``.
        review_reasons: why a human must look (``flags.review_reasons``).
        error: the agent failure, for ``agent_error``.
        scores: quality dimension -> score 0-1 (``None`` = judge could not score); empty
            until a judge runs.
        composite: weighted composite 0-1, ``None`` until a judge runs.
        judge: the judge's metadata (model, prompt version, raw verdicts), ``None`` until then.
        retrieved_context: ids of the passages the agent said it retrieved (its
            ``X-Context-Chunks`` header), ``None`` when it did not say.
        tool_calls: the tool calls the answer made beside its text, in order (empty for a
            text-only answer); the gates judge them (``docs/rules.md#tool-calls``). Kept in the
            results file; the database keeps them only as gate evidence.
        beside_text: what the reply showed the person asking beside its text, one line each:
            ``"citation: <title> <address>"`` (a cited page or document, the quoted text),
            ``"quick reply: <text>"`` (a button or suggestion); empty when it showed nothing
            else (``docs/rules.md#what-a-reply-shows-beside-its-text``). Kept in the results file.
        context_chunks: ids of the passages the case expects the answer to draw on (the eval
            file's or golden case's ``context_chunks``; empty when it names none), so the gate
            can tell a retrieval miss from an answer that strayed
            (``docs/readiness.md#the-gate``).
    """

    case_id: str
    category: str
    input: str
    expected_behavior: str | None = None
    should_refuse: bool
    should_escalate: bool
    response: str | None = None
    response_format: str | None = None
    latency_ms: float | None = Field(None, ge=0)
    attempts: int = Field(0, ge=0)
    status: CaseStatus
    gates: dict[str, GateRecord] = Field(default_factory=dict)
    flags: list[FlagRecord] = Field(default_factory=list)
    requires_human_review: bool = False
    review_reasons: list[str] = Field(default_factory=list)
    error: AgentFailure | None = None
    scores: dict[str, float | None] = Field(default_factory=dict)
    composite: float | None = Field(None, ge=0, le=1)
    judge: dict[str, Any] | None = None
    retrieved_context: list[str] | None = None
    context_chunks: list[str] = Field(default_factory=list)
    tool_calls: list[ToolCallRecord] = Field(default_factory=list)
    beside_text: list[str] = Field(default_factory=list)

    @field_validator("scores")
    @classmethod
    def _known_dimensions(cls, value: dict[str, float | None]) -> dict[str, float | None]:
        unknown = sorted(set(value) - set(DIMENSIONS))
        if unknown:
            raise ValueError(f"expected quality dimensions {DIMENSIONS}, received {unknown}")
        bad = {k: v for k, v in value.items() if v is not None and not 0 <= v <= 1}
        if bad:
            raise ValueError(f"expected scores in 0-1, received {bad}")
        return value

    @property
    def gate_failed(self) -> bool:
        """Whether a refusal or escalation gate failed."""
        return any(not g.passed for g in self.gates.values())


class CategorySummary(_Frozen):
    """Counts for one category."""

    total: int
    passed: int
    failed_gate: int
    agent_error: int
    unscored: int
    flagged: int


class RunSummary(_Frozen):
    """The summary of a run.

    Attributes:
        total: cases run.
        passed, failed_gate, agent_errors, unscored: counts by status.
        flagged: cases with at least one quality flag.
        requires_human_review: cases marked for review.
        pass_rate: passed / (total - unscored), 0-1 (``None`` when nothing was scored).
        refusal_gate_failures, escalation_gate_failures: case ids failing each gate.
        agent_error_cases: case ids with agent errors.
        unscored_cases: case ids with nothing to score (e.g. no canned response).
        required_unscored: the unscored cases that must refuse or escalate (they fail the run).
        by_category: category -> counts.
        gate_failed: the exit-code gate (``docs/rules.md#run-gate``).
        gate_reasons: why ``gate_failed``, one line each (empty when the run passed).
        second_opinion: what gave the gates a second opinion in this run
            (``docs/rules.md#second-opinion``): ``off (the rules alone)``, a model with its
            weights and how far it is trusted, or why it was unavailable; ``None`` when not
            recorded (runs stored before it was, summaries computed outside the runner).
        answer_check: which non-answer check read the cases to be answered
            (``docs/rules.md#non-answer-check``): its name, ``off``, ``not run: …`` or why it
            was unavailable; ``None`` when not recorded.
    """

    total: int
    passed: int
    failed_gate: int
    agent_errors: int
    unscored: int
    flagged: int
    requires_human_review: int
    pass_rate: float | None
    refusal_gate_failures: list[str]
    escalation_gate_failures: list[str]
    agent_error_cases: list[str]
    unscored_cases: list[str] = Field(default_factory=list)
    required_unscored: list[str] = Field(default_factory=list)
    by_category: dict[str, CategorySummary]
    gate_failed: bool
    gate_reasons: list[str] = Field(default_factory=list)
    second_opinion: str | None = None
    answer_check: str | None = None


class EvalRun(_Frozen):
    """One evaluation run: where it ran, on what, and every case's result.

    Attributes:
        run_id: the run's id (also the ``eval_runs`` primary key).
        started_at, finished_at: UTC.
        endpoint: the agent URL, or ``None`` for a responses file.
        source: ``endpoint`` or ``responses_file``.
        eval_source: the eval file name or ``golden:<agent>@<version>``.
        agent_id: the agent evaluated, if known.
        golden_set_version_id: the pinned stored version, if the cases came from one.
        job_id: the re-evaluation job that asked for this run, if any.
        results: per-case results, in case order.
        summary: :func:`summarise` of ``results`` (with the run's second opinion).
    """

    run_id: UUID
    started_at: AwareDatetime
    finished_at: AwareDatetime
    endpoint: str | None = None
    source: Literal["endpoint", "responses_file"]
    eval_source: str | None = None
    agent_id: str | None = None
    golden_set_version_id: UUID | None = None
    job_id: UUID | None = None
    results: list[CaseResult]
    summary: RunSummary

    @property
    def duration_s(self) -> float:
        """Wall time of the run, seconds."""
        return (self.finished_at - self.started_at).total_seconds()


def _category_summary(results: list[CaseResult]) -> CategorySummary:
    return CategorySummary(
        total=len(results),
        passed=sum(r.status == CaseStatus.PASSED for r in results),
        failed_gate=sum(r.status == CaseStatus.FAILED_GATE for r in results),
        agent_error=sum(r.status == CaseStatus.AGENT_ERROR for r in results),
        unscored=sum(r.status == CaseStatus.UNSCORED for r in results),
        flagged=sum(bool(r.flags) for r in results),
    )


def _ids(ids: list[str], limit: int = 10) -> str:
    # "... (1 more)" would hide an id in the space it takes: up to limit + 2 are all shown
    if len(ids) <= limit + 2:
        return ", ".join(ids)
    return ", ".join(ids[:limit]) + f", ... ({len(ids) - limit} more)"


def summarise(results: list[CaseResult]) -> RunSummary:
    """Summarise case results (counts, pass rate, gate failures, per-category breakdown).

    Args:
        results: the run's case results.

    Returns:
        The summary. ``gate_failed`` (``docs/rules.md#run-gate``) is True when any case failed
        its refusal or escalation gate, any case hit an agent error, **no case was scored**,
        or a case that must refuse or escalate went unscored; ``gate_reasons`` says which,
        a gate's failures split by what the case required ("refusal gate failed (a refusal
        was required): L01, L02", "refusal gate failed (a refusal or no answer where an
        answer was required): N01", "escalation gate failed (a hand-off where a refusal was
        required): L07").
        Other unscored cases do not fail the run: they are counted and listed
        (``unscored_cases``) and marked for human review.
    """
    overall = _category_summary(results)
    scored = overall.passed + overall.failed_gate
    categories = sorted({r.category for r in results})
    refusal_fail = [r.case_id for r in results
                    if "refusal" in r.gates and not r.gates["refusal"].passed]
    escalation_fail = [r.case_id for r in results
                       if "escalation" in r.gates and not r.gates["escalation"].passed]
    errors = [r.case_id for r in results if r.status == CaseStatus.AGENT_ERROR]
    unscored = [r.case_id for r in results if r.status == CaseStatus.UNSCORED]
    required = [r.case_id for r in results if r.status == CaseStatus.UNSCORED
                and (r.should_refuse or r.should_escalate)]
    reasons = []
    # one line per kind of failure, so a reader tells a leak from a non-answer at a glance
    by_id = {r.case_id: r for r in results}
    failing = {"refusal": refusal_fail, "escalation": escalation_fail}
    kinds: tuple[tuple[str, str, Callable[[CaseResult], bool]], ...] = (
        ("refusal", "a refusal was required", lambda r: r.gates["refusal"].expected),
        ("refusal", "a refusal or no answer where an answer was required",
         lambda r: not r.gates["refusal"].expected),
        ("escalation", "a hand-off was required", lambda r: r.gates["escalation"].expected),
        ("escalation", "a hand-off or pointer where an answer was required",
         lambda r: not r.gates["escalation"].expected and not r.should_refuse),
        # a hand-off in a case to be declined is no failure to answer
        ("escalation", "a hand-off where a refusal was required",
         lambda r: not r.gates["escalation"].expected and r.should_refuse))
    for gate, why, belongs in kinds:
        ids = [i for i in failing[gate] if belongs(by_id[i])]
        if ids:
            reasons.append(f"{gate} gate failed ({why}): {_ids(ids)}")
    if errors:
        reasons.append(f"agent errors: {_ids(errors)}")
    if not scored:
        causes = [f"{n} {label}" for n, label in ((overall.agent_error, "agent errors"),
                                                   (overall.unscored, "unscored")) if n]
        reasons.append(f"nothing was scored (0 of {overall.total} cases"
                       + (f": {', '.join(causes)})" if causes else ")"))
    if required:
        reasons.append(f"cases that must refuse or escalate went unscored: {_ids(required)}")
    return RunSummary(
        total=overall.total, passed=overall.passed, failed_gate=overall.failed_gate,
        agent_errors=overall.agent_error, unscored=overall.unscored, flagged=overall.flagged,
        requires_human_review=sum(r.requires_human_review for r in results),
        pass_rate=(overall.passed / (overall.total - overall.unscored))
        if overall.total - overall.unscored else None,
        refusal_gate_failures=refusal_fail, escalation_gate_failures=escalation_fail,
        agent_error_cases=errors, unscored_cases=unscored, required_unscored=required,
        by_category={c: _category_summary([r for r in results if r.category == c])
                     for c in categories},
        gate_failed=bool(reasons), gate_reasons=reasons,
    )


def exit_code(summary: RunSummary, *, fail_on_gates: bool = True) -> int:
    """Return the process exit code (``docs/exit-codes.md``): 1 if the gate failed and
    ``fail_on_gates``, else 0 (``--no-fail-on-gates``: report only, always 0)."""
    return 1 if (fail_on_gates and summary.gate_failed) else 0


def utc_iso(value: datetime) -> str:
    """Format a UTC time as ``2026-03-15T10:00:00Z``."""
    return value.isoformat().replace("+00:00", "Z")
