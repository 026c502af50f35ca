"""The house rules the code itself can check (docs/operations.md#layout-rules): one mapping
of PostgreSQL errors, SQL only in stores, no private attributes of libraries, no
process-wide GC changes outside the recorder's opt-in."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted([*(ROOT / "shared" / "evalloop").rglob("*.py"),
                  *(ROOT / "services").rglob("*.py")])


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _hits(pattern: str, paths: list[Path]) -> list[str]:
    """``path: line`` of every line of ``paths`` matching ``pattern``."""
    rx = re.compile(pattern)
    return [f"{_rel(p)}: {line.strip()}" for p in paths
            for line in p.read_text().splitlines() if rx.search(line)]


def test_postgres_errors_are_mapped_in_one_place() -> None:
    assert _hits(r"asyncpg\.(PostgresError|InterfaceError)", SOURCES) == [
        "shared/evalloop/adapters/postgres.py: asyncpg.PostgresError, asyncpg.InterfaceError, "
        "OSError,",
    ]


def test_no_sql_in_services() -> None:
    services = sorted((ROOT / "services").rglob("*.py"))
    sql = r"\"\s*(SELECT\s|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM)|\.(fetch|fetchrow|" \
          r"fetchval|execute|executemany)\("
    assert _hits(sql, services) == []


def test_no_private_attributes_of_libraries() -> None:
    assert _hits(r"getattr\(.*[\"']_[a-z]\w*[\"']|\.config\.producer", SOURCES) == []


def test_process_wide_gc_changes_only_in_the_recorders_opt_in() -> None:
    assert _hits(r"gc\.(freeze|set_threshold|disable)\(", SOURCES) == [
        "services/recorder/service.py: gc.set_threshold(gen0_threshold, gen1, gen2)",
        "services/recorder/service.py: gc.freeze()",
    ]
