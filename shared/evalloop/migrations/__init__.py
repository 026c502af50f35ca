"""Alembic migrations (raw SQL). ``execute_script`` runs a multi-statement script one statement
at a time, since asyncpg prepares each statement and refuses several in one."""

import re

_STATEMENT_END = re.compile(r";\s*(?:--[^\n]*)?\n|;\s*$")


def split_sql(script: str) -> list[str]:
    """Split ``script`` at statement-ending semicolons, keeping ``$$``-quoted bodies whole."""
    out: list[str] = []
    buf: list[str] = []
    for i, chunk in enumerate(script.split("$$")):
        if i % 2:  # inside a dollar-quoted body
            buf.append("$$" + chunk + "$$")
            continue
        parts = _STATEMENT_END.split(chunk)
        buf.append(parts[0])
        for part in parts[1:]:
            out.append("".join(buf))
            buf = [part]
    out.append("".join(buf))
    stripped = (re.sub(r"^\s*--[^\n]*\n", "", s, flags=re.M).strip() for s in out)
    return [s for s in stripped if s]


def execute_script(script: str) -> None:
    """Run every statement of ``script`` in the current migration's transaction."""
    from alembic import op

    for statement in split_sql(script):
        op.execute(statement)
