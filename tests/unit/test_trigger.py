"""The trigger state machine: volume floor, hysteresis, cooldown (exact decisions)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evalloop.core.trigger import TriggerConfig, TriggerState, step

T0 = datetime(2026, 3, 2, 10, 0, tzinfo=UTC)
CFG = TriggerConfig(threshold=0.02, clear_below=0.015, min_turns=200, min_negatives=5,
                    cooldown_s=6 * 3600)
ARMED = TriggerState()


def h(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def test_quiet_night_one_of_three_bad_does_not_fire() -> None:
    d = step(ARMED, negatives=1, turns=3, at=T0, config=CFG)
    assert not d.fire and d.state == ARMED
    assert d.why == "3 turns < min_turns 200"


def test_high_rate_with_too_few_negatives_does_not_fire() -> None:
    cfg = TriggerConfig(min_turns=100, min_negatives=5)
    d = step(ARMED, negatives=4, turns=150, at=T0, config=cfg)  # 2.7%
    assert not d.fire and d.why == "4 negatives < min_negatives 5"


def test_exactly_the_threshold_does_not_fire_just_above_does() -> None:
    assert not step(ARMED, negatives=5, turns=250, at=T0, config=CFG).fire  # 2.0%
    d = step(ARMED, negatives=6, turns=250, at=T0, config=CFG)  # 2.4%
    assert d.fire
    assert d.state == TriggerState(phase="fired", fired_at=T0)
    assert d.why == "rate 2.40% > 2.00% over 250 turns"


def test_fires_once_per_crossing_however_many_observations_follow() -> None:
    state, fired = ARMED, []
    # a burst: the same high window observed 1000 times (e.g. duplicate events), hours apart
    for i in range(1000):
        d = step(state, negatives=31, turns=1000, at=h(i), config=CFG)
        state = d.state
        fired.append(d.fire)
    assert fired.count(True) == 1 and fired[0]


def test_hysteresis_rate_between_clear_below_and_threshold_does_not_rearm() -> None:
    s = step(ARMED, negatives=31, turns=1000, at=T0, config=CFG).state
    d = step(s, negatives=17, turns=1000, at=h(7), config=CFG)  # 1.7%: not clear
    assert not d.rearmed and d.state.phase == "fired"
    d = step(d.state, negatives=31, turns=1000, at=h(8), config=CFG)
    assert not d.fire  # still the same crossing


def test_rearm_then_fire_again_after_cooldown() -> None:
    s = step(ARMED, negatives=31, turns=1000, at=T0, config=CFG).state
    d = step(s, negatives=14, turns=1000, at=h(2), config=CFG)  # 1.4% < 1.5%
    assert d.rearmed and d.state == TriggerState("armed", fired_at=T0)
    # a new crossing within the cooldown waits...
    d2 = step(d.state, negatives=31, turns=1000, at=h(5), config=CFG)
    assert not d2.fire and d2.why == "cooldown: 18000 s < 21600 s"
    # ...and fires once the cooldown (6 h of event time) has passed
    d3 = step(d2.state, negatives=31, turns=1000, at=h(6), config=CFG)
    assert d3.fire and d3.state.fired_at == h(6)


def test_empty_window_rearms() -> None:
    s = TriggerState("fired", fired_at=T0)
    d = step(s, negatives=0, turns=0, at=h(30), config=CFG)
    assert d.rearmed and d.state.phase == "armed"


def test_rejects_inconsistent_counts_and_config() -> None:
    with pytest.raises(ValueError, match="negatives <= turns"):
        step(ARMED, negatives=3, turns=2, at=T0, config=CFG)
    with pytest.raises(ValueError, match="clear_below"):
        TriggerConfig(threshold=0.02, clear_below=0.03)
    with pytest.raises(ValueError, match="min_turns"):
        TriggerConfig(min_turns=-1)
