"""Apply Alembic migrations programmatically (used by `outreach migrate`, `outreach serve` and tests)."""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config(connection: Connection | None = None) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


async def migrate(engine: AsyncEngine, revision: str = "head") -> None:
    """Upgrade the database behind `engine` to `revision`, in one transaction."""

    def _upgrade(sync_conn: Connection) -> None:
        command.upgrade(alembic_config(sync_conn), revision)

    async with engine.begin() as conn:
        await conn.run_sync(_upgrade)
