"""Answers with no factual claim leave the context dimensions unscored
(docs/judge.md#answers-with-no-factual-claim)."""

from __future__ import annotations

import pytest

from evalloop.core.judge.applicability import no_claim_reason

HANDOFF = (
    "Of course. I'm escalating this to a human HR advisor now. A member of the HR team will "
    "contact you directly and in confidence, usually within one working day."
)
GAP = (
    "I couldn't find anything about that in the policy documents I have access to, so I "
    "can't give you a reliable answer. Could you rephrase the question, or say which policy "
    "it concerns?"
)


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (HANDOFF, "not applicable: the answer makes no factual claim (hand-off)"),
        (GAP, "not applicable: the answer makes no factual claim (knowledge gap)"),
        ("I cannot help with that request.",
         "not applicable: the answer makes no factual claim (decline)"),
        ("I couldn't find that in the handbook. I'm connecting you with a human HR advisor now.",
         "not applicable: the answer makes no factual claim (knowledge gap + hand-off)"),
        # one policy statement is enough to keep the answer scored
        ("Staff get 18 days of leave. I am escalating this to HR now.", None),
        ("You get 18 working days of annual leave per year.", None),
        ("", None),
        ("Ok.", None),
    ],
)
def test_no_claim_reason(answer: str, expected: str | None) -> None:
    assert no_claim_reason(answer) == expected
