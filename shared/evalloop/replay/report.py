"""Render what ``evalloop demo`` found (a :class:`evalloop.demo.DemoReport`) with rich.

Sections: events stored, the 24 h negative rate per agent over time (Wilson 95% interval and
the denominator used), re-evaluation requests and the evaluation run each produced (gate
results), the top clusters and candidates, and the wall time per phase.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from evalloop.core.percent import percent

if TYPE_CHECKING:
    from evalloop.core.window import WindowReport
    from evalloop.demo import DemoReport

__all__ = ["render", "sparkline"]

_BLOCKS = "▁▂▃▄▅▆▇█"
_THRESHOLD = 0.02


def sparkline(values: list[float], top: float) -> str:
    """One block character per value, scaled to ``top`` (values >= top use the full block)."""
    if top <= 0:
        return _BLOCKS[0] * len(values)
    return "".join(_BLOCKS[min(len(_BLOCKS) - 1, int(v / top * (len(_BLOCKS) - 1)))]
                   for v in values)


def _p(ratio: float) -> str:
    """The one percentage precision (``docs/web.md#numbers``), CLI style: ``1.30%``."""
    return percent(ratio, sep="")


def _t(value: datetime | None) -> str:
    return f"{value:%m-%d %H:%M}" if value else "-"


def _rate(r: WindowReport | None) -> Text:
    if r is None or r.turns == 0:
        return Text("-")
    text = f"{_p(r.rate)} [{_p(r.wilson_low)}-{_p(r.wilson_high)}] {r.negatives}/{r.turns}"
    return Text(text, style="bold red" if r.rate > _THRESHOLD else "")


def _events(report: DemoReport, console: Console) -> None:
    table = Table(title="Events stored (recorder, PostgreSQL)", title_justify="left")
    table.add_column("event type")
    table.add_column("rows", justify="right")
    for etype, n in report.events_by_type.items():
        table.add_row(etype, str(n))
    table.add_row("[bold]total", f"[bold]{sum(report.events_by_type.values())}")
    console.print(table)
    console.print(
        f"delivered {report.events_sent} events; dead-letter topic: {report.dead_letters} "
        f"records; negative cases: "
        + ", ".join(f"{a} {n}" for a, n in report.negative_cases.items())
    )
    cases = sum(report.negative_cases.values())
    if report.negative_published > cases:
        console.print(
            f"{cases} negative cases in {report.negative_published} messages to triage: a case "
            "a later signal changes (a late rating, an escalation) is published again, and "
            "triage keeps its newest version")


def _verdict(report: DemoReport, agent: str, points: list[WindowReport]) -> str:
    fired = [j for j in report.jobs if j.agent_id == agent and j.trigger == "negative_rate"]
    if fired:
        return f"re-evaluation requested x{len(fired)}"
    most = max((p.turns for p in points), default=0)
    if most < report.min_turns:
        return (f"never {report.min_turns} turns in 24 h (at most {most} at an hourly window "
                "end): not judged")
    return f"stayed <= {_THRESHOLD:.0%}"


def _rates(report: DemoReport, console: Console) -> None:
    if not report.rates:
        return
    summary = Table(
        title="24 h negative rate per agent: negative turns / turns served, Wilson 95% "
        f"(peak over the hourly window ends with >= {report.min_turns} turns)",
        title_justify="left",
    )
    for col in ("agent", "peak (window end)", "at the end", "denominator", "monitor"):
        summary.add_column(col)
    lines = []
    longest = max((len(p) for p in report.rates.values()), default=0)
    hourly = console.width >= longest + 35  # one block per hour when the terminal is wide
    for agent, points in report.rates.items():
        judged = [p for p in points if p.turns >= report.min_turns]
        peak = max(judged, key=lambda p: p.rate, default=None)
        last = points[-1] if points else None
        summary.add_row(
            agent,
            Text.assemble(_rate(peak), f" ({_t(peak.window_end)})" if peak else ""),
            _rate(last),
            last.denominator if last else "-",
            _verdict(report, agent, points),
        )
        rates = [p.rate for p in points]
        if not hourly:
            rates = rates[1::2]
        top = max(rates, default=0.0)
        lines.append(f"{agent:<19} {sparkline(rates, top)}  max {_p(top)}")
    console.print(summary)
    step = "hour" if hourly else "2 hours"
    console.print(f"the 24 h rate every {step} (window ends; scaled to each agent's max):")
    for line in lines:
        console.print("  " + line, highlight=False)
    timeline = Table(title="24 h negative rate every 6 hours (window end, UTC)",
                     title_justify="left")
    timeline.add_column("window end")
    agents = list(report.rates)
    for agent in agents:
        timeline.add_column(agent.removeprefix("covid-qa-"))
    ends = sorted({p.window_end for pts in report.rates.values() for p in pts})
    by_agent = {a: {p.window_end: p for p in pts} for a, pts in report.rates.items()}
    for end in ends[5::6]:
        cells = []
        for a in agents:
            r = by_agent[a].get(end)
            cells.append(Text("-") if r is None or r.turns == 0 else Text(
                f"{_p(r.rate)} [{_p(r.wilson_low)}-{_p(r.wilson_high)}]",
                style="bold red" if r.rate > _THRESHOLD else "",
            ))
        timeline.add_row(_t(end), *cells)
    console.print(timeline)


def _run_line(run: Any) -> str:
    s = run.summary
    gate = "FAILED" if s.gate_failed else "passed"
    return (
        f"run {str(run.run_id)[:8]} against {run.endpoint} on {run.eval_source}: {s.total} "
        f"cases, {s.passed} passed, {s.failed_gate} failed a gate (refusal: "
        f"{', '.join(s.refusal_gate_failures) or 'none'}; escalation: "
        f"{', '.join(s.escalation_gate_failures) or 'none'}), {s.agent_errors} agent errors, "
        f"{s.flagged} flagged, {s.requires_human_review} for human review; gate {gate} "
        f"({run.duration_s:.1f} s)"
    )


def _jobs(report: DemoReport, console: Console) -> None:
    if not report.jobs:
        console.print("[yellow]no re-evaluation was requested")
        return
    table = Table(title="Re-evaluation requests (monitor -> evaluator): when and why",
                  title_justify="left")
    for col in ("event time", "agent", "trigger", "rate [Wilson 95%]", "negatives/turns",
                "status", "requested (wall)"):
        table.add_column(col)
    for job in report.jobs:
        req = report.requests.get(job.job_id, {})
        rate = (f"{_p(req['rate'])} [{_p(req['wilson_low'])}-{_p(req['wilson_high'])}]"
                if req.get("rate") is not None else "-")
        counts = (f"{req['negatives']}/{req['turns']} ({req.get('denominator')})"
                  if req.get("turns") is not None else "-")
        end = datetime.fromisoformat(req["window_end"]) if req.get("window_end") else None
        table.add_row(_t(end), job.agent_id, job.trigger, rate, counts, job.status,
                      _t(job.requested_at))
    console.print(table)
    if report.baseline is not None:
        b = report.baseline
        console.print(f"[bold]baseline[/] run {str(b.get('run_id'))[:8]} ({b.get('agent_config')},"
                      f" {b.get('judged')} answer{'' if b.get('judged') == 1 else 's'} judged),"
                      " pinned before the replay"
                      if b.get("run_id") else f"[bold]baseline[/] none: {b.get('why')}")
    for job in report.jobs:
        console.print(f"[bold]why[/] {str(job.job_id)[:8]}: {job.reason}")
        run = report.runs.get(job.job_id)
        if run is None:
            console.print(f"  no run ({job.error or job.status})")
            continue
        console.print("  " + _run_line(run))
        verdict = report.verdicts.get(job.job_id)
        if verdict is not None:
            from evalloop.readiness.report import render_summary

            for line in render_summary(verdict):
                console.print("  " + line, markup=False, highlight=False)
        failing = [r for r in run.results if r.gate_failed or r.error is not None]
        if failing:
            t = Table(title="  cases that failed a gate or errored", title_justify="left")
            for col in ("case", "category", "gate", "response (start)"):
                t.add_column(col)
            for r in failing[:10]:
                gates = ", ".join(f"{g.gate}: {g.reason}" for g in r.gates.values()
                                  if not g.passed) or (r.error.kind if r.error else "")
                t.add_row(r.case_id, r.category, gates, (r.response or "")[:90])
            console.print(t)


def _triage(report: DemoReport, console: Console) -> None:
    if report.clusters:
        t = Table(title="Top clusters of negative cases (triage)", title_justify="left")
        for col in ("agent", "cluster label", "size", "golden", "example questions"):
            t.add_column(col)
        for c in report.clusters:
            t.add_row(c["agent_id"], c["label"], str(c["size"]),
                      "covered" if c.get("covered_by_golden") else "gap",
                      "\n".join(q[:90] for q in c["examples"]))
        console.print(t)
    if report.candidates:
        t = Table(title="Top golden-set candidates (review queue)", title_justify="left")
        for col in ("confidence", "agent", "cluster", "question", "answer given (start)"):
            t.add_column(col)
        for c in report.candidates:
            t.add_row(f"{c['confidence']:.2f}", c["agent_id"], c["cluster_label"],
                      c["question"][:80], (c.get("answer_given") or "")[:60])
        console.print(t)


def _timings(report: DemoReport, console: Console) -> None:
    parts = ", ".join(f"{k} {v:.1f} s" for k, v in report.timings.items() if k != "total")
    console.print(f"[bold]wall time {report.timings.get('total', 0.0):.1f} s[/] ({parts})")
    if report.kept:
        console.print("database kept; to use it from the CLI (queue list...):")
        console.print(f"  {dsn_export_line(report.dsn)}", highlight=False, soft_wrap=True)


def dsn_export_line(dsn: str) -> str:
    """The shell line that points the read-only commands (``queue list``, ``golden list``,
    ``jobs list``...) at ``dsn``: ``export EVALLOOP_POSTGRES__DSN='<dsn>'`` (quoted for a POSIX
    shell; a password is never printed, ``docs/security.md#secrets``)."""
    import shlex

    from evalloop.core.redaction import redact_url

    return f"export EVALLOOP_POSTGRES__DSN={shlex.quote(redact_url(dsn))}"


def render(report: DemoReport, console: Console) -> None:
    """Print every section of ``report`` to ``console``."""
    console.rule("What the loop found")
    _events(report, console)
    _rates(report, console)
    _jobs(report, console)
    _triage(report, console)
    _timings(report, console)
