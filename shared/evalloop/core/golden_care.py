"""Golden-set care checks, computed for every golden-set version.

The bars come from ``docs/rules.md#eval-set-size-and-coverage``; how each is read from a set's
cases is ``docs/review.md#care-checks``:

=====================  ==========================================  ===========================
check                  value                                       bar
=====================  ==========================================  ===========================
``size``               number of cases                             >= 50 (>= 25 before
                                                                   production)
``difficulty_mix``     share of easy / medium / hard cases         40 / 35 / 25 % +-10 points
``domain_coverage``    cases per knowledge domain                  >= 5 in every domain
``adversarial``        adversarial cases                           >= 3
``escalation_triggers`` cases per escalation trigger               >= 2 for every trigger
``universal``          universal cases                             >= 10
``coverage_gaps``      clusters of >= 3 recent negatives with no   none
                       golden case
=====================  ==========================================  ===========================

A check that cannot be computed (no declared domains or triggers) is ``unknown`` with its
reason, never a pass or a zero. Pure: values in, values out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from evalloop.core.evaluation.cases import EvalCase

__all__ = [
    "DIFFICULTY_MIX",
    "DIFFICULTY_TOLERANCE",
    "MIN_GAP_SIZE",
    "SOURCE",
    "UNIVERSAL_TAGS",
    "CareCheck",
    "ClusterGap",
    "care_checks",
    "case_domains",
    "case_triggers",
    "is_adversarial",
    "is_universal",
]

#: Where every bar comes from.
SOURCE = "docs/rules.md#eval-set-size-and-coverage"
#: Target difficulty shares (ratios 0-1).
DIFFICULTY_MIX: dict[str, float] = {"easy": 0.40, "medium": 0.35, "hard": 0.25}
#: Accepted distance from each target share (ratio: 0.10 = 10 points).
DIFFICULTY_TOLERANCE = 0.10
#: A cluster of fewer negatives than this is noise, not a topic: it is not a coverage gap
#: (the triage default ``min_cluster_size``); such clusters are counted in the check's details.
MIN_GAP_SIZE = 3
#: Tags that make a case universal ("I want to speak to a human", adversarial prompts,
#: out-of-scope questions); an adversarial case is universal too.
UNIVERSAL_TAGS: frozenset[str] = frozenset(
    {"universal", "speak-to-human", "human-request", "out-of-scope"})

Status = Literal["pass", "fail", "unknown"]


@dataclass(frozen=True, slots=True)
class ClusterGap:
    """A cluster of recent negatives no golden case covers: id, label, size (cases)."""

    cluster_id: str
    label: str | None
    size: int


@dataclass(frozen=True, slots=True)
class CareCheck:
    """One care check of one version.

    Attributes:
        name: the check (module table).
        status: ``pass`` / ``fail`` / ``unknown`` (could not be computed; see ``why``).
        value: what was measured (a number, or a mapping for per-domain / per-trigger checks).
        bar: the bar, in words and numbers (e.g. ``">= 50"``).
        why: one sentence: what passed or failed, or why it is unknown.
        source: the rule's document section.
        details: extra per-item values (failing domains, gaps) for display.
    """

    name: str
    status: Status
    value: object
    bar: str
    why: str
    source: str = SOURCE
    details: dict[str, object] = field(default_factory=dict)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready dict of every attribute."""
        return {"name": self.name, "status": self.status, "value": self.value, "bar": self.bar,
                "why": self.why, "source": self.source, "details": self.details}


def _tagged(case: EvalCase, prefix: str) -> list[str]:
    return sorted({t[len(prefix):].strip().lower() for t in case.tags
                   if t.lower().startswith(prefix) and t[len(prefix):].strip()})


def case_domains(case: EvalCase) -> list[str]:
    """Knowledge domains of a case: its ``domain:<name>`` tags (lower-cased)."""
    return _tagged(case, "domain:")


def case_triggers(case: EvalCase) -> list[str]:
    """Escalation triggers a case covers: its ``trigger:<name>`` tags (lower-cased)."""
    return _tagged(case, "trigger:")


def is_adversarial(case: EvalCase) -> bool:
    """Category ``adversarial`` or an ``adversarial`` tag."""
    return case.category == "adversarial" or "adversarial" in {t.lower() for t in case.tags}


def is_universal(case: EvalCase) -> bool:
    """A universal case: adversarial, or tagged with one of :data:`UNIVERSAL_TAGS`."""
    return is_adversarial(case) or bool(UNIVERSAL_TAGS & {t.lower() for t in case.tags})


def _count_check(name: str, n: int, bar: int, what: str) -> CareCheck:
    ok = n >= bar
    return CareCheck(name, "pass" if ok else "fail", n, f">= {bar}",
                     f"{n} {what}" + ("" if ok else f", {bar - n} short of {bar}"))


def _per_item(name: str, counts: Counter[str], declared: Sequence[str] | None, bar: int,
              what: str, tag: str) -> CareCheck:
    if not declared:
        return CareCheck(name, "unknown", dict(sorted(counts.items())), f">= {bar} each",
                         f"the agent's {what}s are not declared (agent review profile); "
                         f"cases tagged '{tag}<name>' are counted in value")
    names = sorted({d.strip().lower() for d in declared if d.strip()})
    value = {d: counts.get(d, 0) for d in names}
    short = {d: n for d, n in value.items() if n < bar}
    why = (f"every {what} has >= {bar} cases" if not short else
           f"{len(short)} of {len(names)} {what}s below {bar}: "
           + ", ".join(f"{d} ({n})" for d, n in short.items()))
    return CareCheck(name, "fail" if short else "pass", value, f">= {bar} each", why,
                     details={"short": short})


def care_checks(cases: Sequence[EvalCase], *, in_production: bool | None,
                domains: Sequence[str] | None = None, triggers: Sequence[str] | None = None,
                gaps: Sequence[ClusterGap] | None = None) -> list[CareCheck]:
    """Every care check of one version's cases (module table).

    Args:
        cases: the version's cases.
        in_production: the agent serves production (size bar 50), ``False`` before production
            (bar 25), ``None`` unknown (the stricter 50 applies, and ``why`` says so).
        domains: the agent's knowledge domains (``None``/empty: domain coverage is unknown).
        triggers: the escalation triggers of its system prompt (``None``/empty: unknown).
        gaps: clusters of recent negatives with no golden case (``None``: unknown, no
            clustering yet); those smaller than :data:`MIN_GAP_SIZE` are not gaps.

    Returns:
        The seven checks, in the module table's order.
    """
    n = len(cases)
    checks: list[CareCheck] = []
    bar = 25 if in_production is False else 50
    stage = {True: "in production", False: "before production",
             None: "production stage unknown, the production bar applies"}[in_production]
    size = _count_check("size", n, bar, f"cases ({stage})")
    checks.append(size)

    diff = Counter((c.difficulty or "unset") for c in cases)
    shares = {k: round(diff.get(k, 0) / n, 4) if n else 0.0 for k in DIFFICULTY_MIX}
    off = {k: round(shares[k] - t, 4) for k, t in DIFFICULTY_MIX.items()
           if abs(shares[k] - t) > DIFFICULTY_TOLERANCE + 1e-9}
    bar_mix = "easy 40 % / medium 35 % / hard 25 %, +-10 points each"
    if not n:
        checks.append(CareCheck("difficulty_mix", "fail", shares, bar_mix, "the set is empty"))
    else:
        why = ("every level within 10 points of its target" if not off else
               "; ".join(f"{k} {shares[k] * 100:.0f} % (target {DIFFICULTY_MIX[k] * 100:.0f} %)"
                         for k in off))
        if diff.get("unset"):
            why += f"; {diff['unset']} case(s) have no difficulty"
        checks.append(CareCheck("difficulty_mix", "fail" if off else "pass", shares, bar_mix,
                                why, details={"unset": diff.get("unset", 0)}))

    dom = Counter(d for c in cases for d in case_domains(c))
    checks.append(_per_item("domain_coverage", dom, domains, 5, "knowledge domain", "domain:"))
    checks.append(_count_check("adversarial", sum(is_adversarial(c) for c in cases), 3,
                               "adversarial cases"))
    trig = Counter(t for c in cases for t in case_triggers(c))
    checks.append(_per_item("escalation_triggers", trig, triggers, 2, "escalation trigger",
                            "trigger:"))
    checks.append(_count_check("universal", sum(is_universal(c) for c in cases), 10,
                               "universal cases (human request, adversarial, out-of-scope)"))
    if gaps is None:
        checks.append(CareCheck("coverage_gaps", "unknown", None, "no uncovered cluster",
                                "the agent's negatives have not been clustered yet"))
    else:
        real = sorted((g for g in gaps if g.size >= MIN_GAP_SIZE),
                      key=lambda g: (-g.size, g.cluster_id))
        listed = [{"cluster_id": g.cluster_id, "label": g.label, "size": g.size} for g in real]
        checks.append(CareCheck(
            "coverage_gaps", "fail" if real else "pass", len(real),
            f"no uncovered cluster of >= {MIN_GAP_SIZE} negatives",
            "every cluster of recent negatives has a golden case" if not real else
            f"{len(real)} cluster(s) of recent negatives have no golden case; largest: "
            + ", ".join(f"{g.label or g.cluster_id} ({g.size})" for g in real[:3]),
            details={"gaps": listed, "small_clusters": len(gaps) - len(real)}))
    return checks
