"""Escalation incidents -> golden-set candidates (``docs/rules.md#eval-cadence``: "After any
escalation incident: add case covering the incident scenario").

Every ``escalation`` event on ``feedback.recorded.v1`` (accepted by the recorder) proposes one
candidate to the review queue: the turn's question as the case input, the answer the agent
gave, and "hand the conversation to a human" as the expected behaviour (the incident shows the
scenario needs one). A reviewer confirms, edits or rejects it like any other candidate;
confirmed, it becomes a golden-set case
with ``should_escalate: true``.

* The candidate id is derived from the agent and the question's key (the review queue's
  natural key, ``UNIQUE (agent_id, question_key)``), so a redelivered event, a second
  escalation of the same turn, or a triage proposal of the same question never queue the
  scenario twice (``ON CONFLICT DO NOTHING``). The queue row's ``case_id`` is the turn's
  negative-case id (:func:`evalloop.core.fusion.case_id_for`); ``published_at`` is the outbox
  mark (set once ``golden.candidate.proposed.v1`` was acked; a redelivered batch re-publishes
  what is still unmarked).
* The queue has no column for a draft case: incident candidates are recognisable by
  ``cluster_id = 'escalation-incidents'`` and ``confidence_parts.source =
  'escalation_incident'``; confirmed, they are cases with ``should_escalate: true``.
* An escalation event without the question (a producer that sends only ids) is completed from
  the turn's stored ``agent_response`` event (table ``events``); without either, nothing can be
  proposed (logged).
* Confidence by who asked for the human (an evalloop choice, documented here): ``policy`` 0.9
  (a rule says this scenario must reach a person), ``agent`` 0.8 (the agent could not handle it:
  a capability gap), ``user`` 0.7 (the user asked; the case checks the hand-off is offered).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from evalloop.adapters.bus import Record
from evalloop.adapters.event_store import first_agent_responses
from evalloop.adapters.triage_store import IncidentRow, mark_incidents_published, queue_incidents
from evalloop.core.fusion import TurnKey, case_id_for
from evalloop.core.ranking import question_key
from evalloop.errors import InvalidEvent
from evalloop.events import (
    CandidateProposed,
    ContextChunk,
    Escalation,
    dump_event,
    parse_event,
    utc_now,
)
from evalloop.runtime import Deps

__all__ = [
    "CONFIDENCE",
    "INCIDENT_CLUSTER_ID",
    "IncidentCandidate",
    "candidate_id_for",
    "incident_candidate",
    "propose_from_records",
]

log = logging.getLogger("evalloop.evaluator.incidents")

#: The pseudo-cluster incident candidates are filed under in the review queue.
INCIDENT_CLUSTER_ID = "escalation-incidents"
INCIDENT_CLUSTER_LABEL = "escalation incident (docs/rules.md#eval-cadence: add a case covering it)"
#: Candidate confidence by ``Escalation.requested_by`` (module docstring).
CONFIDENCE = {"policy": 0.9, "agent": 0.8, "user": 0.7}
_NAMESPACE = uuid.UUID("0b6f6d8e-3f51-4c55-8a0b-6d2b8f0e7a41")


def candidate_id_for(agent_id: str, question: str) -> uuid.UUID:
    """The deterministic candidate id of an incident: UUIDv5 over the agent and the question's
    :func:`~evalloop.core.ranking.question_key` (the review queue's natural key)."""
    return uuid.uuid5(_NAMESPACE, f"{agent_id}\x1f{question_key(question)}")


@dataclass(frozen=True, slots=True)
class IncidentCandidate:
    """A proposed golden-set case for one escalation incident.

    Attributes:
        proposal: the ``golden.candidate.proposed.v1`` message.
        turn: (conversation_id, turn_id) of the incident.
        requested_by: who asked for the human (``user`` / ``agent`` / ``policy``).
        case: the case in the eval-case format (``docs/rules.md#eval-case-format``: ``id, input,
            expected_behavior, should_escalate, should_refuse, category, notes``) plus
            ``context_chunks`` and ``tags``: what the reviewer confirms into the golden set.
    """

    proposal: CandidateProposed
    turn: tuple[str, str] = ("", "")
    requested_by: str = ""
    case: dict[str, Any] = field(default_factory=dict)


def incident_candidate(
    event: Escalation,
    *,
    question: str,
    answer: str | None,
    chunks: list[ContextChunk] | None,
    now: datetime,
) -> IncidentCandidate:
    """The candidate covering ``event``'s scenario (pure).

    Args:
        event: the escalation.
        question: the user's message of the turn (from the event or its stored turn).
        answer: what the agent answered, if known.
        chunks: what the agent retrieved for the turn, if known.
        now: the proposal time (UTC).
    """
    cid = candidate_id_for(event.agent_id, question)
    why = f"requested by the {event.requested_by}" + (f": {event.reason}" if event.reason else "")
    proposal = CandidateProposed(
        candidate_id=cid, agent_id=event.agent_id, cluster_id=INCIDENT_CLUSTER_ID,
        cluster_label=INCIDENT_CLUSTER_LABEL, question=question, answer_given=answer,
        expected_answer=None, evidence_event_ids=[event.event_id],
        confidence=CONFIDENCE[event.requested_by], proposed_at=now,
    )
    case = {
        "id": f"incident-{str(cid)[:8]}",
        "input": question,
        "expected_behavior": (
            "Hands the conversation to a human (HR advisor / live agent) with clear hand-off "
            f"phrasing; the production incident was escalated ({why})."
        ),
        "should_escalate": True,
        "should_refuse": False,
        "category": "sensitive",
        "notes": (
            f"Escalation incident in conversation {event.conversation_id}, turn {event.turn_id} "
            f"({event.occurred_at.isoformat()}); evidence event {event.event_id}."
        ),
        "context_chunks": [c.id for c in chunks or []],
        "tags": ["escalation", "incident", f"requested-by-{event.requested_by}"],
    }
    return IncidentCandidate(proposal, (event.conversation_id, event.turn_id),
                             event.requested_by, case)


def _queue_row(i: IncidentCandidate) -> IncidentRow:
    p = i.proposal
    return IncidentRow(
        p.candidate_id, p.agent_id, question_key(p.question),
        case_id_for(TurnKey(p.agent_id, *i.turn)), p.cluster_id, p.cluster_label, p.question,
        p.answer_given, p.evidence_event_ids, p.confidence,
        {"source": "escalation_incident", "requested_by": i.requested_by}, p.proposed_at,
    )


async def propose_from_records(deps: Deps, records: list[Record]) -> list[IncidentCandidate]:
    """Queue and publish a candidate for every escalation event in ``records``.

    Undecodable records are skipped (the recorder dead-letters them); other event types are
    ignored. Publishing happens after the queue insert, for every candidate of the batch
    (at-least-once: a consumer keys on ``candidate_id``).

    Returns:
        The candidates proposed for this batch.

    Raises:
        StorageError: PostgreSQL failed.
        BusError: a proposal could not be published.
    """
    escalations: list[Escalation] = []
    for rec in records:
        if b"escalation" not in rec.value:
            continue  # cheap pre-filter: most of the stream is other event types
        try:
            event = parse_event(rec.value)
        except InvalidEvent:
            continue
        if isinstance(event, Escalation):
            escalations.append(event)
    if not escalations:
        return []
    missing = [(e.agent_id, e.conversation_id, e.turn_id) for e in escalations
               if not e.question or e.context_chunks is None]
    turns = await first_agent_responses(deps.pool, missing)
    now = utc_now()
    out: dict[uuid.UUID, IncidentCandidate] = {}
    for e in escalations:
        turn = turns.get((e.agent_id, e.conversation_id, e.turn_id), {})
        question = e.question or turn.get("question")
        if not question:
            log.warning("evaluator: escalation %s has no question and its turn is not stored; "
                        "no candidate proposed", e.event_id)
            continue
        chunks = e.context_chunks
        if chunks is None and turn.get("context_chunks"):
            chunks = [ContextChunk.model_validate(c) for c in turn["context_chunks"]]
        item = incident_candidate(e, question=question, answer=e.answer or turn.get("answer"),
                                  chunks=chunks, now=now)
        out.setdefault(item.proposal.candidate_id, item)
    items = list(out.values())
    if not items:
        return []
    todo = await queue_incidents(deps.pool, [_queue_row(i) for i in items])
    to_publish = [i.proposal for i in items if i.proposal.candidate_id in todo]
    if to_publish:
        await deps.bus.publish_batch(
            deps.topics.candidate_proposed, [(p.agent_id, dump_event(p)) for p in to_publish]
        )
        await mark_incidents_published(deps.pool, [p.candidate_id for p in to_publish])
    queued = {p.candidate_id for p in to_publish}
    return [i for i in items if i.proposal.candidate_id in queued]
