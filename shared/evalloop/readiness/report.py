"""The verdict as JSON (every number, machine-readable) and as text (what a person reads).

JSON numbers are finite: a figure that does not exist (a t statistic of a constant shift, an
interval of one case) is ``null`` with the reason beside it, never NaN or Infinity.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any
from uuid import UUID

from evalloop.core.readiness.gate import GateDecision
from evalloop.core.readiness.hallucination import CATEGORIES
from evalloop.core.readiness.paired import PairedTest
from evalloop.core.readiness.regression import RegressionReport
from evalloop.core.readiness.scores import DIMENSIONS, MINIMUMS
from evalloop.events import ReevalRequested

__all__ = ["ci_text", "decision_report", "detectable_text", "hallucination_counts", "paired_json",
           "render_summary", "render_text"]


def _num(x: float | None, digits: int = 6) -> float | None:
    if x is None or not math.isfinite(x):
        return None
    return round(x, digits)


def paired_json(t: PairedTest) -> dict[str, Any]:
    """A paired test as JSON (non-finite figures ``null``, see ``note``)."""
    return {
        "n": t.n, "mean_baseline": _num(t.mean_baseline), "mean_current": _num(t.mean_current),
        "mean_diff": _num(t.mean_diff), "ci95": [_num(t.ci_low), _num(t.ci_high)],
        "t": _num(t.t), "p": _num(t.p, 8), "cohens_dz": _num(t.d_z),
        "detectable_dz_80": _num(t.detectable_d_z),
        "detectable_drop_80": _num(t.detectable_drop),
        "detectable_drop_80_note": t.detectable_note, "ci95_clipped": t.ci_clipped,
        "significant": t.significant,
        "note": t.note or (f"t = {t.t}" if t.t is not None and not math.isfinite(t.t) else ""),
    }


def detectable_text(c: Mapping[str, Any]) -> str:
    """The smallest drop detectable at 80 % power of a :func:`paired_json` object, for a person:
    the figure, or why there is none ("no drop of any size is detectable with 2 cases";
    ``docs/readiness.md#regression-statistics``)."""
    if c.get("detectable_drop_80") is not None:
        return f"{c['detectable_drop_80']:.3f}"
    return str(c.get("detectable_drop_80_note") or "-")


def ci_text(c: Mapping[str, Any]) -> str:
    """The 95 % interval of a :func:`paired_json` object (``-0.120..+1.000 (clipped)``)."""
    lo, hi = c["ci95"]
    if lo is None or hi is None:
        return "-"
    return f"{lo:+.3f}..{hi:+.3f}" + (" (clipped)" if c.get("ci95_clipped") else "")


def hallucination_counts(claims: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Claim counts of stored claim rows: ``claims``, ``supported``, ``unscored`` and one key
    per category."""
    rows = list(claims)
    out = {"claims": len(rows), "supported": sum(r.get("supported") is True for r in rows),
           "unscored": sum(r.get("supported") is None for r in rows)}
    for c in CATEGORIES:
        out[c] = sum(r.get("category") == c for r in rows)
    return out


def regression_json(reg: RegressionReport | None, how: str) -> dict[str, Any]:
    """The regression report as JSON."""
    if reg is None:
        return {"baseline_run_id": None, "baseline": how}
    return {
        "baseline_run_id": reg.baseline_run_id, "baseline": how,
        "shared_cases": len(reg.shared_cases), "only_baseline": list(reg.only_baseline),
        "only_current": list(reg.only_current),
        "dimensions": {d: {**paired_json(c.test), "drop": _num(c.drop), "warning": c.warning,
                           "significant_regression": c.significant_regression}
                       for d, c in reg.dimensions.items()},
        "case_regressions": [{"case_id": r.case_id, "baseline": _num(r.baseline),
                              "current": _num(r.current), "drop": _num(r.drop),
                              "dimensions": {k: _num(v) for k, v in r.dimensions.items()}}
                             for r in reg.case_regressions],
    }


def decision_report(*, decision_id: UUID, run_id: UUID, agent_id: str | None,
                    decided_at: datetime, gate: GateDecision, regression: RegressionReport | None,
                    baseline_how: str, hallucinations: Mapping[str, int],
                    reeval: ReevalRequested | None, judged: Mapping[str, Any], cases_total: int,
                    scored: int) -> dict[str, Any]:
    """Every number of a decision as one JSON object."""
    return {
        "decision_id": str(decision_id), "run_id": str(run_id), "agent_id": agent_id,
        "decided_at": decided_at.isoformat(), "decision": gate.decision, "why": list(gate.why),
        "go_blocked_by_judge": gate.go_blocked_by_judge,
        "cases": cases_total, "scored_cases": scored, "judged": dict(judged),
        "scores": {
            d: {"n": s.n, "mean": _num(s.mean), "ci95": [_num(s.ci_low), _num(s.ci_high)],
                "minimum": MINIMUMS.get(d), "unscored": dict(s.unscored)}
            for d, s in gate.stats.items()},
        "minimums": {d: {"passed": m.passed, "below": {k: _num(v) for k, v in m.below.items()},
                         "why": m.why} for d, m in gate.minimums.items()},
        "regression": regression_json(regression, baseline_how),
        "hallucinations": dict(hallucinations),
        "checks": [{"name": c.name, "kind": c.kind, "status": c.status, "why": c.why,
                    "dimension": c.dimension, "cases": list(c.cases)} for c in gate.checks],
        "remediation": [{"check": r.check, "dimension": r.dimension, "cases": list(r.cases),
                         "cause": r.cause, "explanation": r.explanation, "fix": r.fix}
                        for r in gate.remediation],
        "monitoring_flags": list(gate.monitoring_flags),
        "not_computed": ({} if scored else {
            "scores": "the judge scored no answer of this run",
            "hallucinations": "no answer was judged, so no claim was checked"}),
        "reeval": None if reeval is None else {
            "job_id": str(reeval.job_id), "due_at": reeval.requested_at.isoformat()},
    }


def _f(x: Any, spec: str = ".3f") -> str:
    return "-" if x is None else format(x, spec)


def render_text(report: Mapping[str, Any]) -> str:
    """The decision for a person: decision and why, scores, regression, hallucinations,
    checks, remediation."""
    lines = [f"{report['decision']}  run {report['run_id']}  agent {report['agent_id'] or '-'}"
             f"  ({report['decided_at'][:19]}Z)"]
    lines += [f"  why: {w}" for w in report["why"]]
    go_note = report.get("go_blocked_by_judge")
    if go_note and go_note not in report["why"]:
        lines.append(f"  note: {go_note}")
    judged = report.get("judged") or {}
    if judged.get("sampled"):
        lines.append(f"  note: the judge scored a sample of {judged.get('judged')} of "
                     f"{judged.get('answered')} answered cases")
    not_computed = report.get("not_computed") or {}
    if "scores" in not_computed:
        lines.append(f"scores: not computed ({not_computed['scores']}; {report['cases']} "
                     "cases in the run)")
    else:
        lines.append(f"scores ({report['scored_cases']} of {report['cases']} cases scored):")
        lines.append(f"  {'dimension':<20} {'mean':>6} {'95% CI':>13} {'min':>5}  unscored")
    for d in (*DIMENSIONS, "composite") if "scores" not in not_computed else ():
        s = report["scores"][d]
        lo, hi = s["ci95"]
        ci = "-" if lo is None else f"{lo:.3f}-{hi:.3f}"
        lines.append(f"  {d:<20} {_f(s['mean']):>6} {ci:>13} {_f(s['minimum'], '.2f'):>5}  "
                     f"{len(s['unscored'])}")
    reg = report["regression"]
    if reg.get("baseline_run_id") is None:
        lines.append(f"regression: none ({reg['baseline']})")
    else:
        lines.append(f"regression vs {reg['baseline_run_id']} ({reg['baseline']}), on "
                     f"{reg['shared_cases']} shared cases:")
        lines.append(f"  {'dimension':<20} {'base':>6} {'now':>6} {'diff':>7} {'95% CI':>27} "
                     f"{'p':>7} {'d_z':>6} {'min drop@80%':>12}")
        for d in (*DIMENSIONS, "composite"):  # jsonb does not keep key order
            c = reg["dimensions"][d]
            if c["n"] == 0:
                continue
            mark = (" SIGNIFICANT DROP" if c["significant_regression"]
                    else " warning" if c["warning"] else "")
            lines.append(f"  {d:<20} {_f(c['mean_baseline']):>6} {_f(c['mean_current']):>6} "
                         f"{_f(c['mean_diff'], '+.3f'):>7} {ci_text(c):>27} "
                         f"{_f(c['p'], '.4f'):>7} {_f(c['cohens_dz'], '.2f'):>6} "
                         f"{detectable_text(c):>12}{mark}")
        for r in reg["case_regressions"]:
            lines.append(f"  case {r['case_id']}: composite {r['baseline']:.3f} -> "
                         f"{r['current']:.3f} (drop {r['drop']:.3f})")
    h = report["hallucinations"]
    if "hallucinations" in not_computed:
        lines.append(f"hallucinations: not checked ({not_computed['hallucinations']})")
    else:
        lines.append(f"hallucinations: {h.get('claims', 0)} claims, {h.get('supported', 0)} "
                     f"supported, {h.get('unscored', 0)} unscored; "
                     + ", ".join(f"{c} {h.get(c, 0)}" for c in CATEGORIES))
    lines.append("checks:")
    for c in report["checks"]:
        lines.append(f"  [{c['status']:>8}] {c['kind']:<8} {c['name']}: {c['why']}")
    if report["remediation"]:
        lines.append("remediation:")
        for r in report["remediation"]:
            cases = ", ".join(r["cases"][:8]) + (" ..." if len(r["cases"]) > 8 else "")
            lines.append(f"  - {r['check']}" + (f" [{r['dimension']}]" if r["dimension"] else "")
                         + (f" cases {cases}" if cases else ""))
            lines.append(f"    likely cause: {r['cause']} - {r['explanation']}")
            lines.append(f"    fix: {r['fix']}")
    if report.get("monitoring_flags"):
        lines.append("monitoring flags: " + ", ".join(report["monitoring_flags"]))
    if report.get("reeval"):
        lines.append(f"re-evaluation scheduled: job {report['reeval']['job_id']} due "
                     f"{report['reeval']['due_at'][:19]}Z")
    return "\n".join(lines)


def render_summary(report: Mapping[str, Any]) -> list[str]:
    """The verdict in a few lines (the demo's): decision and why, scores and composite,
    regression against the baseline, hallucination counts and the fixes.

    Every reason is shown (``why``), then the "GO needs a calibrated judge" note when the
    decision's reasons do not already carry it (``docs/readiness.md#go-needs-a-calibrated-judge``).
    The fixes come in the order of the reasons: first one per failed **required** check (each a
    ``why`` line above), then up to two for advisory checks, and a count of the rest (all of
    them are in the decision's remediation report).
    """
    lines = [f"readiness verdict: {report['decision']}"]
    lines += [f"  why: {w}" for w in report["why"]]
    go_note = report.get("go_blocked_by_judge")
    if go_note and go_note not in report["why"]:
        lines.append(f"  note: {go_note}")
    judged = report.get("judged") or {}
    if judged.get("error"):
        lines.append(f"  judge: {judged['error']}")
    elif judged:
        lines.append(
            f"  judge {judged.get('judge')}: {judged.get('judged')} of {judged.get('answered')} "
            f"answered cases scored{' (a sample)' if judged.get('sampled') else ''}, "
            f"{judged.get('calls')} questions, {judged.get('cache_hits')} from cache, "
            f"{judged.get('seconds')} s"
            + (f"; {judged['skipped_for_budget']} sampled case(s) left for the time budget"
               if judged.get("skipped_for_budget") else ""))
    scores = report["scores"]
    not_computed = report.get("not_computed") or {}
    if "scores" in not_computed:
        lines.append(f"  scores: not computed ({not_computed['scores']})")
    else:
        lines.append("  scores: " + ", ".join(
            f"{d} {_f(scores[d]['mean'], '.2f')}" for d in DIMENSIONS))
        comp = scores["composite"]
        lo, hi = comp["ci95"]
        lines.append(f"  composite {_f(comp['mean'])}" + ("" if lo is None else
                                                          f" (95% CI {lo:.3f}-{hi:.3f})")
                     + f" over {comp['n']} cases")
    reg = report["regression"]
    if reg.get("baseline_run_id") is None:
        lines.append(f"  regression: none ({reg['baseline']})")
    else:
        c = reg["dimensions"]["composite"]
        p = "-" if c["p"] is None else f"{c['p']:.4f}"
        warned = [d for d in (*DIMENSIONS, "composite") if reg["dimensions"][d]["warning"]]
        lines.append(
            f"  regression vs {reg['baseline']} run {reg['baseline_run_id'][:8]} on "
            f"{reg['shared_cases']} shared cases: composite {_f(c['mean_baseline'])} -> "
            f"{_f(c['mean_current'])} (diff {_f(c['mean_diff'], '+.3f')}, p = {p}; "
            + (f"smallest drop detectable at 80% power {c['detectable_drop_80']:.3f}"
               if c.get("detectable_drop_80") is not None else detectable_text(c))
            + "); "
            f"{len(reg['case_regressions'])} case regression(s)"
            + (f"; warnings: {', '.join(warned)}" if warned else ""))
    h = report["hallucinations"]
    if "hallucinations" in not_computed:
        lines.append(f"  hallucinations: not checked ({not_computed['hallucinations']})")
    else:
        lines.append(f"  hallucinations: {h.get('claims', 0)} claims checked, "
                     f"{h.get('supported', 0)} supported; "
                     + ", ".join(f"{c} {h.get(c, 0)}" for c in CATEGORIES))
    required = [c["name"] for c in report.get("checks") or ()
                if c["kind"] in ("required", "manual") and c["status"] in ("fail", "unscored")]
    rem = list(report["remediation"])
    first = sorted((r for r in rem if r["check"] in required),
                   key=lambda r: required.index(r["check"]))
    rest = [r for r in rem if r["check"] not in required]
    for r in (*first, *rest[:2]):
        lines.append(f"  fix {r['check']}: {r['cause']} - {r['fix']}")
    if len(rest) > 2:
        lines.append(f"  ... and {len(rest) - 2} more fix(es) for advisory checks (every "
                     "one is in the decision's remediation report: the web app's Gate tab, "
                     "or the stored decision's JSON)")
    return lines
