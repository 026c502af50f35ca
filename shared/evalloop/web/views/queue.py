"""The Review queue tab: ranked candidates with their evidence; confirm / edit / reject / skip.

Reads and actions go through :mod:`evalloop.adapters.review_store` (the same functions the
review JSON API calls), as the signed-in user (:class:`evalloop.core.review.Reviewer`): every
action is audited there with who, when, before, after and the evidence shown. Forms are plain
HTML posts (with the CSRF token) that redirect back to the queue, so they work without
JavaScript; ``static/app.js`` adds the keyboard (``docs/web.md#review-queue``).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.authentication import requires
from starlette.datastructures import FormData
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from evalloop.adapters import review_store
from evalloop.core.evaluation.cases import CATEGORIES
from evalloop.core.review import DIFFICULTIES, Reviewer, parse_edits
from evalloop.errors import ReviewConflict, ReviewInputError, ReviewNotFound
from evalloop.web.render import page
from evalloop.web.tabs import Tab

__all__ = ["TAB", "form_edits", "queue_tab"]

#: candidates listed per page
PAGE_SIZE = 50


def reviewer_of(request: Request) -> Reviewer:
    """The signed-in user as the review store's :class:`Reviewer`."""
    return Reviewer(request.user.username, request.user.role.value)


def form_edits(form: FormData, current: dict[str, Any]) -> dict[str, Any]:
    """The fields of the edit form that differ from ``current`` (the candidate as shown: its
    question, proposed expected answer and saved edits), as raw edits for
    :func:`evalloop.core.review.parse_edits`.

    Text fields are compared stripped; ``tags`` is a comma-separated list; the two checkboxes
    are present when ticked; an empty select means "not set".
    """
    out: dict[str, Any] = {}
    for key in ("question", "expected_answer", "expected_behavior", "notes", "domain"):
        if key in form:
            value = str(form[key]).strip()
            before = (current.get(key) or "").strip()
            if value != before:
                out[key] = value or (None if key != "question" else value)
    for key in ("difficulty", "category"):
        if key in form:
            choice = str(form[key]).strip() or None
            if choice != current.get(key):
                out[key] = choice
    if "tags" in form:
        tags = [t.strip() for t in str(form["tags"]).split(",") if t.strip()]
        if tags != list(current.get("tags") or []):
            out["tags"] = tags
    if "edit_flags" in form:  # the form showed the two checkboxes
        for key in ("should_refuse", "should_escalate"):
            ticked = key in form
            if ticked != bool(current.get(key, False)):
                out[key] = ticked
    return out


def _current(item: dict[str, Any]) -> dict[str, Any]:
    """What the edit form shows for ``item``: its values with saved edits applied."""
    edits = item.get("edits") or {}
    return {"question": item["question"], "expected_answer": item.get("expected_answer"),
            "category": "routine", "should_refuse": False, "should_escalate": False,
            **edits}


@requires("authenticated", redirect="login")
async def queue_tab(request: Request) -> Response:
    """``/agents/{agent_id}/queue``: pending candidates in review order, the selected one
    (``?item=``, default the first) with its evidence and rank explanation."""
    agent = request.path_params["agent_id"]
    pool = request.app.state.pool
    status = request.query_params.get("status", "pending")
    if status not in ("pending", "confirmed", "edited", "rejected", "withdrawn", "all"):
        raise HTTPException(400, f"expected a status of pending, confirmed, edited, rejected, "
                                 f"withdrawn or all; got {status!r}")
    items = await review_store.list_queue_items(
        pool, agent_id=agent, status=None if status == "all" else status, limit=PAGE_SIZE)
    selected = request.query_params.get("item") or (items[0]["candidate_id"] if items else None)
    detail = None
    if selected:
        try:
            detail = await review_store.candidate_detail(pool, _uuid(selected))
        except ReviewNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        if detail["agent_id"] != agent:
            raise HTTPException(404, f"candidate {selected} belongs to {detail['agent_id']}")
    flash = request.session.pop("flash", None)
    return page(request, "queue.html", agent=agent, active="queue", items=items,
                status=status, detail=detail, current=_current(detail) if detail else None,
                difficulties=DIFFICULTIES, categories=CATEGORIES, flash=flash)


def _uuid(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise HTTPException(404, f"expected a candidate id (UUID), got {text!r}") from None


def _row_version(form: FormData) -> int:
    raw = str(form.get("row_version", ""))
    if not raw.isdigit():
        raise HTTPException(400, f"expected the row_version you loaded, got {raw!r}")
    return int(raw)


@requires("review")
async def act(request: Request) -> Response:
    """``POST /agents/{agent_id}/queue/items/{id}/{action}``: ``confirm`` (every field the
    reviewer changed in the form is applied first and kept: the case is then ``edited``),
    ``reject`` (``reason`` required) or ``skip``; back to the queue with what happened (or
    the conflict) as a message, on ``next_item``."""
    agent = request.path_params["agent_id"]
    cid = _uuid(request.path_params["id"])
    action = request.path_params["action"]
    form = await request.form()
    pool = request.app.state.pool
    reviewer = reviewer_of(request)
    version = _row_version(form)
    target = request.url_for("tab:queue", agent_id=agent)
    nxt = None
    try:
        if action == "confirm":
            detail = await review_store.candidate_detail(pool, cid)
            raw = form_edits(form, _current(detail))
            edits = parse_edits(raw) if raw else None
            out = await review_store.confirm_candidates(
                pool, [(cid, version, edits)], reviewer=reviewer,
                action="edit" if edits else "confirm")
            v = out["version"]
            url = request.url_for("tab:golden", agent_id=agent).include_query_params(
                set=v["golden_set_id"], b=v["version"])
            message = (f"{'Edited and confirmed' if edits else 'Confirmed'}: case "
                       f"{out['items'][0]['golden_case_id']} is in {v['golden_set_id']} "
                       f"version {v['version']}.")
            request.session["flash"] = {"kind": "ok", "text": message, "href": str(url),
                                        "link": f"see version {v['version']} and its diff"}
        elif action == "reject":
            await review_store.reject_candidate(pool, cid, row_version=version,
                                                reviewer=reviewer,
                                                reason=str(form.get("reason") or ""))
            request.session["flash"] = {"kind": "ok", "text": "Rejected; this question will "
                                        "not be proposed again."}
        elif action == "skip":
            await review_store.skip_candidate(pool, cid, row_version=version, reviewer=reviewer)
            request.session["flash"] = {"kind": "ok", "text": "Skipped: moved down the queue."}
        else:
            raise HTTPException(404, f"expected confirm, reject or skip, got {action!r}")
        nxt = str(form.get("next_item") or "") or None
    except ReviewConflict as exc:
        request.session["flash"] = {"kind": "conflict", "text": f"Conflict: {exc}"}
        nxt = str(cid)
    except ReviewInputError as exc:
        problems = "; ".join(f"{p.field}: expected {p.expected}, got {p.received}"
                             for p in exc.problems)
        request.session["flash"] = {"kind": "error", "text": f"Not saved: {problems}"}
        nxt = str(cid)
    except ReviewNotFound as exc:
        raise HTTPException(404, str(exc)) from None
    if nxt:
        target = target.include_query_params(item=nxt)
    return RedirectResponse(str(target), status_code=303)


TAB = Tab(key="queue", title="Review queue", order=20, endpoint=queue_tab, hotkey="2",
          routes=(Route("/items/{id}/{action}", act, methods=["POST"], name="queue_act"),))
