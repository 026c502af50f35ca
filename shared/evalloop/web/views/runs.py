"""The Eval runs tab: runs with their gate results, flags, cases for human review, and the
review form (the eval rubric: pass / fail per criterion, a 1-5 score, a note;
``docs/review.md#eval-human-review``)."""

from __future__ import annotations

from uuid import UUID

from starlette.authentication import requires
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from evalloop.adapters import golden_store, review_store
from evalloop.core.review import EVAL_CRITERIA, parse_verdict
from evalloop.errors import ReviewConflict, ReviewInputError, ReviewNotFound
from evalloop.web.render import page
from evalloop.web.tabs import Tab
from evalloop.web.views.queue import reviewer_of

__all__ = ["TAB", "run_page", "runs_tab", "verdict"]


@requires("authenticated", redirect="login")
async def runs_tab(request: Request) -> Response:
    """``/agents/{agent_id}/runs``: the agent's runs, newest first, and the flagged eval
    cases still waiting for a human verdict."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    runs = await golden_store.list_eval_runs(pool, agent)
    waiting = await review_store.eval_review_queue(pool, agent_id=agent)
    return page(request, "runs.html", agent=agent, active="runs", runs=runs, waiting=waiting)


def _run_id(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise HTTPException(404, f"expected a run id (UUID), got {text!r}") from None


@requires("authenticated", redirect="login")
async def run_page(request: Request) -> Response:
    """``/agents/{agent_id}/runs/{run_id}?case=``: one run: summary, gate results, flags,
    every case; the selected flagged case with its verdicts and the review form."""
    agent = request.path_params["agent_id"]
    run_id = _run_id(request.path_params["run_id"])
    pool = request.app.state.pool
    run = await golden_store.load_eval_run(pool, run_id)
    if run is None or run.agent_id != agent:
        raise HTTPException(404, f"agent {agent!r} has no finished run {run_id}")
    flagged = [r for r in run.results if r.requires_human_review]
    selected = request.query_params.get("case") or (flagged[0].case_id if flagged else None)
    detail = None
    if selected:
        try:
            detail = await review_store.eval_case_detail(pool, run_id, selected)
        except ReviewNotFound as exc:
            raise HTTPException(404, str(exc)) from None
    mine = None
    if detail and request.user.is_authenticated:
        mine = next((v for v in detail["verdicts"] if v["reviewer"] == request.user.username),
                    None)
    return page(request, "run.html", agent=agent, active="runs", run=run, flagged=flagged,
                detail=detail, mine=mine, criteria=EVAL_CRITERIA,
                flash=request.session.pop("flash", None))


@requires("review")
async def verdict(request: Request) -> Response:
    """``POST /agents/{agent_id}/runs/{run_id}/cases/{case_id}/verdict``: store the signed-in
    reviewer's verdict (``crit_<name>`` = ``pass`` / ``fail`` / empty, ``score`` 1-5,
    ``note``); back to the run."""
    agent = request.path_params["agent_id"]
    run_id = _run_id(request.path_params["run_id"])
    case_id = request.path_params["case_id"]
    form = await request.form()
    criteria = {name: form[f"crit_{name}"] == "pass" for name in EVAL_CRITERIA
                if form.get(f"crit_{name}") in ("pass", "fail")}
    raw_score = str(form.get("score") or "")
    score: object = int(raw_score) if raw_score.isdigit() else raw_score
    target = request.url_for("run", agent_id=agent, run_id=str(run_id)).include_query_params(
        case=case_id)
    try:
        crit, sc, note = parse_verdict({"criteria": criteria, "score": score,
                                        "note": str(form.get("note") or "") or None})
        await review_store.record_verdict(request.app.state.pool, run_id, case_id,
                                          reviewer=reviewer_of(request), criteria=crit,
                                          score=sc, note=note)
        request.session["flash"] = {"kind": "ok", "text": f"Verdict on {case_id} stored "
                                    f"(score {sc}, {sum(crit.values())}/{len(crit)} criteria "
                                    "passed)."}
    except (ReviewConflict, ReviewInputError) as exc:
        request.session["flash"] = {"kind": "error", "text": f"Not stored: {exc}"}
    except ReviewNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    return RedirectResponse(str(target), status_code=303)


TAB = Tab(key="runs", title="Eval runs", order=40, endpoint=runs_tab, hotkey="4",
          routes=(Route("/{run_id}", run_page, name="run"),
                  Route("/{run_id}/cases/{case_id}/verdict", verdict, methods=["POST"],
                        name="eval_verdict")))
