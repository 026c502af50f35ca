"""The review HTTP JSON API (Starlette): the candidate queue, golden-set versions, diffs, care
checks and retirement, and the eval human-review queue. Flows: ``docs/review.md``.

Routes (all JSON; ``{id}`` = candidate id):

================================================================  =================================
``GET  /api/v1/review/queue?agent=&status=pending&limit=&offset=``  ranked candidates
``GET  /api/v1/review/items/{id}``                                 one candidate + evidence + audit
``POST /api/v1/review/items/{id}/confirm``  ``{row_version, golden_set_id?}``
``POST /api/v1/review/items/{id}/edit``     ``{row_version, edits, confirm=true, golden_set_id?}``
``POST /api/v1/review/items/{id}/reject``   ``{row_version, reason}``
``POST /api/v1/review/items/{id}/skip``     ``{row_version, reason?}``
``POST /api/v1/review/confirm``             ``{items: [{id, row_version, edits?}], golden_set_id?}``
``GET  /api/v1/golden-sets?agent=``                                sets + latest care checks
``GET  /api/v1/golden-sets/reminders``                             monthly review reminders
``GET  /api/v1/golden-sets/{agent}/{set}/versions``                versions, newest first
``GET  /api/v1/golden-sets/{agent}/{set}/versions/{n}``            cases + care checks
``GET  /api/v1/golden-sets/{agent}/{set}/diff?from=&to=``          case-level diff
``POST /api/v1/golden-sets/{agent}/{set}/cases/{case}/retire``     ``{expected_version, reason}``
``POST /api/v1/golden-sets/{agent}/{set}/reviewed``                ``{note?}``
``GET|PUT /api/v1/agents/{agent}/review-profile``                  domains, triggers, production
``GET  /api/v1/eval-review/queue?agent=&run=&all=``                flagged eval cases
``GET  /api/v1/eval-review/runs/{run}/cases/{case}``               one case + verdicts
``POST /api/v1/eval-review/runs/{run}/cases/{case}/verdict``       ``{criteria, score, note?}``
================================================================  =================================

**Who acts.** The reviewer is ``request.state.reviewer``, a :class:`~evalloop.core.review.Reviewer`
set by the app that mounts these routes (the web app's sign-in; :func:`build_app`'s
``authenticate`` hook). None: 401. Reads need any role; actions need ``reviewer`` or ``admin``:
403 otherwise.

**Errors** are ``{"error": {"code", "message", "problems"?, "current"?}}``: 400 ``bad_request``
(malformed JSON or fields, every problem named), 401 ``unauthenticated``, 403 ``forbidden``, 404
``not_found``, 409 ``conflict`` (``current`` = the item as it is now: who decided it and when),
503 ``storage_unavailable``.

After every action that made a golden-set version, the outbox is flushed through ``publish``
(when given); a bus failure leaves the row queued for the next flush and does not fail the
action (the version is stored).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import asyncpg
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from evalloop.adapters import review_store as store
from evalloop.core.golden_care import ClusterGap, care_checks
from evalloop.core.review import Reviewer, parse_edits, parse_verdict
from evalloop.errors import (
    BusError,
    FieldProblem,
    ReviewConflict,
    ReviewInputError,
    ReviewNotFound,
    StorageError,
)

__all__ = ["Flush", "ReviewApi", "bearer_tokens", "build_app", "review_routes"]

log = logging.getLogger(__name__)

#: Flushes the golden-set outbox (e.g. ``functools.partial(publish_pending, pool, bus, topic)``).
Flush = Callable[[], Awaitable[Any]]
Handler = Callable[[Request], Awaitable[Response]]


def _error(status: int, code: str, message: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, **extra}}, status_code=status)


def _guard(handler: Handler, *, acts: bool) -> Handler:
    """Authenticate, authorise and map evalloop errors to HTTP answers."""

    async def wrapped(request: Request) -> Response:
        reviewer = getattr(request.state, "reviewer", None)
        if not isinstance(reviewer, Reviewer):
            return _error(401, "unauthenticated", "sign in first (no reviewer on the request)")
        if acts and not reviewer.can_act:
            return _error(403, "forbidden", f"{reviewer.name} is a {reviewer.role}; only "
                          "reviewers and admins change queues and golden sets")
        try:
            return await handler(request)
        except ReviewInputError as exc:
            return _error(400, "bad_request", str(exc),
                          problems=[p.as_dict() for p in exc.problems])
        except ReviewNotFound as exc:
            return _error(404, "not_found", str(exc))
        except ReviewConflict as exc:
            return _error(409, "conflict", str(exc), current=exc.current)
        except StorageError as exc:
            log.error("review API: %s", exc)
            return _error(503, "storage_unavailable", "the database could not be reached; "
                          "nothing was changed, try again")

    return wrapped


def _problem(field: str, expected: str, received: Any) -> ReviewInputError:
    return ReviewInputError([FieldProblem(field, expected, repr(received)[:120])])


async def _body(request: Request) -> dict[str, Any]:
    raw = await request.body()
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise _problem("body", "a JSON object", raw[:80].decode("utf-8", "replace")) from exc
    if not isinstance(doc, dict):
        raise _problem("body", "a JSON object", doc)
    return doc


def _int(doc: Mapping[str, Any], key: str, *, minimum: int = 1) -> int:
    value = doc.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _problem(key, f"an integer >= {minimum} (the version you loaded)", value)
    return value


def _set_id(doc: Mapping[str, Any]) -> str | None:
    value = doc.get("golden_set_id")
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise _problem("golden_set_id", "a golden-set id (text) or null", value)
    return value


def _uuid(text: str, what: str = "id") -> UUID:
    try:
        return UUID(text)
    except ValueError as exc:
        raise _problem(what, "a UUID", text) from exc


def _query_int(request: Request, key: str, default: int, *, minimum: int = 0,
               maximum: int = 1000) -> int:
    raw = request.query_params.get(key)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise _problem(key, f"an integer {minimum}-{maximum}", raw) from exc
    if not minimum <= value <= maximum:
        raise _problem(key, f"an integer {minimum}-{maximum}", raw)
    return value


_STATUSES = ("pending", "confirmed", "edited", "rejected", "withdrawn", "all")


class ReviewApi:
    """The handlers, bound to a pool, an optional outbox flush and a clock.

    Args:
        pool: asyncpg pool (jsonb codec installed).
        flush: called after an action made a golden-set version (``None``: the outbox is
            flushed by someone else, e.g. the review service's loop).
        clock: the current time, UTC (reminders); default ``datetime.now(UTC)``.
    """

    def __init__(self, pool: asyncpg.Pool, *, flush: Flush | None = None,
                 clock: Callable[[], datetime] | None = None) -> None:
        self.pool = pool
        self.flush = flush
        self.clock = clock or (lambda: datetime.now(UTC))

    async def _published(self) -> None:
        if self.flush is None:
            return
        try:
            await self.flush()
        except (BusError, StorageError) as exc:
            log.warning("golden-set outbox not flushed (kept for the next flush): %s", exc)

    # ------------------------------------------------------------------ candidates

    async def queue(self, request: Request) -> Response:
        """``GET /api/v1/review/queue``: ranked candidates (``store.list_queue_items``)."""
        status = request.query_params.get("status", "pending")
        if status not in _STATUSES:
            raise _problem("status", " | ".join(_STATUSES), status)
        items = await store.list_queue_items(
            self.pool, agent_id=request.query_params.get("agent") or None,
            status=None if status == "all" else status,
            limit=_query_int(request, "limit", 50, minimum=1),
            offset=_query_int(request, "offset", 0, maximum=1_000_000))
        return JSONResponse({"items": items})

    async def item(self, request: Request) -> Response:
        """``GET /api/v1/review/items/{id}``: one candidate with evidence and audit."""
        cid = _uuid(request.path_params["id"])
        return JSONResponse(await store.candidate_detail(self.pool, cid))

    async def confirm(self, request: Request) -> Response:
        """``POST .../{id}/confirm``: a new golden-set version with the case."""
        body = await _body(request)
        out = await store.confirm_candidates(
            self.pool, [(_uuid(request.path_params["id"]), _int(body, "row_version"), None)],
            reviewer=request.state.reviewer, golden_set_id=_set_id(body))
        await self._published()
        return JSONResponse(out)

    async def edit(self, request: Request) -> Response:
        """``POST .../{id}/edit``: apply edits and confirm (``confirm: false``: only save)."""
        body = await _body(request)
        cid = _uuid(request.path_params["id"])
        edits = parse_edits(body.get("edits"))
        confirm = body.get("confirm", True)
        if not isinstance(confirm, bool):
            raise _problem("confirm", "true or false", confirm)
        if not confirm:
            return JSONResponse(await store.save_edits(
                self.pool, cid, row_version=_int(body, "row_version"),
                reviewer=request.state.reviewer, edits=edits))
        out = await store.confirm_candidates(
            self.pool, [(cid, _int(body, "row_version"), edits)],
            reviewer=request.state.reviewer, golden_set_id=_set_id(body),
            action="edit")
        await self._published()
        return JSONResponse(out)

    async def reject(self, request: Request) -> Response:
        """``POST .../{id}/reject``: with a reason; never proposed again."""
        body = await _body(request)
        reason = body.get("reason")
        if not isinstance(reason, str):
            raise _problem("reason", "why the candidate is rejected (text)", reason)
        return JSONResponse(await store.reject_candidate(
            self.pool, _uuid(request.path_params["id"]), row_version=_int(body, "row_version"),
            reviewer=request.state.reviewer, reason=reason))

    async def skip(self, request: Request) -> Response:
        """``POST .../{id}/skip``: stays pending, moves down the queue."""
        body = await _body(request)
        reason = body.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise _problem("reason", "text or null", reason)
        return JSONResponse(await store.skip_candidate(
            self.pool, _uuid(request.path_params["id"]), row_version=_int(body, "row_version"),
            reviewer=request.state.reviewer, reason=reason))

    async def confirm_batch(self, request: Request) -> Response:
        """``POST /api/v1/review/confirm``: several candidates into ONE new version."""
        body = await _body(request)
        raw = body.get("items")
        if not isinstance(raw, list) or not raw:
            raise _problem("items", "a non-empty list of {id, row_version, edits?}", raw)
        items = []
        for i, it in enumerate(raw):
            if not isinstance(it, dict) or not isinstance(it.get("id"), str):
                raise _problem(f"items[{i}]", "{id, row_version, edits?}", it)
            edits = parse_edits(it["edits"]) if it.get("edits") is not None else None
            items.append((_uuid(it["id"], f"items[{i}].id"), _int(it, "row_version"), edits))
        out = await store.confirm_candidates(
            self.pool, items, reviewer=request.state.reviewer,
            golden_set_id=_set_id(body))
        await self._published()
        return JSONResponse(out)

    # ------------------------------------------------------------------ golden sets

    async def _care(self, agent_id: str, cases: list[Any]) -> list[dict[str, Any]]:
        profile = await store.get_profile(self.pool, agent_id)
        gaps = await store.uncovered_clusters(self.pool, agent_id, [c.id for c in cases])
        checks = care_checks(
            cases, in_production=profile["in_production"] if profile else None,
            domains=profile["knowledge_domains"] if profile else None,
            triggers=profile["escalation_triggers"] if profile else None,
            gaps=None if gaps is None else
            [ClusterGap(g["cluster_id"], g["label"], g["size"]) for g in gaps])
        return [c.as_dict() for c in checks]

    async def golden_sets(self, request: Request) -> Response:
        """``GET /api/v1/golden-sets``: every set with its latest version's care checks."""
        sets = await store.list_golden_sets(self.pool, request.query_params.get("agent") or None)
        for s in sets:
            _, cases = await store.version_detail(self.pool, s["agent_id"], s["golden_set_id"])
            s["care"] = await self._care(s["agent_id"], cases)
        return JSONResponse({"sets": sets})

    async def versions(self, request: Request) -> Response:
        """``GET .../versions``: newest first."""
        p = request.path_params
        versions = await store.list_versions(self.pool, p["agent"], p["set"])
        if not versions:
            raise ReviewNotFound(f"no golden set {p['agent']}/{p['set']}")
        return JSONResponse({"versions": versions})

    async def version(self, request: Request) -> Response:
        """``GET .../versions/{n}``: the version, its cases and care checks."""
        p = request.path_params
        version, cases = await store.version_detail(self.pool, p["agent"], p["set"],
                                                     int(p["n"]))
        return JSONResponse({"version": version,
                             "cases": [c.model_dump(mode="json") for c in cases],
                             "care": await self._care(p["agent"], cases)})

    async def diff(self, request: Request) -> Response:
        """``GET .../diff?from=a&to=b``: case-level diff between any two versions."""
        p = request.path_params
        old = _query_int(request, "from", 0, minimum=1, maximum=10_000_000)
        new = _query_int(request, "to", 0, minimum=1, maximum=10_000_000)
        return JSONResponse(await store.diff_versions(self.pool, p["agent"], p["set"], old, new))

    async def retire(self, request: Request) -> Response:
        """``POST .../cases/{case}/retire``: a new version without the case."""
        p = request.path_params
        body = await _body(request)
        reason = body.get("reason")
        if not isinstance(reason, str):
            raise _problem("reason", "why the case is stale (text)", reason)
        out = await store.retire_case(
            self.pool, p["agent"], p["set"], p["case"],
            expected_version=_int(body, "expected_version"), reviewer=request.state.reviewer,
            reason=reason)
        await self._published()
        return JSONResponse(out)

    async def reviewed(self, request: Request) -> Response:
        """``POST .../reviewed``: the monthly review of the set is done."""
        p = request.path_params
        body = await _body(request)
        note = body.get("note")
        if note is not None and not isinstance(note, str):
            raise _problem("note", "text or null", note)
        return JSONResponse(await store.mark_set_reviewed(
            self.pool, p["agent"], p["set"], reviewer=request.state.reviewer, note=note))

    async def reminders(self, request: Request) -> Response:
        """``GET /api/v1/golden-sets/reminders``: monthly review due dates."""
        return JSONResponse({"reminders": await store.set_reminders(
            self.pool, now=self.clock(), agent_id=request.query_params.get("agent") or None)})

    async def profile(self, request: Request) -> Response:
        """``GET|PUT /api/v1/agents/{agent}/review-profile``."""
        agent = request.path_params["agent"]
        if request.method == "GET":
            found = await store.get_profile(self.pool, agent)
            if found is None:
                raise ReviewNotFound(f"agent {agent!r} has no review profile")
            return JSONResponse(found)
        reviewer = request.state.reviewer
        if not reviewer.can_act:
            return _error(403, "forbidden", f"{reviewer.name} is a {reviewer.role}")
        body = await _body(request)
        lists = {}
        for key in ("knowledge_domains", "escalation_triggers"):
            value = body.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise _problem(key, "a list of names", value)
            lists[key] = value
        prod = body.get("in_production")
        if prod is not None and not isinstance(prod, bool):
            raise _problem("in_production", "true, false or null", prod)
        return JSONResponse(await store.upsert_profile(
            self.pool, agent, in_production=prod, **lists))

    # ------------------------------------------------------------------ eval human review

    async def eval_queue(self, request: Request) -> Response:
        """``GET /api/v1/eval-review/queue``: flagged eval cases without a verdict."""
        run = request.query_params.get("run")
        return JSONResponse({"items": await store.eval_review_queue(
            self.pool, agent_id=request.query_params.get("agent") or None,
            run_id=_uuid(run, "run") if run else None,
            include_reviewed=request.query_params.get("all") in ("1", "true"),
            limit=_query_int(request, "limit", 100, minimum=1))})

    async def eval_case(self, request: Request) -> Response:
        """``GET /api/v1/eval-review/runs/{run}/cases/{case}``."""
        p = request.path_params
        return JSONResponse(await store.eval_case_detail(self.pool, _uuid(p["run"], "run"),
                                                         p["case"]))

    async def verdict(self, request: Request) -> Response:
        """``POST .../verdict``: pass/fail per criterion, a 1-5 score, a note."""
        p = request.path_params
        criteria, score, note = parse_verdict(await _body(request))
        return JSONResponse(await store.record_verdict(
            self.pool, _uuid(p["run"], "run"), p["case"], reviewer=request.state.reviewer,
            criteria=criteria, score=score, note=note))


def review_routes(api: ReviewApi) -> list[BaseRoute]:
    """The API's routes (full paths under ``/api/v1``), to include in another Starlette app."""
    def r(path: str, handler: Handler, methods: list[str], acts: bool) -> Route:
        return Route(path, _guard(handler, acts=acts), methods=methods)

    rv, gs, ev = "/api/v1/review", "/api/v1/golden-sets", "/api/v1/eval-review"
    gset = gs + "/{agent}/{set}"
    return [
        r(rv + "/queue", api.queue, ["GET"], False),
        r(rv + "/items/{id}", api.item, ["GET"], False),
        r(rv + "/items/{id}/confirm", api.confirm, ["POST"], True),
        r(rv + "/items/{id}/edit", api.edit, ["POST"], True),
        r(rv + "/items/{id}/reject", api.reject, ["POST"], True),
        r(rv + "/items/{id}/skip", api.skip, ["POST"], True),
        r(rv + "/confirm", api.confirm_batch, ["POST"], True),
        r(gs, api.golden_sets, ["GET"], False),
        r(gs + "/reminders", api.reminders, ["GET"], False),
        r(gset + "/versions", api.versions, ["GET"], False),
        r(gset + "/versions/{n:int}", api.version, ["GET"], False),
        r(gset + "/diff", api.diff, ["GET"], False),
        r(gset + "/cases/{case}/retire", api.retire, ["POST"], True),
        r(gset + "/reviewed", api.reviewed, ["POST"], True),
        r("/api/v1/agents/{agent}/review-profile", api.profile, ["GET", "PUT"], False),
        r(ev + "/queue", api.eval_queue, ["GET"], False),
        r(ev + "/runs/{run}/cases/{case}", api.eval_case, ["GET"], False),
        r(ev + "/runs/{run}/cases/{case}/verdict", api.verdict, ["POST"], True),
    ]


def bearer_tokens(tokens: Mapping[str, Reviewer]) -> Callable[[Request], Reviewer | None]:
    """An ``authenticate`` hook for :func:`build_app`: ``Authorization: Bearer <token>`` looked
    up in ``tokens`` (token -> reviewer); anything else is anonymous."""
    def authenticate(request: Request) -> Reviewer | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        return tokens.get(token.strip()) if scheme.lower() == "bearer" else None

    return authenticate


class _Authenticate(BaseHTTPMiddleware):
    def __init__(self, app: Any, authenticate: Callable[[Request], Reviewer | None]) -> None:
        super().__init__(app)
        self.authenticate = authenticate

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        reviewer = self.authenticate(request)
        if reviewer is not None:
            request.state.reviewer = reviewer
        return await call_next(request)


def build_app(pool: asyncpg.Pool, *, authenticate: Callable[[Request], Reviewer | None],
              flush: Flush | None = None, clock: Callable[[], datetime] | None = None
              ) -> Starlette:
    """A standalone Starlette app serving :func:`review_routes`.

    Args:
        pool: asyncpg pool (the caller owns and closes it).
        authenticate: maps a request to its reviewer (``None``: anonymous -> 401), e.g.
            :func:`bearer_tokens`.
        flush: golden-set outbox flush after actions (see :class:`ReviewApi`).
        clock: UTC clock for reminders.
    """
    api = ReviewApi(pool, flush=flush, clock=clock)
    return Starlette(routes=review_routes(api),
                     middleware=[Middleware(_Authenticate, authenticate=authenticate)])
