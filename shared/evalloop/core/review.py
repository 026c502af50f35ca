"""Review values: who acts (:class:`Reviewer`), what an edit may change, and the golden case a
confirmed candidate becomes. Pure: values in, values out.

Flows, roles and the edit fields: ``docs/review.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from evalloop.core.evaluation.cases import CATEGORIES, EvalCase
from evalloop.errors import FieldProblem, ReviewInputError

__all__ = [
    "DIFFICULTIES",
    "EDITABLE_FIELDS",
    "EVAL_CRITERIA",
    "ROLES",
    "CandidateDraft",
    "Reviewer",
    "Role",
    "apply_edits",
    "golden_case_id",
    "parse_edits",
    "parse_verdict",
    "to_golden_case",
]

Role = Literal["viewer", "reviewer", "admin"]
#: Roles, least to most: a viewer reads; a reviewer (or an admin) acts on the queues.
ROLES: tuple[Role, ...] = ("viewer", "reviewer", "admin")
#: Golden-set difficulty levels (``docs/rules.md#golden-set-format``).
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard")
#: Fields a reviewer may edit before confirming (``docs/review.md#edit``).
EDITABLE_FIELDS: tuple[str, ...] = (
    "question", "expected_answer", "expected_behavior", "tags", "difficulty", "domain",
    "should_refuse", "should_escalate", "category", "notes",
)
#: Criteria of the eval rubric a person marks pass/fail on a flagged eval case
#: (``docs/review.md#eval-human-review``): the seven quality dimensions
#: (``docs/rules.md#quality-dimensions``), the two gates and the case's expected behaviour.
EVAL_CRITERIA: tuple[str, ...] = (
    "correctness", "relevance", "tone", "safety", "groundedness", "faithfulness",
    "context_utilization", "refusal", "escalation", "expected_behavior",
)
_NAME = re.compile(r"^[A-Za-z0-9_.@:+\- ]{1,128}$")
_TAG = re.compile(r"^[A-Za-z0-9_.:+\-/ ]{1,64}$")


@dataclass(frozen=True, slots=True)
class Reviewer:
    """The person acting, as the web app (or the CLI) identified them.

    Attributes:
        name: user name or token label (1-128 characters of letters, digits, ``_.@:+-`` and
            spaces); recorded on every audit row.
        role: ``viewer`` | ``reviewer`` | ``admin``.

    Raises:
        ValueError: a malformed name or an unknown role.
    """

    name: str
    role: Role = "reviewer"

    def __post_init__(self) -> None:
        """Validate name and role (``ValueError`` naming what arrived)."""
        if not _NAME.match(self.name or ""):
            raise ValueError(f"reviewer name: expected 1-128 letters, digits, spaces or _.@:+-, "
                             f"received {self.name!r}")
        if self.role not in ROLES:
            raise ValueError(f"reviewer role: expected one of {ROLES}, received {self.role!r}")

    @property
    def can_act(self) -> bool:
        """``True`` for reviewers and admins: only they change a queue or a golden set."""
        return self.role in ("reviewer", "admin")


@dataclass(frozen=True, slots=True)
class CandidateDraft:
    """A candidate as it would enter the golden set (before edits).

    Attributes:
        candidate_id: the queue row's id (text).
        question: the user's question.
        expected_answer: the proposed expected answer, or ``None``.
        context_chunks: ids of knowledge passages the expected answer draws on.
        cluster_label: the cluster's label (goes into ``notes``).
    """

    candidate_id: str
    question: str
    expected_answer: str | None
    context_chunks: tuple[str, ...] = ()
    cluster_label: str | None = None


def _problem(field: str, expected: str, value: Any) -> FieldProblem:
    shown = repr(value)
    return FieldProblem(field, expected, shown if len(shown) <= 120 else shown[:117] + "...")


def parse_edits(raw: Any) -> dict[str, Any]:
    """Validate a reviewer's edits (a JSON object of :data:`EDITABLE_FIELDS`).

    Args:
        raw: the decoded ``edits`` object.

    Returns:
        The edits, normalised: strings stripped, tags de-duplicated in order, ``None`` kept
        for a text field the reviewer cleared (``expected_answer``, ``expected_behavior``,
        ``notes``, ``domain``, ``difficulty``).

    Raises:
        ReviewInputError: not an object, an unknown field, or a bad value (every problem named).
    """
    if not isinstance(raw, Mapping):
        raise ReviewInputError([_problem("edits", "a JSON object", raw)])
    out: dict[str, Any] = {}
    problems: list[FieldProblem] = []
    for key, value in raw.items():
        f = f"edits.{key}"
        if key not in EDITABLE_FIELDS:
            problems.append(_problem(f, f"one of {', '.join(EDITABLE_FIELDS)}", key))
        elif key == "question":
            if not isinstance(value, str) or not value.strip():
                problems.append(_problem(f, "a non-empty string", value))
            else:
                out[key] = value.strip()
        elif key in ("expected_answer", "expected_behavior", "notes", "domain"):
            if value is not None and not isinstance(value, str):
                problems.append(_problem(f, "a string or null", value))
            else:
                out[key] = value.strip() or None if isinstance(value, str) else None
        elif key == "difficulty":
            if value is not None and value not in DIFFICULTIES:
                problems.append(_problem(f, f"one of {', '.join(DIFFICULTIES)} or null", value))
            else:
                out[key] = value
        elif key == "category":
            if value not in CATEGORIES:
                problems.append(_problem(f, f"one of {', '.join(CATEGORIES)}", value))
            else:
                out[key] = value
        elif key in ("should_refuse", "should_escalate"):
            if not isinstance(value, bool):
                problems.append(_problem(f, "true or false", value))
            else:
                out[key] = value
        elif key == "tags":
            if not isinstance(value, list) or not all(
                    isinstance(t, str) and _TAG.match(t.strip()) for t in value):
                problems.append(_problem(
                    f, "a list of tags (1-64 letters, digits, spaces or _.:+-/)", value))
            else:
                out[key] = list(dict.fromkeys(t.strip() for t in value))
    if problems:
        raise ReviewInputError(problems)
    return out


def apply_edits(saved: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """Edits saved earlier, overridden field by field by ``new`` (both already parsed)."""
    return {**saved, **new}


def golden_case_id(candidate_id: str) -> str:
    """Golden case id of a confirmed candidate: ``fb-`` + the first 12 hex digits of its id
    (stable: confirming the same candidate can only ever name the same case)."""
    return "fb-" + candidate_id.replace("-", "")[:12]


def to_golden_case(draft: CandidateDraft, edits: Mapping[str, Any], *, reviewer: Reviewer,
                   at: datetime) -> EvalCase:
    """The golden case a confirmed candidate becomes, with the reviewer's edits applied.

    ``domain`` becomes a ``domain:<name>`` tag (the golden-set format has no domain field;
    the care checks read the tag, ``docs/review.md#care-checks``); the category, refusal and
    escalation expectations are added as tags by the same rule as an import
    (``docs/rules.md#golden-set-format``).

    Args:
        draft: the candidate.
        edits: parsed edits (:func:`parse_edits`), possibly empty.
        reviewer: who confirmed (``created_by``).
        at: when (UTC; ``created_at``).
    """
    tags = list(edits.get("tags", []))
    domain = edits.get("domain")
    if domain:
        tags = [t for t in tags if not t.startswith("domain:")] + [f"domain:{domain}"]
    category = edits.get("category", "routine")
    refuse = bool(edits.get("should_refuse", False))
    escalate = bool(edits.get("should_escalate", False))
    for flag, tag in ((refuse, "refusal"), (escalate, "escalation"), (True, category)):
        if flag and tag not in tags:
            tags.append(tag)
    default_notes = (f"from production feedback (candidate {draft.candidate_id}"
                     + (f", cluster '{draft.cluster_label}'" if draft.cluster_label else "")
                     + ")")
    return EvalCase(
        id=golden_case_id(draft.candidate_id),
        input=edits.get("question", draft.question),
        expected_answer=edits.get("expected_answer", draft.expected_answer),
        expected_behavior=edits.get("expected_behavior"),
        should_refuse=refuse, should_escalate=escalate, category=category,
        notes=edits.get("notes", default_notes),
        context_chunks=draft.context_chunks, tags=tuple(tags),
        difficulty=edits.get("difficulty"), created_by=reviewer.name, created_at=at,
    )


def parse_verdict(raw: Any) -> tuple[dict[str, bool], int, str | None]:
    """Validate a human verdict on an eval case: ``{"criteria": {name: true|false}, "score":
    1-5, "note": str|null}``.

    Returns:
        ``(criteria, score, note)``; at least one criterion is required, names from
        :data:`EVAL_CRITERIA`.

    Raises:
        ReviewInputError: every bad field named.
    """
    if not isinstance(raw, Mapping):
        raise ReviewInputError([_problem("body", "a JSON object", raw)])
    problems: list[FieldProblem] = []
    criteria = raw.get("criteria")
    out: dict[str, bool] = {}
    if not isinstance(criteria, Mapping) or not criteria:
        problems.append(_problem("criteria", "an object of criterion -> true (pass) / false "
                                 "(fail), at least one", criteria))
    else:
        for k, v in criteria.items():
            if k not in EVAL_CRITERIA:
                problems.append(_problem(f"criteria.{k}", f"one of {', '.join(EVAL_CRITERIA)}",
                                         k))
            elif not isinstance(v, bool):
                problems.append(_problem(f"criteria.{k}", "true (pass) or false (fail)", v))
            else:
                out[k] = v
    score = raw.get("score")
    if isinstance(score, bool) or not isinstance(score, int) or not 1 <= score <= 5:
        problems.append(_problem("score", "an integer 1-5", score))
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        problems.append(_problem("note", "a string or null", note))
    unknown = sorted(set(raw) - {"criteria", "score", "note"})
    if unknown:
        problems.append(_problem("body", "only criteria, score and note", unknown))
    if problems:
        raise ReviewInputError(problems)
    assert isinstance(score, int)
    return out, score, (note.strip() or None) if isinstance(note, str) else None
