"""Migration 0031 sums the weekly counters (grain `k`) of existing rollups from their daily rows: the same
rows the recording transactions keep, on both engines (its SQL spells a week as each engine stores it)."""

from __future__ import annotations

import datetime as dt
import importlib
from typing import Any

from alembic.migration import MigrationContext
from alembic.operations import Operations
from sqlalchemy import text

from outreach_core.kernel.runtime import Runtime
from tests.analytics.conftest import NOW
from tests.analytics.ledger import Ledger


async def test_migration_0031_gives_the_weeks_the_recording_keeps(ledger: Ledger, runtime: Runtime) -> None:
    box = await ledger.mailbox()
    campaign, _ = await ledger.campaign()
    at = NOW - dt.timedelta(days=60)
    while at < NOW:  # 60 days: weeks whole and cut by the period, in every hour of the day
        await ledger.send(campaign, await ledger.lead(), box, at=at)
        at += dt.timedelta(hours=53, minutes=11)
    await ledger.won(await ledger.lead(), NOW - dt.timedelta(days=9), campaign)
    kept = await ledger.counters()
    weeks = [r for r in kept if r[3] == "k"]
    assert len(weeks) >= 8

    migration = importlib.import_module("outreach_core.kernel.db.migrations.versions.0031_analytics_weeks")

    def upgrade(sync_conn: Any) -> None:
        with Operations.context(MigrationContext.configure(sync_conn)):
            migration.upgrade()

    async with runtime.engine.begin() as conn:  # every workspace's weeks, as before the migration
        await conn.execute(text("DELETE FROM analytics_counters WHERE grain = 'k'"))
        await conn.run_sync(upgrade)
    assert await ledger.counters() == kept
    # the migrated buckets are spelled as the recording writes them: a later send adds to its week's row
    await ledger.send(campaign, await ledger.lead(), box, at=NOW - dt.timedelta(hours=1))
    after = [r for r in await ledger.counters() if r[3] == "k"]
    assert len(after) == len(weeks)
    assert sum(r[5] for r in after if r[0] == "w") == sum(r[5] for r in weeks if r[0] == "w") + 1
