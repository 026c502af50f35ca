"""The negative-rate trigger: a per-agent state machine with volume floor, hysteresis, cooldown.

``docs/rules.md#feedback-loop-trigger``: "The feedback loop triggers re-evaluation when the
negative feedback rate exceeds 2% over a 24-hour window." evalloop adds: a trigger needs a
minimum volume and fires once per crossing (hysteresis and a cooldown), so a burst of
duplicates or a quiet night with 1 of 3 bad cannot storm the evaluator.

States::

      ┌──────── rate < clear_below ────────┐
      ▼                                    │
    armed ── rate > threshold ──────────► fired
             and turns >= min_turns
             and negatives >= min_negatives
             and cooldown_s since the last firing

Time is *event time* (the window end, i.e. the newest event of the agent), like the window
itself: a replay of history behaves as the live stream did, and a restart changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

__all__ = ["Decision", "Phase", "TriggerConfig", "TriggerState", "step"]

Phase = Literal["armed", "fired"]


@dataclass(frozen=True, slots=True)
class TriggerConfig:
    """Trigger parameters (defaults: ``evalloop.settings.MonitorSettings``).

    Attributes:
        threshold: fire when the rate is strictly above this ratio (0.02:
            ``docs/rules.md#feedback-loop-trigger``).
        clear_below: re-arm once the rate is strictly below this ratio (hysteresis).
        min_turns: fire only with at least this many turns in the window.
        min_negatives: fire only with at least this many negative turns in the window.
        cooldown_s: at least this many seconds of event time between two firings.

    Raises:
        ValueError: (on construction) ``clear_below > threshold``, a ratio outside [0, 1], or
            a negative count or cooldown.
    """

    threshold: float = 0.02
    clear_below: float = 0.015
    min_turns: int = 200
    min_negatives: int = 5
    cooldown_s: float = 6 * 3600

    def __post_init__(self) -> None:
        if not 0.0 <= self.clear_below <= self.threshold <= 1.0:
            raise ValueError(
                "expected 0 <= clear_below <= threshold <= 1, got "
                f"clear_below={self.clear_below}, threshold={self.threshold}"
            )
        if self.min_turns < 0 or self.min_negatives < 0 or self.cooldown_s < 0:
            raise ValueError(
                "expected min_turns, min_negatives and cooldown_s >= 0, got "
                f"{self.min_turns}, {self.min_negatives}, {self.cooldown_s}"
            )


@dataclass(frozen=True, slots=True)
class TriggerState:
    """One agent's trigger state (persisted in ``monitor_state``).

    Attributes:
        phase: ``"armed"`` (may fire) or ``"fired"`` (waits for the rate to clear).
        fired_at: event time of the last firing (UTC), or ``None`` if it never fired.
    """

    phase: Phase = "armed"
    fired_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What :func:`step` decided.

    Attributes:
        state: the state after the observation.
        fire: request a re-evaluation now.
        rearmed: the rate cleared and the trigger re-armed on this observation.
        why: a short explanation (why it fired, or what held it back).
    """

    state: TriggerState
    fire: bool
    rearmed: bool
    why: str


def step(
    state: TriggerState, *, negatives: int, turns: int, at: datetime, config: TriggerConfig
) -> Decision:
    """Advance the trigger by one observation of the window.

    Args:
        state: the agent's state before the observation.
        negatives: negative turns in the window, ``0 <= negatives <= turns``.
        turns: turns in the window (the denominator).
        at: the window's event time (its newest event; UTC); drives the cooldown.
        config: thresholds.

    Returns:
        The new state and whether to fire. At most one firing per crossing: after firing, the
        trigger fires again only once the rate dropped below ``clear_below`` *and* the cooldown
        has passed.

    Raises:
        ValueError: ``negatives`` or ``turns`` out of range.
    """
    if turns < 0 or not 0 <= negatives <= turns:
        raise ValueError(f"expected 0 <= negatives <= turns, got {negatives}/{turns}")
    rate = negatives / turns if turns else 0.0
    if state.phase == "fired":
        if rate < config.clear_below:
            return Decision(
                replace(state, phase="armed"), fire=False, rearmed=True,
                why=f"rate {rate:.2%} < {config.clear_below:.2%}: re-armed",
            )
        return Decision(state, False, False, "already fired for this crossing")
    if rate <= config.threshold:
        return Decision(state, False, False, f"rate {rate:.2%} <= {config.threshold:.2%}")
    if turns < config.min_turns:
        return Decision(state, False, False, f"{turns} turns < min_turns {config.min_turns}")
    if negatives < config.min_negatives:
        return Decision(
            state, False, False, f"{negatives} negatives < min_negatives {config.min_negatives}"
        )
    if state.fired_at is not None:
        since = (at - state.fired_at).total_seconds()
        if since < config.cooldown_s:
            return Decision(
                state, False, False, f"cooldown: {since:.0f} s < {config.cooldown_s:.0f} s"
            )
    return Decision(
        TriggerState(phase="fired", fired_at=at), fire=True, rearmed=False,
        why=f"rate {rate:.2%} > {config.threshold:.2%} over {turns} turns",
    )
