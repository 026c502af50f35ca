"""``evalloop eval run``: the eval runner (``docs/rules.md#endpoint-contract``,
``docs/rules.md#run-gate``).

Examples::

    # against a live agent
    evalloop eval run --endpoint http://127.0.0.1:8000 --evals hr-qa-agent-evals.yaml
    # adversarial cases only
    evalloop eval run --endpoint http://127.0.0.1:8000 --evals hr.yaml --category adversarial
    # score canned responses, no endpoint (CI, regression checks, exported transcripts)
    evalloop eval run --responses-file responses.json --evals hr.yaml
    # the agent's stored golden set (latest, or @version) from PostgreSQL
    evalloop eval run --endpoint http://127.0.0.1:8000 --golden-set hr-qa-agent@2
    # the run summary as one JSON object (for a pipeline)
    evalloop eval run --responses-file responses.json --evals hr.yaml --json

Writes ``evals-results-<timestamp>.json`` and ``evals-summary-<timestamp>.txt`` to
``--output-dir`` and, when a database is configured (``--db`` or ``EVALLOOP_POSTGRES__DSN``; a
``--golden-set`` run always has one), stores the run and its per-case results. A run that does
not store touches no database.

Exit code (``docs/exit-codes.md``): 0 the gate passed; 1 the gate failed (a refusal or
escalation gate, an agent error, nothing scored, a refusal/escalation case unscored; always 0
with ``--no-fail-on-gates``); 2 bad usage or input (no cases run); 3 the database could not be
reached.
"""

from __future__ import annotations

import asyncio
import os
import re
from importlib.resources import files
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import urlsplit
from uuid import UUID

import typer

from evalloop.cli._common import UsageError, fail, json_line
from evalloop.core.redaction import has_credentials, redact_url

if TYPE_CHECKING:
    from evalloop.core.evaluation.cases import EvalCase, EvalSet
    from evalloop.core.evaluation.results import EvalRun

__all__ = ["app", "bundled_evals", "run"]

app = typer.Typer(no_args_is_help=True,
                  help="Run eval sets against an agent, or score canned responses.")


def bundled_evals(name: str = "hr-qa-agent-evals.yaml") -> Path:
    """Path of a file shipped in ``evalloop/data/evals`` (the HR eval set and its responses)."""
    return Path(str(files("evalloop").joinpath(f"data/evals/{name}")))


class _Usage(UsageError):
    """Bad usage or input: print it and exit 2."""


def _parse_golden(spec: str) -> tuple[str, int | None]:
    agent, _, version = spec.partition("@")
    if not agent:
        raise _Usage(f"expected --golden-set AGENT[@VERSION], received {spec!r}")
    if not version:
        return agent, None
    if not version.isdigit() or int(version) < 1:
        raise _Usage(f"expected a version number >= 1 after '@', received {version!r}")
    return agent, int(version)


async def _golden_cases(dsn: str, spec: str, set_id: str | None
                        ) -> tuple[EvalSet, str, UUID]:
    from evalloop.adapters.golden_store import get_golden_version, load_golden_cases
    from evalloop.adapters.postgres import connect_pool, migrate
    from evalloop.core.evaluation.cases import EvalSet

    agent, version = _parse_golden(spec)
    await migrate(dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    try:
        found = await get_golden_version(pool, agent, version=version, golden_set_id=set_id)
        cases = await load_golden_cases(pool, found.version_id)
    finally:
        await pool.close()
    label = f"golden:{agent}/{found.golden_set_id}@{found.version}"
    return (EvalSet(set_id=found.golden_set_id, agent=agent, version=found.version,
                    source=label, format="golden_json", cases=cases), label, found.version_id)


async def _store(dsn: str, run: EvalRun) -> None:
    from evalloop.adapters.golden_store import save_eval_run
    from evalloop.adapters.postgres import connect_pool, migrate

    await migrate(dsn)
    pool = await connect_pool(dsn, min_size=1, max_size=2)
    try:
        await save_eval_run(pool, run)
    finally:
        await pool.close()


def check_output_dir(path: Path) -> Path:
    """Make sure the run's files can be written to ``path`` BEFORE the run starts: it is
    created when missing (with its parents) and must accept a new file.

    Returns:
        ``path``.

    Raises:
        _Usage: ``path`` cannot be created, is not a directory, or is not writable (exit 2).
    """
    import tempfile

    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise _Usage(f"--output-dir {path}: expected a writable directory (or one that can be "
                     f"created), but {why}; nothing was run") from None
    return path


def _with_guess(unused: str, ids: list[str]) -> str:
    """A response id that matches no case, with the case id it was probably meant for: ids are
    compared exactly, so "A1" misses "a1" ("A1 (did you mean a1?)")."""
    import difflib

    same = [i for i in ids if i.casefold() == unused.casefold()]
    guess = same or difflib.get_close_matches(unused, ids, n=1, cutoff=0.75)
    return f"{unused} (did you mean {guess[0]}?)" if guess else unused


def _select(cases: tuple[EvalCase, ...], category: str | None) -> tuple[EvalCase, ...]:
    if category is None:
        return cases
    chosen = tuple(c for c in cases if c.category == category)
    if not chosen:
        present = ", ".join(sorted({c.category for c in cases}))
        raise _Usage(f"no cases in category {category!r} (categories present: {present})")
    return chosen


async def _main(*, endpoint: str | None, evals: Path | None, golden_set: str | None,
                set_id: str | None, category: str | None, responses_files: list[Path],
                concurrency: int, timeout_s: float, retries: int, output_dir: Path,
                headers: dict[str, str], response_format: str, db: str | None,
                agent: str | None, progress: bool) -> tuple[EvalRun, Path, Path, bool]:
    from evalloop.adapters.agent_client import AgentClient
    from evalloop.core.evaluation.cases import load_eval_file
    from evalloop.core.evaluation.extract import format_hint
    from evalloop.evaluation import runner

    version_id: UUID | None = None
    if golden_set:
        from evalloop.adapters.postgres import resolve_dsn
        from evalloop.settings import Settings

        db = db or resolve_dsn(Settings().postgres)
        eval_set, label, version_id = await _golden_cases(db, golden_set, set_id)
    else:
        assert evals is not None
        eval_set = load_eval_file(evals)
        label = eval_set.source
    cases = _select(eval_set.cases, category)
    hint = format_hint(response_format)
    agent_id = agent or eval_set.agent
    canned = None if endpoint else runner.load_responses_file(responses_files)
    if canned is not None:  # a typo'd id would only show up as an unscored case
        ids = [c.id for c in eval_set.cases]
        unused = sorted(set(canned) - set(ids))
        if unused:
            shown = ", ".join(_with_guess(u, ids) for u in unused[:10]) + (
                f", ... ({len(unused) - 10} more)" if len(unused) > 10 else "")
            typer.echo(f"warning: {len(unused)} response id(s) match no case of {label}: "
                       f"{shown}", err=True)
    bar = runner.rich_progress(len(cases), f"evaluating {label}") if progress else None
    callback = bar.__enter__() if bar else None
    try:
        if endpoint:
            async with AgentClient(endpoint, headers=headers, timeout_s=timeout_s, retries=retries,
                                   format_hint=hint, max_connections=concurrency) as client:
                run = await runner.run_eval(cases, client, concurrency=concurrency,
                                            progress=callback, eval_source=label,
                                            agent_id=agent_id, golden_set_version_id=version_id)
        else:
            assert canned is not None
            names = ", ".join(p.name for p in responses_files)
            run = await runner.run_eval(cases, canned, concurrency=concurrency, progress=callback,
                                        eval_source=label, agent_id=agent_id,
                                        golden_set_version_id=version_id, responses_label=names)
    finally:
        if bar:
            bar.__exit__(None, None, None)
    json_path, txt_path = runner.write_outputs(run, output_dir)
    stored = False
    if db:
        await _store(db, run)
        stored = True
    return run, json_path, txt_path, stored


#: Header names whose value is a credential: refused in ``--header`` (``--header-env`` instead).
_SECRET_HEADER = re.compile(r"auth|token|secret|key|cookie|password|session", re.IGNORECASE)


def env_header(raw: str) -> tuple[str, str]:
    """``"Name=VAR"`` -> ``(Name, value of $VAR)`` (``docs/security.md#secrets``).

    Raises:
        _Usage: not ``Name=VAR``, or ``VAR`` is unset or empty.
    """
    name, sep, var = raw.partition("=")
    if not sep or not name.strip() or not var.strip():
        raise _Usage(f"--header-env: expected 'Name=ENV_VAR', received {raw!r}")
    value = os.environ.get(var.strip())
    if not value:
        raise _Usage(f"--header-env {name.strip()}: the environment variable {var.strip()} is "
                     "not set or empty")
    return name.strip(), value


def _refuse_command_line_secrets(endpoint: str | None, headers: dict[str, str],
                                 db: str | None) -> None:
    """Refuse credentials on the command line, where ``ps`` and shell history show them
    (``docs/security.md#secrets``).

    Raises:
        _Usage: naming the option and the safe alternative, never the secret.
    """
    for name in headers:
        if _SECRET_HEADER.search(name):
            raise _Usage(f"--header {name}: credentials on the command line are visible in ps; "
                         f"use --header-env {name}=ENV_VAR")
    if endpoint and has_credentials(endpoint):
        raise _Usage(f"--endpoint {redact_url(endpoint)}: carries credentials (user:password@ "
                     "or a token parameter); pass them with --header-env Name=ENV_VAR")
    if db and urlsplit(db).password:
        raise _Usage(f"--db {redact_url(db)}: a password on the command line is visible in ps; "
                     "set EVALLOOP_POSTGRES__DSN instead")


@app.command("run")
def run(
    endpoint: Annotated[str | None, typer.Option(
        "--endpoint", help='Agent URL (http:// or https://); POSTs {"messages": [{"role": '
                           '"user", "content": "<the case input>"}]}.')] = None,
    evals: Annotated[Path | None, typer.Option(
        "--evals", help="Eval file: eval set YAML (a list of cases, or a mapping with "
                        "cases: [...]; each: id, input, and "
                        "optionally expected_behavior, should_escalate, should_refuse, "
                        "category, notes; docs/rules.md#eval-case-format) or golden-set JSON "
                        "({id, agent, version, cases: [{id, question, expected_answer, "
                        "...}]}).")] = None,
    golden_set: Annotated[str | None, typer.Option(
        "--golden-set", help="AGENT\\[@VERSION]: a golden set stored in PostgreSQL (latest "
                             "version unless @VERSION).")] = None,
    set_id: Annotated[str | None, typer.Option(
        "--set", help="Golden-set id, when the agent has several.")] = None,
    category: Annotated[str | None, typer.Option(
        "--category", help="Run one category only (routine, edge-case, ...).")] = None,
    responses_file: Annotated[list[Path] | None, typer.Option(
        "--responses-file", metavar="<path>",
        help="Canned responses JSON: {eval id: response text or agent reply object} "
             "(docs/rules.md#responses-file); no endpoint. Repeat to layer files (later ids "
             "win).")] = None,
    fail_on_gates: Annotated[bool, typer.Option(
        "--fail-on-gates/--no-fail-on-gates",
        help="Exit 1 when the run's gate fails (default), or always 0.")] = True,
    concurrency: Annotated[int | None, typer.Option(
        "--concurrency", min=1, help="Requests in flight (default: settings, 8).")] = None,
    timeout: Annotated[float | None, typer.Option(
        "--timeout", min=0.001, help="Seconds per attempt, and the longest Retry-After "
                                     "waited for (default: settings, 30).")] = None,
    retries: Annotated[int | None, typer.Option(
        "--retries", min=0, help="Retries on timeout, connection error, 5xx or 429 "
                                 "(default 2).")] = None,
    output_dir: Annotated[Path | None, typer.Option(
        "--output-dir", help="Where the results/summary files go (default: settings, .).")
    ] = None,
    header: Annotated[list[str] | None, typer.Option(
        "--header", metavar="<str>",
        help="Extra request header 'Name: value' (not credentials: see --header-env); "
             "repeatable.")] = None,
    header_env: Annotated[list[str] | None, typer.Option(
        "--header-env", metavar="<str>",
        help="Header whose value is read from an environment variable, 'Name=VAR' (e.g. "
             "Authorization=AGENT_AUTH): secrets stay out of the command line and ps; "
             "repeatable.")] = None,
    response_format: Annotated[str, typer.Option(
        "--format", help="Response format hint: auto, sse, openai, anthropic, json, text.")
    ] = "auto",
    db: Annotated[str | None, typer.Option(
        "--db", help="PostgreSQL DSN to store the run (default: EVALLOOP_POSTGRES__DSN; "
                     "neither: the run is not stored).")] = None,
    agent: Annotated[str | None, typer.Option(
        "--agent", help="Agent id recorded on the run (default: the eval file's agent).")
    ] = None,
    progress: Annotated[bool, typer.Option(
        "--progress/--no-progress",
        help="Show a progress bar on stderr while cases run (default: on; off with --json).")
    ] = True,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print the run summary as one JSON object instead of the text report.")
    ] = False,
) -> None:
    """Run an eval set against an agent endpoint, or score canned responses.

    Credentials go in the environment, for example: export AGENT_AUTH='Bearer ...'

    then: evalloop eval run --endpoint URL --evals FILE --header-env Authorization=AGENT_AUTH
    """
    from evalloop.adapters.agent_client import parse_header
    from evalloop.core.evaluation.extract import format_hint
    from evalloop.core.evaluation.report import render_summary
    from evalloop.core.evaluation.results import exit_code
    from evalloop.settings import Settings

    responses = list(responses_file or [])
    try:
        settings = Settings()
        if (evals is None) == (golden_set is None):
            raise _Usage("give exactly one of --evals FILE or --golden-set AGENT[@VERSION]")
        if bool(endpoint) == bool(responses):
            raise _Usage("give exactly one of --endpoint URL or --responses-file FILE")
        if endpoint and urlsplit(endpoint).scheme not in ("http", "https"):
            raise _Usage(f"--endpoint: expected an http:// or https:// URL, got {endpoint!r}")
        headers = dict(parse_header(h) for h in header or [])
        _refuse_command_line_secrets(endpoint, headers, db)
        headers |= dict(env_header(h) for h in header_env or [])
        format_hint(response_format)
        out_dir = check_output_dir(output_dir or settings.evaluator.results_dir)
        result = asyncio.run(_main(
            endpoint=endpoint, evals=evals, golden_set=golden_set, set_id=set_id,
            category=category, responses_files=responses,
            concurrency=concurrency or settings.evaluator.concurrency,
            timeout_s=timeout or settings.evaluator.timeout_s,
            retries=settings.evaluator.retries if retries is None else retries,
            output_dir=out_dir, headers=headers,
            response_format=response_format, db=db or settings.postgres.dsn, agent=agent,
            progress=progress and not as_json))
    except Exception as exc:
        fail(exc)
    run_, json_path, txt_path, stored = result
    if as_json:
        json_line({"run_id": str(run_.run_id), "eval_source": run_.eval_source,
                   "agent_id": run_.agent_id, "endpoint": run_.endpoint, "source": run_.source,
                   "started_at": run_.started_at.isoformat(),
                   "finished_at": run_.finished_at.isoformat(),
                   **run_.summary.model_dump(mode="json"),
                   "exit_code": exit_code(run_.summary, fail_on_gates=fail_on_gates),
                   "results_file": str(json_path), "summary_file": str(txt_path),
                   "stored": stored})
    else:
        typer.echo(render_summary(run_), nl=False)
        typer.echo(f"\nresults: {json_path}\nsummary: {txt_path}"
                   + (f"\nstored in PostgreSQL as run {run_.run_id}" if stored else ""))
    raise typer.Exit(exit_code(run_.summary, fail_on_gates=fail_on_gates))
