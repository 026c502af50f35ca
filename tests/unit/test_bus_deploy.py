"""docker-compose.yml and the Dockerfile: parse, gate on health, and run commands that exist.

Docker is not available where tests run, so the stack is checked statically: the YAML parses,
Kafka and PostgreSQL have health checks that every service waits for, each container's
command names a module (and factory) that exists in this checkout, and every service container
has a health check on its ``/healthz``.
"""

from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path
from typing import Any

import pytest
import yaml

from evalloop.cli.up import available_services
from evalloop.settings import HealthSettings

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    """The parsed compose file (YAML anchors and merge keys resolved)."""
    data: dict[str, Any] = yaml.safe_load((REPO / "docker-compose.yml").read_text())
    return data


def _target(command: list[str]) -> tuple[str, str | None]:
    """(module, attribute) a container command runs."""
    if command[:3] == ["evalloop", "up", "--service"] and len(command) == 4:
        return f"services.{command[3]}.app", "build_app"  # what ``load_service`` imports
    if command[:2] == ["python", "-m"]:
        return command[2], None
    raise AssertionError(f"unexpected command {command}")


def test_infrastructure_has_health_checks(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert services["kafka"]["image"].startswith("apache/kafka:4.")
    assert services["kafka"]["environment"]["KAFKA_PROCESS_ROLES"] == "broker,controller"
    assert services["postgres"]["image"].startswith(("pgvector/pgvector:pg17", "postgres:17"))
    for name in ("kafka", "postgres"):
        assert services[name]["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL")


def test_every_service_has_a_container_with_an_existing_entry_point(
    compose: dict[str, Any],
) -> None:
    services = compose["services"]
    app_containers = {n: s for n, s in services.items() if "build" in s}
    assert set(available_services()) <= set(app_containers)
    for name, svc in app_containers.items():
        module, attr = _target(svc["command"])
        assert module.startswith(f"services.{name}"), (name, module)
        assert importlib.util.find_spec(module) is not None, f"{name}: {module} is missing"
        if attr is not None:
            assert callable(getattr(importlib.import_module(module), attr)), (name, attr)
        env = svc["environment"]
        assert env["EVALLOOP_KAFKA__BOOTSTRAP"] == "kafka:9092"
        assert env["EVALLOOP_POSTGRES__DSN"].startswith("postgresql://evalloop:")
        assert svc["depends_on"] == {
            "kafka": {"condition": "service_healthy"},
            "postgres": {"condition": "service_healthy"},
        }


def test_every_service_container_has_a_health_check_on_its_healthz(
    compose: dict[str, Any],
) -> None:
    """docs/operations.md#supervision: stream services answer on the health port (8081)."""
    services = compose["services"]
    for name in ("recorder", "monitor", "triage", "evaluator", "retention"):
        assert services[name]["command"] == ["evalloop", "up", "--service", name]
        assert "ports" not in services[name]
        test = services[name]["healthcheck"]["test"]
        assert test[0] == "CMD" and "'http://127.0.0.1:8081/healthz'" in test[-1], name
    assert "'http://127.0.0.1:8080/healthz'" in services["ingest"]["healthcheck"]["test"][-1]
    assert "'http://127.0.0.1:8090/healthz'" in services["web"]["healthcheck"]["test"][-1]
    assert HealthSettings().port == 8081 and HealthSettings().host == "127.0.0.1"


def test_dockerfile_installs_the_project_on_python_311_slim() -> None:
    lines = (REPO / "Dockerfile").read_text().splitlines()
    assert [s for s in lines if s.startswith("FROM")] == ["FROM python:3.11-slim"]
    assert any(s.strip().startswith("RUN pip install .") for s in lines)


def test_only_ingest_and_the_web_app_are_published(compose: dict[str, Any]) -> None:
    """Kafka and PostgreSQL stay on the compose network (docs/security.md#network)."""
    published = {n: s["ports"] for n, s in compose["services"].items() if "ports" in s}
    assert published == {"ingest": ["8080:8080"]} or (
        set(published) == {"ingest", "web"} and published["web"] == ["8090:8090"])
    assert "HOST://" not in str(compose["services"]["kafka"]["environment"])


def test_compose_has_no_default_database_password() -> None:
    text = (REPO / "docker-compose.yml").read_text()
    assert ":-evalloop-dev" not in text
    assert text.count("${POSTGRES_PASSWORD:?") == 2  # the server and every service's DSN
