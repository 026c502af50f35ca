"""The async evaluation runner (``docs/rules.md#endpoint-contract``), as a library function.

:func:`run_eval` sends every case to the agent (or looks it up in canned responses), scores
the answer with the pure gates and flags of :mod:`evalloop.core.evaluation`, and returns an
:class:`~evalloop.core.evaluation.results.EvalRun`. Concurrency is bounded by a fixed pool of
worker tasks in one :class:`asyncio.TaskGroup` (memory does not grow with the number of cases);
results keep case order. An agent failure is a per-case ``agent_error`` result, never an
exception; a bug (any other exception) cancels the run and propagates. Scoring (gates, flags,
records: CPU work) runs in one scorer task fed by the fetching workers and starts on an answer
only once its worker's next request is on the wire, so it overlaps the wait on the agent
instead of adding to every round trip.

:func:`write_outputs` writes ``evals-results-<timestamp>.json`` and
``evals-summary-<timestamp>.txt``; :func:`rich_progress` is the progress bar the CLI shows.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID, uuid4

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from evalloop.adapters.agent_body import read_reply
from evalloop.adapters.agent_client import AgentCallError, AgentClient, AgentReply
from evalloop.adapters.answer_check import (
    AnswerChecker,
    BothAnswerCheckers,
    FineTunedAnswerChecker,
    shared_answer_checker,
)
from evalloop.adapters.gate_classifier import OpinionSource, shared_default_opinions
from evalloop.core.evaluation.cases import EvalCase, EvalCaseError
from evalloop.core.evaluation.extract import (
    Extracted,
    MalformedResponse,
    from_json_value,
    has_answer_text,
    loads_json,
    looks_like_html,
    looks_like_sse,
)
from evalloop.core.evaluation.report import render_summary
from evalloop.core.evaluation.results import (
    AgentFailure,
    CaseResult,
    CaseStatus,
    EvalRun,
    summarise,
)
from evalloop.core.evaluation.scoring import error_result, score_response, unscored_result
from evalloop.core.evaluation.second_opinion import AnswerCheck, Gate, Opinion
from evalloop.core.redaction import stored_url
from evalloop.errors import FieldProblem, json_syntax_problem

__all__ = ["ResponseSource", "load_responses_file", "rich_progress", "run_eval", "write_outputs"]

#: A canned response: the answer text, a recorded agent body's answer (its text and tool
#: calls), or why a recorded agent body holds none.
Canned = str | Extracted | MalformedResponse
#: Where answers come from: a live agent, or canned responses (eval id -> response).
ResponseSource = AgentClient | Mapping[str, Canned]
ProgressCallback = Callable[[CaseResult], None]


#: What one case produced before scoring: an agent reply, an agent failure, canned text, or
#: nothing (a canned source without this id).
_Raw = AgentReply | AgentCallError | Canned | None


async def _fetch(case: EvalCase, source: ResponseSource,
                 on_sent: Callable[[], None] | None, slot: int) -> _Raw:
    if isinstance(source, AgentClient):
        try:
            return await source.ask(case.input, on_sent=on_sent, slot=slot)
        except AgentCallError as exc:
            return exc
    return source.get(case.id)


def _answer_text(raw: _Raw) -> str | None:
    """The text the gates will read, or None (an error, nothing, or no answer at all)."""
    text = raw.text if isinstance(raw, AgentReply | Extracted) else \
        raw if isinstance(raw, str) else None
    if text is None or not has_answer_text(text) or looks_like_html(text):
        return None
    return text


def _score(case: EvalCase, raw: _Raw, label: str,
           opinions: Mapping[Gate, Opinion] | None = None,
           check: AnswerCheck | None = None) -> CaseResult:
    if isinstance(raw, AgentReply):
        return score_response(case, raw.text, response_format=raw.format,
                              latency_ms=raw.latency_ms, attempts=raw.attempts,
                              second_opinion=opinions,
                              retrieved_context=(None if raw.context_ids is None
                                                 else list(raw.context_ids)),
                              tool_calls=raw.tool_calls, beside_text=raw.beside_text,
                              answer_check=check)
    if isinstance(raw, AgentCallError):
        return error_result(case, raw.failure, latency_ms=raw.elapsed_ms)
    if raw is None:
        return unscored_result(case, f"no response for this id in {label}")
    if isinstance(raw, MalformedResponse):
        return error_result(case, AgentFailure(kind=raw.kind, message=raw.message, attempts=0))
    if isinstance(raw, Extracted):
        return score_response(case, raw.text, response_format="canned", attempts=0,
                              second_opinion=opinions, tool_calls=raw.tool_calls,
                              beside_text=raw.beside_text, answer_check=check)
    return score_response(case, raw, response_format="canned", attempts=0,
                          second_opinion=opinions, answer_check=check)


async def run_eval(cases: Sequence[EvalCase], source: ResponseSource, *, concurrency: int = 8,
                   progress: ProgressCallback | None = None, run_id: UUID | None = None,
                   eval_source: str | None = None, agent_id: str | None = None,
                   golden_set_version_id: UUID | None = None, job_id: UUID | None = None,
                   responses_label: str = "the responses file",
                   second_opinion: OpinionSource | Literal["default"] | None = "default",
                   answer_checker: AnswerChecker | FineTunedAnswerChecker | BothAnswerCheckers
                   | Literal["default"]
                   | None = "default",
                   ) -> EvalRun:
    """Run eval cases against an agent (or canned responses) and score every answer.

    Args:
        cases: the cases to run, in report order (ids unique).
        source: an open :class:`~evalloop.adapters.agent_client.AgentClient` (its timeout and
            retries apply per case), or a mapping eval id -> canned response (the
            ``--responses-file``; a case missing from it is ``unscored``).
        concurrency: requests in flight at most (>= 1).
        progress: called once per finished case, in completion order (e.g. a progress bar).
        run_id: the run's id; a new UUID4 when ``None`` (the evaluator passes its own so a
            redelivered job reuses it).
        eval_source: label of where the cases came from (file name, ``golden:agent@3``).
        agent_id, golden_set_version_id, job_id: recorded on the run as given.
        responses_label: how to name the canned source in "unscored" reasons.
        second_opinion: who gives the gates a second opinion on every answer
            (``docs/rules.md#second-opinion``): ``"default"`` -- the setting
            ``evaluator.gate_second_opinion``: ``minilm-ft`` (the default: the fine-tuned
            MiniLM cross-encoder), ``classifier`` (the MiniLM logistic classifier), both
            direction-safe, or ``off`` (the rules alone)
            (:func:`~evalloop.adapters.gate_classifier.shared_default_opinions`; loaded once
            per process); a source of your own; or ``None``: the rules alone. A classifier
            that cannot be loaded leaves the rules to decide, and every verdict says why.
        answer_checker: the non-answer check on cases to be answered
            (``docs/rules.md#non-answer-check``): ``"default"`` -- the setting
            ``evaluator.answer_check`` (whatever ``evaluator.gate_second_opinion`` is) when
            ``second_opinion`` is ``"default"``
            (:func:`~evalloop.adapters.answer_check.shared_answer_checker`), else none; a
            checker of your own; or ``None``.

    Returns:
        The run: per-case results in case order and the summary (``summary.gate_failed`` is
        the exit-code gate).

    Raises:
        ValueError: ``concurrency < 1`` or duplicate case ids.
    """
    if concurrency < 1:
        raise ValueError(f"expected concurrency >= 1, received {concurrency}")
    if len({c.id for c in cases}) != len(cases):
        raise ValueError("expected unique case ids")
    # the run's time includes loading the second opinion (seconds, once per process)
    started = datetime.now(UTC)
    # the first default load takes seconds (MiniLM + its adapters): off the event loop
    # canned responses that match no case leave nothing to score: no model to load
    nothing_to_score = not isinstance(source, AgentClient) and not any(c.id in source
                                                                       for c in cases)
    opinion_source = None if second_opinion == "default" and nothing_to_score else \
        await asyncio.to_thread(shared_default_opinions) \
        if second_opinion == "default" else second_opinion
    # the non-answer check reads only cases to be answered: loaded only if there is one
    to_answer = any(not c.should_refuse and not c.should_escalate for c in cases)
    checker = (await asyncio.to_thread(shared_answer_checker)
               if answer_checker == "default" and second_opinion == "default"
               and not nothing_to_score and to_answer
               else None if answer_checker == "default" else answer_checker)
    results: list[CaseResult | None] = [None] * len(cases)
    queue = iter(enumerate(cases))
    fetched: asyncio.Queue[tuple[int, EvalCase, _Raw] | None] = asyncio.Queue()

    async def worker(slot: int) -> None:
        # A shared iterator: next() never yields to the loop, so no two workers take one case.
        # Each answer is handed to the scorer only once this worker's *next* request is on the
        # wire (``on_sent``), or once it has none: scoring -- CPU work in this same thread --
        # then runs while the agent computes, never between an answer and the next request.
        pending: list[tuple[int, EvalCase, _Raw]] = []

        def release() -> None:
            if pending:
                fetched.put_nowait(pending.pop())

        for index, case in queue:
            raw = await _fetch(case, source, release if pending else None, slot)
            release()  # no-op once on_sent released it; needed when nothing was sent
            pending.append((index, case, raw))
        release()

    async def scorer() -> None:
        while (item := await fetched.get()) is not None:
            index, case, raw = item
            text = _answer_text(raw)
            # embedding is CPU work: a worker thread keeps the loop serving the agents
            opinions = None if text is None or opinion_source is None else \
                await asyncio.to_thread(opinion_source.opinions, text, case.input)
            check = None if (checker is None or text is None or case.should_refuse
                             or case.should_escalate) else \
                await asyncio.to_thread(checker.check, text, case.input)
            result = _score(case, raw, responses_label, opinions, check)
            results[index] = result
            if progress is not None:
                progress(result)

    async with asyncio.TaskGroup() as group:
        group.create_task(scorer())
        async with asyncio.TaskGroup() as workers:
            for slot in range(min(concurrency, len(cases))):
                workers.create_task(worker(slot))
        fetched.put_nowait(None)
    done = [r for r in results if r is not None]
    assert len(done) == len(cases)
    return EvalRun(
        run_id=run_id or uuid4(), started_at=started, finished_at=datetime.now(UTC),
        # stored and published: never with credentials (docs/security.md#secrets)
        endpoint=stored_url(source.endpoint) if isinstance(source, AgentClient) else None,
        source="endpoint" if isinstance(source, AgentClient) else "responses_file",
        eval_source=eval_source, agent_id=agent_id,
        golden_set_version_id=golden_set_version_id, job_id=job_id,
        results=done, summary=summarise(done).model_copy(
            update={"second_opinion": "not loaded: no case had a response to score"
                    if second_opinion == "default" and nothing_to_score
                    else _describe(opinion_source),
                    "answer_check": _describe_check(checker, to_answer, nothing_to_score)}),
    )


def _describe_check(checker: AnswerChecker | FineTunedAnswerChecker | BothAnswerCheckers | None,
                    to_answer: bool,
                    nothing_to_score: bool) -> str:
    """One line for the run: which non-answer check read the cases to be answered
    (docs/rules.md#non-answer-check)."""
    if checker is None:
        return ("not run: no case had a response to score" if nothing_to_score
                else "not run: no case to be answered" if not to_answer else "off")
    why = getattr(checker, "why", None)
    if why:
        return f"{checker.name} unavailable ({why}); the rules alone"
    return checker.describe() if isinstance(checker, BothAnswerCheckers) else checker.name


def _describe(source: OpinionSource | None) -> str:
    """One line for the run: which second opinion the gates asked (docs/rules.md#second-opinion)."""
    if source is None:
        return "off (the rules alone)"
    why = getattr(source, "why", None)
    if why is not None:  # a stand-in for a model that could not be loaded
        return f"{source.model} unavailable ({why}); the rules alone"
    weights = getattr(source, "sidecar", {}).get("weights sha256")
    trusted = sorted(getattr(source, "trusted", ()))
    return (f"{source.model}" + (f" (weights {weights[:12]})" if weights else "")
            + (", trusted on both gates" if trusted == ["escalation", "refusal"]
               else (f", trusted on {trusted[0]}, direction-safe on "
                     f"{'escalation' if trusted == ['refusal'] else 'refusal'}") if trusted
               else ", direction-safe on both gates"))


def load_responses_file(paths: Sequence[Path]) -> dict[str, Canned]:
    """Load canned responses: JSON objects mapping eval id -> response.

    A value is the response text, or a raw agent body as JSON (an OpenAI/Anthropic/generic
    object), read with the endpoint contract (``docs/rules.md#endpoint-contract``), its tool
    calls kept for the gates as from a live agent (``docs/rules.md#tool-calls``). A body the
    contract finds no answer in (e.g. tool calls only) is kept as its
    :class:`~evalloop.core.evaluation.extract.MalformedResponse`: that case is an agent error
    of the same kind as the live reply would be, not a file error. Several files are layered: a
    later file's id replaces an earlier one's (e.g. reference responses + one recorded
    failure). A UTF-8 byte-order mark at the start of a file is accepted. A string that is a
    recorded event stream (its first line a ``data:`` or ``event:`` field) is read as the
    stream it is, as from a live agent -- never scored as its raw ``data: {...}`` lines.

    Raises:
        EvalCaseError: a file is missing, not UTF-8 JSON (nested too deep to decode
            included), not an object, or a value is neither a string nor an object.
    """
    merged: dict[str, Canned] = {}
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8-sig")
            if not text.strip():
                raise EvalCaseError(str(path), [FieldProblem(
                    "(file)", "a JSON object mapping eval id -> response text",
                    "an empty file")])
            doc = loads_json(text, object_pairs_hook=_KeyCounts)
        except (OSError, UnicodeDecodeError) as exc:
            raise EvalCaseError(str(path), [FieldProblem("(file)", "a readable UTF-8 JSON file",
                                                         str(exc))]) from exc
        except json.JSONDecodeError as exc:
            if _is_an_eval_set(text):
                raise EvalCaseError(path.name, [_AN_EVAL_SET]) from exc
            raise EvalCaseError(path.name, [json_syntax_problem(
                text, exc.lineno, exc.colno, exc.msg)]) from exc
        if isinstance(doc, dict) and isinstance(doc.get("cases"), list):
            raise EvalCaseError(path.name, [_AN_EVAL_SET])  # a golden set in JSON
        if not isinstance(doc, dict):
            raise EvalCaseError(path.name, [FieldProblem(
                "(document)", "an object mapping eval id -> response text",
                type(doc).__name__)])
        if isinstance(doc, _KeyCounts) and doc.repeated:
            # JSON keeps the last of two equal keys: one answer would vanish unseen
            raise EvalCaseError(path.name, [FieldProblem(
                key, "one answer per eval id in a file",
                f"{n} answers for {key!r}; the file's reader would keep only the last")
                for key, n in doc.repeated.items()])
        for key, value in doc.items():
            if isinstance(value, str) and looks_like_sse(value) \
                    and value.lstrip("\ufeff\r\n").startswith(("data:", "event:")):
                try:
                    merged[key] = read_reply(value, "text/event-stream")
                except MalformedResponse as exc:
                    merged[key] = exc
                continue
            if isinstance(value, str):
                merged[key] = value
                continue
            if not isinstance(value, dict):
                raise EvalCaseError(path.name, [FieldProblem(
                    key, "a response string or an agent response object",
                    f"{type(value).__name__}: {_abridge_json(value)}")])
            try:
                merged[key] = from_json_value(value)
            except MalformedResponse as exc:
                merged[key] = exc
            except RecursionError as exc:
                raise EvalCaseError(path.name, [FieldProblem(
                    key, "a response string or an agent response object",
                    "an object nested too deep to read")]) from exc
    return merged


class _KeyCounts(dict[str, Any]):
    """A decoded JSON object that remembers keys it held more than once (key -> count)."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        counts: dict[str, int] = {}
        for key, _ in pairs:
            counts[key] = counts.get(key, 0) + 1
        self.repeated = {k: n for k, n in counts.items() if n > 1}


_AN_EVAL_SET = FieldProblem(
    "(document)", "a responses file: a JSON object mapping eval id -> response text",
    "an eval file (its cases have an id and an input or question); pass it with --evals, "
    "and the answers with --responses-file")


def _is_an_eval_set(text: str) -> bool:
    """Whether ``text`` (not JSON) is an eval set YAML: a list of cases, or a mapping with
    ``cases:`` / ``evals:``, whose cases are mappings with an ``id``."""
    import yaml

    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError):
        return False
    if isinstance(doc, dict):
        doc = doc.get("cases", doc.get("evals"))
    return (isinstance(doc, list) and bool(doc)
            and all(isinstance(c, dict) and "id" in c for c in doc))


def _abridge_json(value: object, limit: int = 80) -> str:
    try:
        return json.dumps(value)[:limit]
    except RecursionError:
        return "(nested too deep to show)"


def _free_path(directory: Path, stem: str, suffix: str) -> Path:
    path = directory / f"{stem}{suffix}"
    n = 1
    while path.exists():
        n += 1
        path = directory / f"{stem}-{n}{suffix}"
    return path


def write_outputs(run: EvalRun, output_dir: Path) -> tuple[Path, Path]:
    """Write the run's result files, ``evals-results-<timestamp>.json`` and
    ``evals-summary-<timestamp>.txt`` (``docs/rules.md#eval-run-outputs``).

    The timestamp is the run's UTC start, ``YYYYMMDDTHHMMSSZ``; an existing file is never
    overwritten (``-2``, ``-3``... is appended).

    Returns:
        ``(results_json_path, summary_txt_path)``.
    """
    output_dir.mkdir(parents=True, exist_ok=True)
    stamp = run.started_at.strftime("%Y%m%dT%H%M%SZ")
    json_path = _free_path(output_dir, f"evals-results-{stamp}", ".json")
    txt_path = output_dir / json_path.name.replace("evals-results-", "evals-summary-") \
        .replace(".json", ".txt")
    json_path.write_text(json.dumps(run.model_dump(mode="json"), indent=2, ensure_ascii=False)
                         + "\n", encoding="utf-8")
    txt_path.write_text(render_summary(run), encoding="utf-8")
    return json_path, txt_path


@contextmanager
def rich_progress(total: int, description: str = "evaluating",
                  console: Console | None = None) -> Iterator[ProgressCallback]:
    """A rich progress bar on stderr; yields the callback to pass as ``run_eval(progress=)``.

    The bar shows done/total, elapsed time and running counts of passed, failed and errored
    cases. It redraws 4 times a second (rich renders in a thread that competes with the runner
    for the GIL) and the task is updated at most every 50 ms, and on the last case, so the
    per-case cost is a counter increment.
    """
    counts = {CaseStatus.PASSED: 0, CaseStatus.FAILED_GATE: 0, CaseStatus.AGENT_ERROR: 0,
              CaseStatus.UNSCORED: 0}
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TimeElapsedColumn(), TextColumn("{task.fields[counts]}"),
                   console=console or Console(stderr=True), transient=False,
                   refresh_per_second=4)
    task = bar.add_task(description, total=total, counts="")
    shown = {"at": 0.0}

    def advance(result: CaseResult) -> None:
        counts[result.status] += 1
        done = sum(counts.values())
        now = time.monotonic()
        if done < total and now - shown["at"] < 0.05:
            return
        text = (f"passed {counts[CaseStatus.PASSED]}  failed {counts[CaseStatus.FAILED_GATE]}  "
                f"errors {counts[CaseStatus.AGENT_ERROR]}")
        bar.update(task, completed=done, counts=text)
        shown["at"] = now

    with bar:
        yield advance
