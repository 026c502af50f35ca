"""Alembic environment: runs the migrations over asyncpg (SQLAlchemy's async engine).

The URL comes from ``config.attributes["dsn"]`` (set by ``evalloop.adapters.postgres.migrate``).
"""

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

config = context.config


def _do_run(connection):  # type: ignore[no-untyped-def]
    context.configure(connection=connection, target_metadata=None, transaction_per_migration=True)
    with context.begin_transaction():
        context.run_migrations()


async def _run() -> None:
    engine = create_async_engine(config.attributes["sqlalchemy_url"])
    async with engine.connect() as conn:
        await conn.run_sync(_do_run)
        await conn.commit()
    await engine.dispose()


asyncio.run(_run())
