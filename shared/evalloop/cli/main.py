"""The ``evalloop`` command: one entry point, one sub-command module per capability.

Sub-commands are imported when they run, not when ``evalloop`` starts: ``evalloop --help`` lists
them from :data:`LAZY_COMMANDS` without importing any (their modules pull in asyncpg,
FastStream, scipy...). Every command follows ``docs/exit-codes.md``; :func:`main` turns the
errors that reach it into one line and that table's code, never a traceback.
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer.core import TyperCommand, TyperGroup

__all__ = ["LAZY_COMMANDS", "LazyCommand", "app", "main"]


@dataclass(frozen=True, slots=True)
class LazyCommand:
    """A sub-command loaded on first use.

    Attributes:
        target: ``"module:attribute"``; the attribute is a ``typer.Typer`` (a command group)
            or a command function.
        help: the one-line help ``evalloop --help`` shows (kept equal to the command's own by
            ``tests/unit/test_cli_main.py``).
    """

    target: str
    help: str

    def load(self, name: str) -> Any:
        """Import the target and build its click command named ``name`` (what
        ``app.add_typer(target, name=name)`` / ``app.command(name)(target)`` would build)."""
        module, _, attribute = self.target.partition(":")
        obj = getattr(importlib.import_module(module), attribute)
        parent = typer.Typer()
        if isinstance(obj, typer.Typer):
            parent.add_typer(obj, name=name)
        else:
            parent.command(name)(obj)
            parent.command("_")(_placeholder)  # two commands: typer builds a group
        group = typer.main.get_command(parent)
        assert isinstance(group, TyperGroup)
        return group.commands[name]


def _placeholder() -> None:  # pragma: no cover - never invoked
    """Never run: only makes the wrapper Typer a group."""


#: Every sub-command, in the order ``evalloop --help`` lists them.
LAZY_COMMANDS: dict[str, LazyCommand] = {
    "demo": LazyCommand("evalloop.cli.demo:demo",
                        "Run the whole loop in one process on replayed FeedbackQA/tau-bench "
                        "feedback and report what it found (events, negative rates, "
                        "re-evaluations and their runs, clusters, candidates)."),
    "replay": LazyCommand("evalloop.cli.replay:replay",
                          "Replay FeedbackQA and tau-bench as production feedback events (times "
                          "assigned here)."),
    "up": LazyCommand("evalloop.cli.up:up",
                      "Run the services against the Kafka and PostgreSQL named by settings (env "
                      "EVALLOOP_*)."),
    "queue": LazyCommand("evalloop.cli.queue:app", "Golden-set candidates awaiting review."),
    "eval": LazyCommand("evalloop.cli.eval_cmd:app",
                        "Run eval sets against an agent, or score canned responses."),
    "golden": LazyCommand("evalloop.cli.golden:app",
                          "Versioned golden sets (import, list, export, care, reminders, verify)."),
    "jobs": LazyCommand("evalloop.cli.jobs:app", "Re-evaluation jobs: why, status, result."),
    "agent": LazyCommand("evalloop.cli.agent:app",
                         "Run the reference agent (a real retrieval agent)."),
    "schemas": LazyCommand("evalloop.cli.schemas:app",
                           "Generate or check schemas/ (JSON Schema, AsyncAPI)."),
    "keys": LazyCommand("evalloop.cli.keys:app", "API keys of the ingest service."),
    "prune": LazyCommand("evalloop.cli.privacy:prune",
                         "Delete what is older than the retention settings "
                         "(EVALLOOP_RETENTION__*_DAYS) allow."),
    "erase": LazyCommand("evalloop.cli.privacy:erase",
                         "Remove a person's text everywhere: events, negative cases, monitor "
                         "turns, triage cases, the review queue (the candidate outbox); golden "
                         "cases confirmed from those conversations are redacted in every "
                         "version, and so are their review audit rows and the eval results of "
                         "runs over them. Prints rows deleted per table and rows redacted per "
                         "table."),
    "web": LazyCommand("evalloop.cli.web:web",
                       "Serve the web app: every agent's feedback loop, the review queue, golden "
                       "sets and eval runs (docs/web.md)."),
    "users": LazyCommand("evalloop.cli.web:users_app",
                         "Web app users: create, list, issue API tokens (docs/web.md)."),
    "judge": LazyCommand("evalloop.cli.judge:app", "The LLM judge: calibration and its table."),
    "gate": LazyCommand("evalloop.cli.readiness:gate_app",
                        "The production gate. `evalloop gate RUN [--json] [--sample N] "
                        "[--conditional-exit 0|1]` decides GO / CONDITIONAL GO / NO-GO (exit 0 / "
                        "configurable / 1; `evalloop gate decide --help` lists its options); "
                        "checkpoint and sample record the manual checks."),
    "deploy": LazyCommand("evalloop.cli.readiness:deploy_app",
                          "Record deployments (baseline candidates)."),
    "baseline": LazyCommand("evalloop.cli.readiness:baseline_app",
                            "Pin the run regression compares with."),
    "report": LazyCommand("evalloop.cli.readiness:report_app", "Reports: hallucinations."),
    "ab": LazyCommand("evalloop.cli.readiness:ab",
                      "Run the same cases against A and B at the same time, judge both, and "
                      "report per dimension both means, the paired difference with its interval "
                      "and p-value, the most divergent cases with both answers, and which version "
                      "is better and by how much."),
}


class _LazyGroup(TyperGroup):
    """A Typer group that imports a sub-command only when it is run (or completed).

    (Typer ships its own copy of click, so contexts and commands are typed ``Any`` here.)
    """

    def list_commands(self, ctx: Any) -> list[str]:
        eager = super().list_commands(ctx)
        return [*LAZY_COMMANDS, *(n for n in eager if n not in LAZY_COMMANDS)]

    def _load(self, name: str) -> Any:
        if name not in self.commands and name in LAZY_COMMANDS:
            self.add_command(LAZY_COMMANDS[name].load(name), name)
        return self.commands.get(name)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name in self.commands or cmd_name not in LAZY_COMMANDS:
            return super().get_command(ctx, cmd_name)
        if ctx.resilient_parsing:  # shell completion needs the real thing
            return self._load(cmd_name)
        # listing the commands in --help: a stand-in with the help text, nothing imported
        spec = LAZY_COMMANDS[cmd_name]
        return TyperCommand(cmd_name, help=spec.help, short_help=spec.help)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        if args:
            self._load(args[0])
        return super().resolve_command(ctx, args)

app = typer.Typer(
    name="evalloop",
    help="The feedback loop that keeps production LLM agents honest.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    cls=_LazyGroup,
)

def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            print(f"evalloop {version('evalloop')}")
        except PackageNotFoundError:  # run from a source tree that was never installed
            print("evalloop (version unknown: the package is not installed)")
        raise typer.Exit(0)


@app.callback()
def _root(
    show_version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the installed evalloop version and exit.")] = False,
) -> None:
    """The feedback loop that keeps production LLM agents honest."""


def main(argv: list[str] | None = None) -> None:
    """Run the ``evalloop`` command; an error prints one line, never a traceback.

    Exit codes follow ``docs/exit-codes.md``: commands exit 0/1 themselves; errors that reach
    here exit 2 (usage or bad input) or 3 (infrastructure, or unexpected: the line says which
    error it was), see :func:`evalloop.cli._common.exit_code_for`.
    """
    from typer._click import exceptions as click_errors
    from typer.exceptions import Abort

    if not sys.stdout.isatty() and not os.environ.get("COLUMNS") \
            and not os.environ.get("TERMINAL_WIDTH"):
        # help piped or captured: Rich would lay it out at 80 columns and cut the docs links
        # in it ("docs/rules.md#eva..."); 120 keeps them whole (a terminal keeps its width)
        os.environ["COLUMNS"] = "120"
    try:
        rv = app(args=argv, prog_name="evalloop", standalone_mode=False)
    except SystemExit:
        raise
    except click_errors.NoArgsIsHelpError as exc:  # `evalloop` or a group alone: its help
        from typer import rich_utils

        rich_utils.rich_format_error(exc)
        sys.exit(exc.exit_code)
    except click_errors.UsageError as exc:
        # one line, as docs/exit-codes.md promises, instead of Click's boxed usage block
        ctx = exc.ctx
        where = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        print(f"error: {' '.join(exc.format_message().split())}{where}", file=sys.stderr)
        sys.exit(2)
    except click_errors.ClickException as exc:
        print(f"error: {' '.join(exc.format_message().split())}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except Abort:
        print("error: aborted (no input)", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("evalloop: interrupted", file=sys.stderr)
        sys.exit(130)
    except BaseException as exc:
        from evalloop.cli._common import describe, exit_code_for, expected

        prefix = "error" if expected(exc) else "error (unexpected)"
        print(f"{prefix}: {describe(exc)}", file=sys.stderr)
        sys.exit(exit_code_for(exc))
    sys.exit(rv if type(rv) is int else 0)  # an Exit's code; a command returns None


if __name__ == "__main__":
    main()
