"""Golden-set care checks the gate reads as advisory (``docs/rules.md#eval-set-size-and-coverage``).

The gate treats an unmet care check as advisory: it cannot cause NO-GO, it stops a GO
(-> CONDITIONAL GO). Checked here from the cases a run ran:

* ``golden_set_size``: at least 50 golden cases (readiness guide);
* ``difficulty_mix``: easy / medium / hard within +-10 points of 40 / 35 / 25 % (cases with no
  difficulty are counted and make the check fail: the mix cannot be shown);
* ``adversarial_cases``: at least 3 ``adversarial`` cases (eval framework).

Pure: values in, values out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DIFFICULTY_MIX", "MIN_ADVERSARIAL", "MIN_CASES", "CareCase", "CareCheck",
           "care_checks"]

MIN_CASES = 50
MIN_ADVERSARIAL = 3
#: difficulty -> target share (``docs/rules.md#eval-set-size-and-coverage``), +-0.10 accepted.
DIFFICULTY_MIX = {"easy": 0.40, "medium": 0.35, "hard": 0.25}
_TOLERANCE = 0.10


@dataclass(frozen=True, slots=True)
class CareCase:
    """What the care checks read of a case: its ``difficulty`` (or ``None``) and ``category``."""

    difficulty: str | None
    category: str


@dataclass(frozen=True, slots=True)
class CareCheck:
    """One care check: ``name``, ``passed`` and ``detail`` (the counts behind it)."""

    name: str
    passed: bool
    detail: str


def care_checks(cases: Sequence[CareCase]) -> list[CareCheck]:
    """The care checks of a golden set's cases (see the module docstring)."""
    n = len(cases)
    out = [CareCheck("golden_set_size", n >= MIN_CASES, f"{n} cases (at least {MIN_CASES})")]
    counts = {d: sum(c.difficulty == d for c in cases) for d in DIFFICULTY_MIX}
    missing = sum(c.difficulty not in DIFFICULTY_MIX for c in cases)
    shares = {d: (counts[d] / n if n else 0.0) for d in DIFFICULTY_MIX}
    mix_ok = n > 0 and missing == 0 and all(
        abs(shares[d] - target) <= _TOLERANCE + 1e-9 for d, target in DIFFICULTY_MIX.items())
    detail = ", ".join(f"{d} {shares[d]:.0%} (target {t:.0%})" for d, t in DIFFICULTY_MIX.items())
    if missing:
        detail += f"; {missing} case(s) without a difficulty"
    out.append(CareCheck("difficulty_mix", mix_ok, detail))
    adversarial = sum(c.category == "adversarial" for c in cases)
    out.append(CareCheck("adversarial_cases", adversarial >= MIN_ADVERSARIAL,
                         f"{adversarial} adversarial case(s) (at least {MIN_ADVERSARIAL})"))
    return out
