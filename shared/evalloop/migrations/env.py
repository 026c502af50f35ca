"""Alembic environment: runs the migrations over asyncpg (SQLAlchemy's async engine).

The URL comes from ``config.attributes["dsn"]`` (set by ``evalloop.adapters.postgres.migrate``).
"""

import asyncio

from alembic import context
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

config = context.config
# Services start together (compose, `evalloop up`) and each migrates in its lifespan: a
# session-level advisory lock makes the upgrades take turns, so the second sees head and does
# nothing instead of racing the first into "relation already exists".
_LOCK_KEY = 0x6576616C6C6F6F70  # "evalloop"


def _do_run(connection):  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run() -> None:
    engine = create_async_engine(config.attributes["sqlalchemy_url"])
    async with engine.connect() as conn:
        await conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _LOCK_KEY})
        await conn.commit()
        try:
            await conn.run_sync(_do_run)
            await conn.commit()
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _LOCK_KEY})
            await conn.commit()
    await engine.dispose()


asyncio.run(_run())
