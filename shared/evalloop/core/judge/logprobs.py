"""Reading P(yes) from a reply's top log-probabilities (``docs/judge.md#how-a-score-is-read``).

Small judges give every answer the same number when asked for a 0-10 score, but the probability
they put on "Yes" versus "No" as the first token of the reply separates good answers from bad
ones. This module turns the first generated token's ``top_logprobs`` into that probability:

    P(yes) = Σ exp(lp) over yes-like tokens / (Σ over yes-like + Σ over no-like)

A token is yes-like when, stripped of spaces and punctuation and lower-cased, it reads ``yes``
(``" Yes"``, ``"YES"``, ``"yes."``); no-like when it reads ``no``. Other tokens are ignored: the
answer is normalised between the two, so probability mass on "The" or "**" does not bias it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from evalloop.core.judge.types import Unscored

__all__ = ["NO_WORDS", "YES_WORDS", "normalise_token", "p_yes_from_top_logprobs"]

YES_WORDS = frozenset({"yes"})
NO_WORDS = frozenset({"no"})
_STRIP = " \t\n\r.,:;!?\"'*`_()[]{}<>▁Ġ"


def normalise_token(token: str) -> str:
    """Return ``token`` lower-cased with surrounding spaces, punctuation and BPE markers removed."""
    return token.strip(_STRIP).lower()


def p_yes_from_top_logprobs(top: Iterable[tuple[str, float]] | None) -> float | Unscored:
    """Compute P(yes) from the first generated token's alternatives.

    Args:
        top: ``(token, logprob)`` pairs (natural log) of the first generated token, as the
            OpenAI ``top_logprobs`` field lists them; ``None`` when the reply had none.

    Returns:
        P(yes) in [0, 1]; or ``Unscored("no_logprobs")`` when ``top`` is ``None`` or empty;
        ``Unscored("unparseable")`` when no yes-like or no-like token carries finite
        probability.

    Examples:
        >>> p_yes_from_top_logprobs([("Yes", math.log(0.6)), ("No", math.log(0.2))])
        0.75
    """
    if top is None:
        return Unscored("no_logprobs", "the reply carried no log-probabilities")
    pairs = list(top)
    if not pairs:
        return Unscored("no_logprobs", "the reply's top_logprobs list was empty")
    yes = no = 0.0
    for token, logprob in pairs:
        if not isinstance(logprob, (int, float)) or math.isnan(logprob) or logprob > 0.0:
            continue  # a log-probability is <= 0; anything else is noise, not evidence
        word = normalise_token(token)
        if word in YES_WORDS:
            yes += math.exp(logprob)
        elif word in NO_WORDS:
            no += math.exp(logprob)
    total = yes + no
    if total <= 0.0:
        seen = ", ".join(repr(t) for t, _ in pairs[:5])
        return Unscored("unparseable", f"no Yes/No among the top tokens ({seen})")
    return yes / total
