"""The ``evalloop`` command: one entry point, one sub-command module per capability."""

from __future__ import annotations

import sys

import typer
from pydantic import ValidationError

from evalloop.cli import agent, demo, eval_cmd, golden, jobs, queue, replay, schemas, up
from evalloop.cli import judge as judge_cmd
from evalloop.cli import readiness as readiness_cmd

app = typer.Typer(
    name="evalloop",
    help="The feedback loop that keeps production LLM agents honest.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
app.command("demo")(demo.demo)
app.command("replay")(replay.replay)
app.command("up")(up.up)
app.add_typer(queue.app, name="queue")
app.add_typer(eval_cmd.app, name="eval")
app.add_typer(golden.app, name="golden")
app.add_typer(jobs.app, name="jobs")
app.add_typer(agent.app, name="agent")
app.add_typer(schemas.app, name="schemas")
app.add_typer(judge_cmd.app, name="judge")
app.add_typer(readiness_cmd.gate_app, name="gate")
app.add_typer(readiness_cmd.deploy_app, name="deploy")
app.add_typer(readiness_cmd.baseline_app, name="baseline")
app.add_typer(readiness_cmd.report_app, name="report")
app.command("ab")(readiness_cmd.ab)



def main() -> None:
    """Run the ``evalloop`` command; expected failures print one line, not a traceback.

    Bad settings (pydantic ``ValidationError``) and evalloop's own errors (``EvalloopError``,
    e.g. a placeholder DSN, an unreachable database or broker) exit with status 2.
    """
    from evalloop.errors import EvalloopError

    try:
        app(standalone_mode=True)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or '(settings)'}: {e['msg']} (got {e.get('input')!r})"
            for e in exc.errors(include_url=False)
        )
        print(f"error: invalid settings (EVALLOOP_* environment or .env): {problems}",
              file=sys.stderr)
        sys.exit(2)
    except EvalloopError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
