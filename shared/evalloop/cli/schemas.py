"""``evalloop schemas generate|check``: the generated contract files under ``schemas/``.

* ``schemas/events/<event>.json``: JSON Schema (pydantic, validation mode) of every wire event:
  each feedback event type, the ``FeedbackEvent`` union, and the derived events.
* ``schemas/asyncapi/<service>.json``: the AsyncAPI 3.0 document FastStream builds from each
  service's app (``app.schema.to_specification()``, what ``faststream docs gen`` writes). Ingest
  is an HTTP service; its document declares the topic it publishes to.

Output is deterministic (sorted keys, two-space indent, trailing newline) and built from default
settings only (the environment and ``.env`` are ignored), so a regenerated tree equals the
committed one unless a model or a service changed. Nothing connects to a broker.
``tests/unit/test_schemas.py`` fails when the committed files are stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from pydantic import TypeAdapter

from evalloop import events
from evalloop.settings import Settings

__all__ = ["EVENT_MODELS", "app", "check", "generate", "render"]

app = typer.Typer(no_args_is_help=True, help="Generate or check schemas/ (JSON Schema, AsyncAPI).")

#: File stem -> model (or union) of every event on the wire (``evalloop.events``).
EVENT_MODELS: dict[str, Any] = {
    "agent_response": events.AgentResponse,
    "user_rating": events.UserRating,
    "operator_correction": events.OperatorCorrection,
    "escalation": events.Escalation,
    "safety_trigger": events.SafetyTrigger,
    "conversation_outcome": events.ConversationOutcome,
    "agent_changed": events.AgentChanged,
    "feedback_event": events.FeedbackEvent,
    "negative_case": events.NegativeCase,
    "reeval_requested": events.ReevalRequested,
    "reeval_completed": events.ReevalCompleted,
    "candidate_proposed": events.CandidateProposed,
    "golden_set_published": events.GoldenSetPublished,
}

_DEFAULT_ROOT = Path("schemas")


class _DefaultSettings(Settings):
    """Settings from defaults only: generated files must not depend on who generates them."""

    @classmethod
    def settings_customise_sources(  # type: ignore[override]
        cls, settings_cls: type[Settings], init_settings: Any, *args: Any, **kwargs: Any
    ) -> tuple[Any, ...]:
        return (init_settings,)


def _dumps(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _ingest_app(settings: Settings) -> Any:
    """A FastStream app that only describes ingest's Kafka side (it publishes feedback events)."""
    from faststream import AsyncAPI, FastStream

    from evalloop.adapters.kafka import build_broker
    from evalloop.runtime import topics_for

    broker = build_broker(settings.kafka)
    topic = topics_for(settings).feedback_events
    broker.publisher(
        topic, schema=events.FeedbackEvent, title=f"{topic}:ingest:publish",
        description="Validated events from POST /v1/events, keyed by agent_id.",
    )
    return FastStream(
        broker,
        specification=AsyncAPI(
            title="evalloop ingest", version="1.0.0",
            description="HTTP ingest: POST /v1/events validates feedback events and produces "
            "them to Kafka.",
        ),
    )


def _service_apps(settings: Settings) -> dict[str, Any]:
    from evalloop.cli.up import available_services, load_service

    apps: dict[str, Any] = {}
    for name in available_services():
        svc = load_service(name, settings)
        apps[name] = _ingest_app(settings) if svc.kind == "http" else svc.app
    return apps


def render() -> dict[str, str]:
    """Every generated file: path relative to ``schemas/`` -> content.

    Returns:
        ``{"events/<name>.json": ..., "asyncapi/<service>.json": ...}``, content as text.
    """
    files = {
        f"events/{name}.json": _dumps(TypeAdapter(model).json_schema(mode="validation"))
        for name, model in EVENT_MODELS.items()
    }
    for name, fs_app in _service_apps(_DefaultSettings()).items():
        doc = fs_app.schema.to_specification().to_jsonable()
        _document_payloads(doc, getattr(fs_app, "evalloop_payloads", {}))
        files[f"asyncapi/{name}.json"] = _dumps(doc)
    return files


def _document_payloads(doc: dict[str, Any], payloads: dict[str, Any]) -> None:
    """Replace each subscriber's payload schema (FastStream sees the handlers' raw ``bytes``)
    by the JSON Schema of the model the service declares (``runtime.Consumes.payload``)."""
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    for title, model in payloads.items():
        if model is bytes:
            continue
        schema = TypeAdapter(model).json_schema(
            mode="validation", ref_template="#/components/schemas/{model}"
        )
        schemas.update(schema.pop("$defs", {}))
        schemas[f"{title}:Message:Payload"] = schema


def _existing(root: Path) -> set[str]:
    return {
        str(p.relative_to(root))
        for sub in ("events", "asyncapi")
        for p in (root / sub).glob("*.json")
    }


def stale_files(root: Path) -> list[str]:
    """Paths under ``root`` that differ from :func:`render`, are missing, or are left over."""
    files = render()
    out = [
        rel for rel, text in files.items()
        if not (root / rel).is_file() or (root / rel).read_text(encoding="utf-8") != text
    ]
    return sorted(out + sorted(_existing(root) - set(files)))


@app.command()
def generate(
    root: Path = typer.Option(_DEFAULT_ROOT, help="the schemas/ directory"),  # noqa: B008
) -> None:
    """Write every JSON Schema and AsyncAPI file under ROOT (and remove left-over ones)."""
    files = render()
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    for rel in sorted(_existing(root) - set(files)):
        (root / rel).unlink()
    typer.echo(f"wrote {len(files)} files under {root}/")


@app.command()
def check(
    root: Path = typer.Option(_DEFAULT_ROOT, help="the schemas/ directory"),  # noqa: B008
) -> None:
    """Exit 1 listing the files under ROOT that `generate` would change."""
    stale = stale_files(root)
    if stale:
        typer.echo("stale schema files (run `evalloop schemas generate`):", err=True)
        for rel in stale:
            typer.echo(f"  {root / rel}", err=True)
        raise typer.Exit(1)
    typer.echo(f"{root}/ is up to date")
