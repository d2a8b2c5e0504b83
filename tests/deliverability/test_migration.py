"""Migration 0023_domains: the domains of mailboxes connected before it become sending domains, due for the
`domains` worker's first check; downgrading removes them again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic import command
from sqlalchemy import text

from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.deliverability.operations import list_domains
from outreach_core.kernel.db.migrate import alembic_config, migrate
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.workspace.setup import init_workspace
from tests.conftest import WorkspaceHandle
from tests.mailboxes.helpers import seed_mailbox


async def test_mailboxes_connected_before_become_sending_domains(tmp_path: Path) -> None:
    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32))
    try:
        await migrate(rt.engine, "0022")
        made = await rt.system(init_workspace, email="o@example.com", name="O", workspace="W", plan="growth")
        ws = WorkspaceHandle(
            rt, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", "o@example.com"
        )
        for email in ("ann@old-sender.com", "bob@old-sender.com", "cy@other-sender.com"):
            await seed_mailbox(ws, email)
        await migrate(rt.engine)
        principal = await rt.system_read(authenticate_api_key, made.apiKey)
        items = await rt.read(principal, list_domains)
        assert [(i.domain, i.mailboxes, i.report, i.history) for i in items] == [
            ("old-sender.com", 2, None, []),
            ("other-sender.com", 1, None, []),
        ]
        async with rt.engine.connect() as conn:
            due = await conn.execute(
                text("SELECT count(*) FROM sending_domains WHERE next_check_at IS NOT NULL")
            )
            assert due.scalar_one() == 2

        def downgrade(sync_conn: Any) -> None:
            command.downgrade(alembic_config(sync_conn), "0022")

        async with rt.engine.begin() as conn:
            await conn.run_sync(downgrade)
        async with rt.engine.connect() as conn:
            tables = await conn.execute(text("SELECT name FROM sqlite_master WHERE name = 'sending_domains'"))
            assert tables.first() is None
    finally:
        await rt.dispose()
