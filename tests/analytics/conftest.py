"""Analytics tests: hand-built ledgers (`ledger.py`) read through a runtime on the session database whose
clock the test sets."""

from __future__ import annotations

import datetime as dt
from collections.abc import AsyncIterator
from typing import Any

import pytest

from outreach_core.analytics.operations import (
    get_analytics_overview,
    get_campaign_analytics,
    get_campaign_breakdown,
    get_campaign_stats,
)
from outreach_core.analytics.schemas import (
    BreakdownQuery,
    CampaignAnalyticsQuery,
    OverviewQuery,
    StatsQuery,
)
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from tests.analytics.ledger import Ledger
from tests.conftest import MakeWorkspace

NOW = dt.datetime(2026, 3, 31, 12, 0, tzinfo=dt.UTC)
"""A Tuesday, two days after Europe's change to summer time (Sunday 29 March 2026, 01:00 UTC)."""


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(NOW)


@pytest.fixture
async def clocked(runtime: Runtime, clock: FixedClock) -> AsyncIterator[Runtime]:
    yield Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=clock))


class Reader:
    def __init__(self, runtime: Runtime, ledger: Ledger) -> None:
        self.runtime, self.ledger = runtime, ledger

    async def _read(self, op: Any, **kwargs: Any) -> Any:
        return await self.runtime.read(await self.ledger.ws.principal(), op, **kwargs)

    async def overview(self, days: int = 7) -> Any:
        return await self._read(get_analytics_overview, query=OverviewQuery(days=days))  # type: ignore[arg-type]

    async def stats(self, days: int = 7, campaign_id: str | None = None) -> Any:
        return await self._read(get_campaign_stats, query=StatsQuery(days=days, campaignId=campaign_id))  # type: ignore[arg-type]

    async def analytics(self, days: int = 7) -> Any:
        return await self._read(get_campaign_analytics, query=CampaignAnalyticsQuery(days=days))  # type: ignore[arg-type]

    async def breakdown(self, campaign_id: str) -> Any:
        return await self._read(get_campaign_breakdown, id=campaign_id, query=BreakdownQuery())


@pytest.fixture
async def ledger(make_workspace: MakeWorkspace) -> Ledger:
    return Ledger(await make_workspace())


@pytest.fixture
def reader(clocked: Runtime, ledger: Ledger) -> Reader:
    return Reader(clocked, ledger)
