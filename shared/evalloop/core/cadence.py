"""Which golden-set cases a re-evaluation trigger runs (docs/rules.md#eval-cadence).

The eval cadence table (docs/rules.md#eval-cadence), as triggers of ``reeval.requested.v1``:

==========================  ======================================  =========================
cadence trigger            ``trigger``                             cases run
==========================  ======================================  =========================
Before initial deployment   ``manual``                              full set
System prompt change        ``system_prompt``                       full set
Knowledge base update       ``knowledge_base`` (changed_documents)  cases relevant to the
                                                                    changed content
Model version change        ``model_version``                       full set
Weekly production           ``weekly_sample`` (sample_size,         random sample of 10
monitoring                  sample_seed)                            cases
==========================  ======================================  =========================

plus the ``negative_rate`` trigger (docs/rules.md#feedback-loop-trigger) ("re-evaluation when the
negative feedback rate
exceeds 2%"), which runs the full set. ("After any escalation incident: add case covering the
incident scenario" is not a run: the evaluator proposes a golden-set candidate instead.)

A case is *relevant to changed content* when one of its ``context_chunks`` or ``tags`` is
touched by a changed document (:func:`touches`). Chunk ids are hierarchical
(``hr-policy/leave/marriage-leave/2``), so naming a document (``hr-policy``) or a section
(``hr-policy/leave``) touches every chunk under it, and naming a chunk touches that chunk.
A ``changed_documents`` entry is such an id prefix (or a tag); file names are not guessed at
(``HR_Policy_Procedures.pdf`` is ``hr-procedures`` in the reference agent's knowledge base, which
no slug rule would find).

Pure: values in, values out.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = [
    "FULL_SET_TRIGGERS",
    "WEEKLY_SAMPLE_SIZE",
    "CaseLike",
    "Selection",
    "Trigger",
    "document_keys",
    "select_cases",
    "touches",
]

Trigger = Literal[
    "negative_rate", "system_prompt", "model_version", "knowledge_base", "weekly_sample", "manual",
    "conditional_go", "nightly",
]
#: Triggers that run the whole golden-set version (docs/rules.md#eval-cadence;
#: docs/rules.md#feedback-loop-trigger;
#: the re-evaluation a CONDITIONAL GO schedules and the nightly run, ``docs/readiness.md``).
FULL_SET_TRIGGERS: frozenset[str] = frozenset(
    {"negative_rate", "system_prompt", "model_version", "manual", "conditional_go", "nightly"}
)
#: docs/rules.md#eval-cadence: "Weekly production monitoring: Yes, random sample of 10 cases".
WEEKLY_SAMPLE_SIZE = 10


class CaseLike(Protocol):
    """What cadence reads of a golden-set case (``EvalCase`` satisfies it)."""

    @property
    def id(self) -> str:
        """The case id (unique in its set)."""
        ...

    @property
    def context_chunks(self) -> Sequence[str]:
        """Ids of the knowledge-base chunks the case's answer draws on."""
        ...

    @property
    def tags(self) -> Sequence[str]:
        """Free tags (docs/rules.md#golden-set-format); a tag may name a document or section."""
        ...


@dataclass(frozen=True, slots=True)
class Selection:
    """The cases a trigger selected.

    Attributes:
        case_ids: selected case ids, in the golden set's order.
        rule: which cadence rule applied, in words (for the job's result and reports).
        full_set: every case of the version was selected.
        sample_seed: the seed of a weekly sample (``None`` for other triggers).
    """

    case_ids: tuple[str, ...]
    rule: str
    full_set: bool
    sample_seed: int | None = None


def document_keys(document: str) -> frozenset[str]:
    """The chunk-id prefix a changed ``document`` names: stripped of blanks and a trailing
    ``/`` (``" hr-policy/leave/ "`` -> ``{"hr-policy/leave"}``); an empty name names nothing."""
    doc = document.strip().rstrip("/")
    return frozenset({doc}) if doc else frozenset()


def touches(document: str, chunk_or_tag: str) -> bool:
    """Whether a changed ``document`` touches a chunk id or tag: equal (case-insensitively),
    or the chunk lies under it (``hr-policy/leave`` touches ``hr-policy/leave/marriage-leave``)."""
    item = chunk_or_tag.strip().lower()
    for key in document_keys(document):
        k = key.lower()
        if item == k or item.startswith(k + "/"):
            return True
    return False


def select_cases(
    cases: Sequence[CaseLike],
    trigger: str,
    *,
    changed_documents: Sequence[str] = (),
    sample_size: int | None = None,
    sample_seed: int | None = None,
) -> Selection:
    """Select the cases ``trigger`` runs (module docstring's table).

    Args:
        cases: the pinned golden-set version's cases, in set order (ids unique).
        trigger: one of :data:`Trigger`.
        changed_documents: ``knowledge_base``: the documents, sections or chunk ids that
            changed. None named: the full set runs (relevance cannot be judged).
        sample_size: ``weekly_sample``: cases to draw (default :data:`WEEKLY_SAMPLE_SIZE`;
            the whole set when it is smaller).
        sample_seed: ``weekly_sample``: the seed of the draw (required: every random choice
            takes an explicit seed); the same seed and set give the same sample.

    Returns:
        The :class:`Selection` (possibly empty for a knowledge-base update touching no case).

    Raises:
        ValueError: unknown ``trigger``; ``weekly_sample`` without ``sample_seed`` or with a
            ``sample_size`` below 1.
    """
    ids = tuple(c.id for c in cases)
    if trigger in FULL_SET_TRIGGERS:
        return Selection(ids, f"{trigger}: full set (docs/rules.md#eval-cadence)", full_set=True)
    if trigger == "knowledge_base":
        docs = [d for d in changed_documents if document_keys(d)]
        if not docs:
            return Selection(
                ids, "knowledge_base: no changed documents named, full set", full_set=True
            )
        picked = tuple(
            c.id for c in cases
            if any(touches(d, item) for d in docs for item in (*c.context_chunks, *c.tags))
        )
        return Selection(
            picked,
            f"knowledge_base: {len(picked)} of {len(ids)} cases touch "
            f"{', '.join(sorted(docs))}",
            full_set=len(picked) == len(ids),
        )
    if trigger == "weekly_sample":
        if sample_seed is None:
            raise ValueError("weekly_sample needs an explicit sample_seed; got None")
        size = WEEKLY_SAMPLE_SIZE if sample_size is None else sample_size
        if size < 1:
            raise ValueError(f"weekly_sample needs sample_size >= 1; got {size}")
        chosen = set(random.Random(sample_seed).sample(ids, min(size, len(ids))))
        picked = tuple(i for i in ids if i in chosen)
        return Selection(
            picked,
            f"weekly_sample: {len(picked)} of {len(ids)} cases, seed {sample_seed}",
            full_set=len(picked) == len(ids),
            sample_seed=sample_seed,
        )
    raise ValueError(
        f"unknown trigger {trigger!r}; expected one of "
        f"{sorted([*FULL_SET_TRIGGERS, 'knowledge_base', 'weekly_sample'])}"
    )
