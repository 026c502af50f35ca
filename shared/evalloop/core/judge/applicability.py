"""Whether an answer makes a factual claim the context dimensions could judge.

An answer that only hands the matter to a human or only says it found nothing asserts nothing
about the knowledge base, so groundedness, faithfulness and context utilization are *not
applicable* to it: they are unscored with ``no_claim``, never scored low
(``docs/judge.md#answers-with-no-factual-claim``).
"""

from __future__ import annotations

import re

from evalloop.core.evaluation.flags import _NO_ANSWER
from evalloop.core.evaluation.gates import analyse
from evalloop.core.readiness.hallucination import split_claims

__all__ = ["no_claim_reason"]

#: A sentence that only says how the human will follow up a hand-off ("A member of the HR team
#: will contact you ...") belongs to the hand-off, not to the policy.
_FOLLOW_UP = re.compile(
    r"\b(?:will|'ll|is going to|are going to) (?:contact|call|email|phone|reach out to|"
    r"get back to|get in touch with|be in touch with) you\b",
    re.I,
)


def _role(claim: str) -> str | None:
    """``hand-off``, ``knowledge gap`` or ``decline`` when the claim is only that act."""
    text = claim.replace("\u2019", "'")
    if _NO_ANSWER.search(text.lower()):
        return "knowledge gap"
    analysis = analyse(text)
    if analysis.escalation is not None or _FOLLOW_UP.search(text):
        return "hand-off"
    if analysis.refusal is not None and analysis.substantive == 0:
        return "decline"
    return None


def no_claim_reason(answer: str) -> str | None:
    """Why the context dimensions do not apply to ``answer``, or ``None`` when they do.

    The answer is split with the hallucination check's claim splitter; every claim must be a
    hand-off (the escalation gate's analysis finds a hand-off, or the sentence says how the
    human will follow up), a knowledge gap ("I couldn't find ...", the ``states_no_answer``
    pattern) or a decline. Any other claim -- one policy statement is enough -- keeps the
    answer scored. Rule: ``docs/judge.md#answers-with-no-factual-claim``.

    Args:
        answer: the agent's answer (any text; empty gives ``None`` -- ``empty_answer`` rules).

    Returns:
        ``"not applicable: the answer makes no factual claim (hand-off)"`` (or
        ``knowledge gap``, ``decline``, or several joined with ``" + "`` in first-seen order),
        or ``None``.
    """
    claims = split_claims(answer)
    if not claims:
        return None
    roles: list[str] = []
    for claim in claims:
        role = _role(claim)
        if role is None:
            return None
        if role not in roles:
            roles.append(role)
    return f"not applicable: the answer makes no factual claim ({' + '.join(roles)})"
