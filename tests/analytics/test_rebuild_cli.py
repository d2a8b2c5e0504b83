"""`outreach analytics rebuild` as an operator runs it: a real process on the session database, one JSON
line per workspace, the counters it writes equal to the ones the transactions kept; an unknown workspace
is `not_found` with exit code 1."""

from __future__ import annotations

import datetime as dt
import json

from outreach_core.kernel.settings import Settings
from tests.analytics.ledger import Ledger
from tests.conftest import MakeWorkspace
from tests.test_cli import run_cli


async def test_rebuild_command(make_workspace: MakeWorkspace, settings: Settings) -> None:
    ledger = Ledger(await make_workspace())
    box = await ledger.mailbox()
    campaign, variants = await ledger.campaign([1])
    at = dt.datetime(2026, 3, 30, 9, 15, tzinfo=dt.UTC)
    sent = await ledger.send(campaign, await ledger.lead(country="DE"), box, at=at, variant_id=variants[0][0])
    await ledger.reply(sent, at=at + dt.timedelta(hours=5), label="positive")
    kept = await ledger.counters()

    done = run_cli(settings, "analytics", "rebuild", "--workspace", ledger.ws.slug)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.strip().splitlines()
    assert json.loads(line) == {"workspaceId": ledger.ws.workspace_id, "sends": 1, "replies": 1, "won": 0}
    assert await ledger.counters() == kept

    missing = run_cli(settings, "analytics", "rebuild", "--workspace", "no-such-workspace")
    assert missing.returncode == 1 and "not_found" in missing.stderr
