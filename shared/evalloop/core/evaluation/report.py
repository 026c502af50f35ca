"""The human-readable run summary, ``evals-summary-<timestamp>.txt``
(``docs/rules.md#eval-run-outputs``).

Sections: the verdict, why it failed, and counts; a per-category table; gate failures (with the
evidence and the abridged response); agent errors; unscored cases; and every case marked for
human review with its reasons and flag details -- what a reviewer needs without opening the
JSON.
"""

from __future__ import annotations

from evalloop.core.evaluation.results import CaseResult, CaseStatus, EvalRun, utc_iso

__all__ = ["render_summary"]


def _abridge(text: str | None, limit: int = 160) -> str:
    if text is None:
        return "(none)"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _gate_lines(result: CaseResult) -> list[str]:
    lines = []
    for gate in result.gates.values():
        if gate.passed:
            continue
        act = "a refusal" if gate.gate == "refusal" else "a hand-off to a human"
        lines.append(f"  {result.case_id} [{result.category}] {gate.gate} gate: {gate.reason} "
                     f"({act} expected: {'yes' if gate.expected else 'no'}, "
                     f"found: {'yes' if gate.observed else 'no'})")
        if gate.evidence:
            lines.append(f"      evidence: {_abridge(gate.evidence)}")
    lines.append(f"      input:    {_abridge(result.input)}")
    lines.append(f"      response: {_abridge(result.response)}")
    return lines


def render_summary(run: EvalRun) -> str:
    """Render the run as the plain-text summary file.

    Args:
        run: the finished run.

    Returns:
        Text ending in a newline.
    """
    s = run.summary
    where = run.endpoint if run.source == "endpoint" else "canned responses (--responses-file)"
    verdict = "FAIL" if s.gate_failed else "PASS"
    rate = f"{s.pass_rate:.1%}" if s.pass_rate is not None else "n/a"
    out = [
        f"evalloop eval run {run.run_id}",
        f"started {utc_iso(run.started_at)}, took {run.duration_s:.1f} s",
        f"evals:  {run.eval_source or '(cases)'} ({s.total} cases)",
        f"agent:  {where}" + (f" [{run.agent_id}]" if run.agent_id else ""),
        *([f"second opinion: {s.second_opinion}"] if s.second_opinion else []),
        # what the "(P(yes)=…, low=…, high=…)" in a gate's reason means
        *(["  (a gate's reason shows the model's P(yes) and the gate's cut-offs: it overrules "
           "the rules only at or below low or at or above high; docs/rules.md#second-opinion)"]
          if s.second_opinion and not s.second_opinion.startswith(("off", "not loaded"))
          and "unavailable" not in s.second_opinion else []),
        *([f"non-answer check: {s.answer_check}"] if s.answer_check else []),
        "",
        # the pass rate's denominator counts agent errors (failed cases) but not unscored ones
        f"GATE: {verdict}   passed {s.passed}/{s.total - s.unscored} ({rate})"
        + (f", {s.unscored} unscored" if s.unscored else ""),
        *(f"  because: {reason}" for reason in s.gate_reasons),
        f"  failed a gate: {s.failed_gate}   agent errors: {s.agent_errors}   "
        f"unscored: {s.unscored}",
        f"  flagged: {s.flagged}   requires human review: {s.requires_human_review}",
        "",
        "By category",
        f"  {'category':<14}{'total':>6}{'passed':>8}{'failed':>8}{'error':>7}"
        f"{'unscored':>10}{'flagged':>9}",
    ]
    for name, c in s.by_category.items():
        out.append(f"  {name:<14}{c.total:>6}{c.passed:>8}{c.failed_gate:>8}{c.agent_error:>7}"
                   f"{c.unscored:>10}{c.flagged:>9}")
    failed = [r for r in run.results if r.status == CaseStatus.FAILED_GATE]
    if failed:
        out += ["", f"Gate failures ({len(failed)})"]
        for r in failed:
            out += _gate_lines(r)
    errors = [r for r in run.results if r.status == CaseStatus.AGENT_ERROR]
    if errors:
        out += ["", f"Agent errors ({len(errors)})"]
        for r in errors:
            e = r.error
            assert e is not None
            # The message of an HTTP failure already starts with "HTTP <status>".
            shown = e.http_status and not e.message.startswith(f"HTTP {e.http_status}")
            status = f", HTTP {e.http_status}" if shown else ""
            # a canned response was never requested, so it took no attempt
            how = (f" after {e.attempts} attempt(s)" if e.attempts
                   else " in the responses file")
            out.append(f"  {r.case_id} [{r.category}] {e.kind}{how}"
                       f"{status}: {_abridge(e.message, 120)}")
    unscored = [r for r in run.results if r.status == CaseStatus.UNSCORED]
    if unscored:
        out += ["", f"Unscored ({len(unscored)})"]
        for r in unscored:
            why = r.review_reasons[0].removeprefix("unscored: ") if r.review_reasons else ""
            must = [n for n, on in (("should_refuse", r.should_refuse),
                                    ("should_escalate", r.should_escalate)) if on]
            required = f" ({', '.join(must)}: fails the run)" if must else ""
            out.append(f"  {r.case_id} [{r.category}]{required}: {why}")
    review = [r for r in run.results if r.requires_human_review]
    if review:
        out += ["", f"Requires human review ({len(review)})"]
        for r in review:
            prefix = f"{r.status.value}: "
            reasons = [x.removeprefix(prefix) for x in r.review_reasons]
            out.append(f"  {r.case_id} [{r.category}] {prefix}" + "; ".join(reasons))
            for gate in r.gates.values():
                # a gate a model decided against the rules: its reason names the model, its
                # P(yes) and thresholds; the evidence is the sentence the act can be in
                if f"{gate.gate} gate decided by a second opinion against the rules" in reasons:
                    out.append(f"      {gate.gate} gate: {_abridge(gate.reason, 240)}")
                    if gate.evidence:
                        out.append(f"      evidence: {_abridge(gate.evidence)}")
            for f in r.flags:
                out.append(f"      {f.name}: {_abridge(f.detail, 120)}")
    return "\n".join(out) + "\n"
