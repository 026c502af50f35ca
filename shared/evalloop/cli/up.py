"""``evalloop up``: run the services against the Kafka and PostgreSQL named by settings.

All services run in one process by default, each as its own FastStream app (its own consumer
group and connections, exactly as it would in its own container) inside one
``asyncio.TaskGroup``, plus the ingest HTTP server and the web app (uvicorn; ports
``settings.ingest.port`` 8080 and ``settings.web.port`` 8090). ``--service NAME`` (repeatable)
runs a subset. Ingest's ``/healthz`` and ``/readyz`` report every service of the process; a
process without ingest that runs a stream service serves only those two routes on
``settings.health.host``/``.port`` (default 127.0.0.1:8081; ``docs/operations.md#supervision``).
SIGINT/SIGTERM stop every service gracefully: services stop their background
work, brokers stop consuming and commit what was handled, pools close. If one service fails,
the others are stopped and ``up`` prints one line per failure and exits with the
``docs/exit-codes.md`` code (3 when the broker, the database or a service could not run; 2 for
bad settings or an unknown service).

Services are found by module path: ``services.<name>.app:build_app(settings)`` returns a
FastStream app; ingest's ``services.ingest.app:build_http_app(settings)`` returns an ASGI app.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import logging
import signal
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import typer

from evalloop.cli._common import describe, exit_code_for, leaf

if TYPE_CHECKING:
    from evalloop.runtime import HealthProvider
    from evalloop.settings import Settings

__all__ = ["SERVICES", "ServiceApp", "health_app", "load_service", "run_services", "up"]

log = logging.getLogger(__name__)

#: Every deployable, in start order; ingest is the HTTP front door, web the people's.
SERVICES: tuple[str, ...] = (
    "ingest", "recorder", "monitor", "triage", "evaluator", "retention", "web",
)
_HTTP = {"ingest": "build_http_app", "web": "build_http_app"}


def _bind(name: str, settings: Settings) -> tuple[str, int]:
    """Host and port of an HTTP service: ``settings.<name>.host`` / ``.port``."""
    section = settings.web if name == "web" else settings.ingest
    return section.host, section.port



@dataclass(frozen=True, slots=True)
class ServiceApp:
    """One loaded service: ``kind`` is ``"stream"`` (FastStream app) or ``"http"`` (ASGI)."""

    name: str
    kind: str
    app: Any


def available_services() -> list[str]:
    """The names in :data:`SERVICES` whose ``services.<name>.app`` module exists."""
    found = []
    for n in SERVICES:
        if importlib.util.find_spec(f"services.{n}") and importlib.util.find_spec(
            f"services.{n}.app"
        ):
            found.append(n)
    return found


def load_service(
    name: str, settings: Settings, *, health: HealthProvider | None = None
) -> ServiceApp:
    """Import ``services.<name>.app`` and build its app from ``settings`` (nothing connects).

    ``health`` (the other services' health) is given to ingest, whose ``/healthz`` and
    ``/readyz`` then report every service of the process.

    Raises:
        typer.BadParameter: ``name`` is not a known service or its module is missing.
    """
    if name not in SERVICES:
        raise typer.BadParameter(f"expected one of {', '.join(SERVICES)}; got {name!r}")
    try:
        module = importlib.import_module(f"services.{name}.app")
    except ModuleNotFoundError as exc:
        if exc.name not in (f"services.{name}", f"services.{name}.app"):
            raise  # a dependency of the service is missing: show the real error
        raise typer.BadParameter(
            f"service {name!r}: module services.{name}.app is missing"
        ) from exc
    if name in _HTTP:
        # ingest's /healthz and /readyz report every service of the process
        kwargs: dict[str, Any] = {"health": health} if name == "ingest" else {}
        return ServiceApp(name, "http", getattr(module, _HTTP[name])(settings, **kwargs))
    return ServiceApp(name, "stream", module.build_app(settings))


def health_app(health: HealthProvider) -> Any:
    """An ASGI app serving only ``GET /healthz`` and ``GET /readyz`` of the services ``health``
    reports, with ingest's bodies and codes (:func:`evalloop.runtime.health_answer`;
    ``docs/operations.md#supervision``).

    Returns:
        A Starlette app; ``/healthz`` answers 200 unless a service stopped (503), ``/readyz``
        503 unless every service is ready. Body: ``{"status", "ready", "services": [...]}``.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    from evalloop.runtime import health_answer

    def answer(readiness: bool) -> JSONResponse:
        code, body = health_answer(True, health(), readiness=readiness)
        return JSONResponse(body, status_code=code)

    async def healthz(request: Request) -> JSONResponse:
        return answer(readiness=False)

    async def readyz(request: Request) -> JSONResponse:
        return answer(readiness=True)

    return Starlette(routes=[Route("/healthz", healthz, methods=["GET"]),
                             Route("/readyz", readyz, methods=["GET"])])


async def _run_stream(svc: ServiceApp, stop: asyncio.Event) -> None:
    app = svc.app
    # What FastStream's own ``app.run()`` does, minus its signal handling (ours covers all apps).
    async with app.lifespan_context():
        await app.start()
        log.info("%s: started", svc.name)
        try:
            await stop.wait()
        finally:
            await app.stop()
            log.info("%s: stopped", svc.name)


class _Uvicorn:
    """A uvicorn server that leaves signal handling to :func:`run_services`."""

    def __init__(self, app: Any, host: str, port: int, **options: Any) -> None:
        import uvicorn

        class Server(uvicorn.Server):
            @contextlib.contextmanager
            def capture_signals(self) -> Iterator[None]:
                yield

        self.server = Server(uvicorn.Config(app, host=host, port=port, lifespan="on",
                                            log_level="info", **options))

    async def run(self, name: str, stop: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as tg:
            serving = tg.create_task(self.server.serve())

            async def stopper() -> None:
                await stop.wait()
                self.server.should_exit = True

            watcher = tg.create_task(stopper())
            try:
                await serving
            except SystemExit as exc:  # uvicorn exits the process when its lifespan fails
                raise RuntimeError(f"{name}: HTTP server failed to start ({exc.code})") from exc
            finally:
                watcher.cancel()
        if not stop.is_set():
            raise RuntimeError(f"{name}: HTTP server stopped on its own")


async def run_services(
    names: list[str], settings: Settings, stop: asyncio.Event | None = None
) -> None:
    """Run the named services until ``stop`` is set or SIGINT/SIGTERM arrives.

    Args:
        names: services to run (see :data:`SERVICES`).
        settings: Kafka, PostgreSQL and per-service settings shared by all of them.
        stop: set it to stop every service (tests); signals set it too.

    Raises:
        ExceptionGroup: a service failed; the others were stopped first.
    """
    stop = stop or asyncio.Event()
    if settings.recorder.process_gc and len(names) > 1:
        # process-wide GC changes by one service would hit the others of this process
        log.warning("evalloop up: recorder.process_gc ignored: %d services share this process",
                    len(names))
        settings = settings.model_copy(update={
            "recorder": settings.recorder.model_copy(update={"process_gc": False})})
    apps: list[ServiceApp] = []

    def process_health() -> list[dict[str, Any]]:
        out = []
        for a in apps:
            getter = getattr(a.app, "evalloop_service", None) if a.kind == "stream" else None
            service = getter() if getter is not None else None
            out.append(service.health() if service is not None else
                       {"service": a.name, "status": "ok" if a.kind == "http" else "starting",
                        "ready": a.kind == "http", "loops": []})
        return [h for h in out if h["service"] != "ingest"]

    apps.extend(load_service(n, settings, health=process_health) for n in names)
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    try:
        async with asyncio.TaskGroup() as tg:
            for svc in apps:
                if svc.kind == "http":
                    from evalloop.adapters.http_server import http_options

                    host, port = _bind(svc.name, settings)
                    server = _Uvicorn(svc.app, host, port, **http_options(svc.name, settings))
                    tg.create_task(server.run(svc.name, stop), name=svc.name)
                else:
                    tg.create_task(_run_stream(svc, stop), name=svc.name)
            if "ingest" not in names and any(a.kind == "stream" for a in apps):
                # no ingest to report the process's health: serve /healthz and /readyz alone
                server = _Uvicorn(health_app(process_health), settings.health.host,
                                  settings.health.port, access_log=False)
                tg.create_task(server.run("health", stop), name="health")
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)


_SERVICE_HELP = f"run only this service (repeatable): {', '.join(SERVICES)}; default: all"


def up(
    service: Annotated[
        list[str] | None, typer.Option("--service", "-s", metavar="<str>", help=_SERVICE_HELP)
    ] = None,
) -> None:
    """Run the services against the Kafka and PostgreSQL named by settings (env EVALLOOP_*).

    Example: EVALLOOP_KAFKA__BOOTSTRAP=127.0.0.1:9092 EVALLOOP_POSTGRES__DSN=postgresql://...
    evalloop up. Stop with Ctrl-C (or SIGTERM): services drain and commit before exiting.
    """
    from evalloop.adapters.kafka import ensure_topics
    from evalloop.runtime import topics_for
    from evalloop.settings import Settings

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    try:
        settings = Settings()
        names = list(service) if service else available_services()
        unknown = [n for n in names if n not in SERVICES]
        if unknown:
            raise typer.BadParameter(f"expected one of {', '.join(SERVICES)}; got "
                                     f"{', '.join(map(repr, unknown))}", param_hint="--service")
        typer.echo(f"evalloop up: {', '.join(names)} (Kafka {settings.kafka.bootstrap})",
                   err=True)
        # Fail early, in one line, when the broker is unreachable: otherwise each app fails in
        # its own start-up (uvicorn prints a lifespan traceback for ingest).
        asyncio.run(ensure_topics(settings.kafka, topics_for(settings)))
        asyncio.run(run_services(names, settings))
    except typer.BadParameter:
        raise
    except Exception as exc:
        errors = [leaf(e) for e in exc.exceptions] if isinstance(exc, BaseExceptionGroup) \
            else [exc]
        for err in errors:
            typer.echo(f"evalloop up: {describe(err)}", err=True)
        raise typer.Exit(max(exit_code_for(e) for e in errors)) from None
