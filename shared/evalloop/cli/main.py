"""The ``evalloop`` command: one entry point, one sub-command module per capability."""

from __future__ import annotations

import typer

from evalloop.cli import agent, demo, eval_cmd, golden, jobs, queue, replay, schemas, up

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

if __name__ == "__main__":
    app()
