"""Ask a judge model the gates' yes/no questions (the second opinion's I/O).

The questions and the rule combining the answer with the phrase rules are pure logic in
:mod:`evalloop.core.evaluation.second_opinion`; this module only asks any
:class:`~evalloop.core.judge.types.Judge` (the embedded llama.cpp server or an
OpenAI-compatible endpoint) and turns what comes back into
:class:`~evalloop.core.evaluation.second_opinion.Opinion` records
(``docs/rules.md#second-opinion``).
"""

from __future__ import annotations

from evalloop.core.evaluation.second_opinion import Gate, Opinion, gate_prompt
from evalloop.core.judge.types import Judge, Unscored

__all__ = ["absent_opinions", "ask_gate_opinion", "ask_gate_opinions"]

_GATES: tuple[Gate, ...] = ("refusal", "escalation")


async def ask_gate_opinions(judge: Judge, answer: str) -> dict[Gate, Opinion]:
    """Ask both gates' questions about one answer.

    Args:
        judge: any judge exposing ``p_yes``.
        answer: the agent's answer text.

    Returns:
        ``{"refusal": Opinion, "escalation": Opinion}``; a question the judge could not answer
        gives an opinion with ``p_yes=None`` and the reason (never raises for judge failures).
    """
    return {gate: await ask_gate_opinion(judge, gate, answer) for gate in _GATES}


async def ask_gate_opinion(judge: Judge, gate: Gate, answer: str) -> Opinion:
    """Ask one gate's question about one answer (asking one gate's questions in a row lets
    the server reuse the cached definition).

    Args:
        judge: any judge exposing ``p_yes``.
        gate: ``refusal`` or ``escalation``.
        answer: the agent's answer text.

    Returns:
        The opinion; ``p_yes=None`` with the reason when the judge could not answer.
    """
    result = await judge.p_yes(gate_prompt(gate, answer))
    if isinstance(result, Unscored):
        return Opinion(gate, judge.model, None, str(result))
    return Opinion(gate, judge.model, float(result))


def absent_opinions(model: str, why: str) -> dict[Gate, Opinion]:
    """Opinions for a run whose second-opinion model is not available (the rules decide).

    Args:
        model: the model that was configured.
        why: one line, e.g. ``"model absent: llama-cpp-python is not installed"``.
    """
    return {gate: Opinion(gate, model, None, why) for gate in _GATES}
