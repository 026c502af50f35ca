"""``evalloop agent``: run the reference agent over HTTP.

    evalloop agent serve --kb hr --port 8000 --format openai
    evalloop agent serve --kb feedbackqa-who --full --format anthropic
    evalloop agent serve --kb hr --weak            # the deliberately regressed configuration
    AGENT_TOKEN=... evalloop agent serve --token-env AGENT_TOKEN   # require a bearer token
"""

from __future__ import annotations

import os

import typer

app = typer.Typer(no_args_is_help=True, help="Run the reference agent (a real retrieval agent).")


@app.command()
def serve(
    kb: str = typer.Option("hr", help="knowledge base: hr | feedbackqa-<australia|cdc|uk|who>"),
    host: str = typer.Option("127.0.0.1", help="bind address"),
    port: int = typer.Option(8000, help="TCP port"),
    format: str = typer.Option(
        "json", "--format",
        help="default reply format: openai | openai-sse | anthropic | json | text",
    ),
    weak: bool = typer.Option(False, help="the deliberately weaker configuration"),
    full: bool = typer.Option(False, help="FeedbackQA: load every passage from ../shared/data"),
    delay_ms: float = typer.Option(0.0, help="simulated model latency per reply, milliseconds"),
    token_env: str | None = typer.Option(
        None, help="environment variable holding a bearer token the agent then requires "
        "(the token itself never goes on the command line: docs/security.md#agent-endpoints)",
    ),
) -> None:
    """Serve the reference agent: POST {"messages": [...]} to / ; GET /healthz."""
    import uvicorn

    from evalloop.agent import FORMATS, KB_NAMES, AgentConfig, ReferenceAgent, build_agent_app
    from evalloop.agent.kb import shared_data_dir

    if kb not in KB_NAMES:
        raise typer.BadParameter(f"expected one of {list(KB_NAMES)}; got {kb!r}", param_hint="--kb")
    if format not in FORMATS:
        raise typer.BadParameter(f"expected one of {list(FORMATS)}; got {format!r}",
                                 param_hint="--format")
    if full and (kb == "hr" or shared_data_dir() is None):
        raise typer.BadParameter(
            "expected a FeedbackQA knowledge base and ../shared/data beside the project "
            f"(--full loads its passages); got --kb {kb}"
            + ("" if kb == "hr" else " and no ../shared/data"),
            param_hint="--full",
        )
    token = None
    if token_env is not None:
        token = os.environ.get(token_env)
        if not token:
            raise typer.BadParameter(f"the environment variable {token_env} is not set or empty",
                                     param_hint="--token-env")
    agent = ReferenceAgent(AgentConfig(kb=kb, weak=weak, full_kb=full))
    typer.echo(
        f"reference agent {agent.config.version}: {len(agent.chunks)} chunks, "
        f"default format {format}, http://{host}:{port}/"
        + (f" (bearer token from {token_env} required)" if token else "")
    )
    uvicorn.run(
        build_agent_app(agent, default_format=format, delay_s=delay_ms / 1000,  # type: ignore[arg-type]
                        token=token),
        host=host, port=port, log_level="warning",
    )
