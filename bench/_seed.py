"""What the benchmarks write straight into the database when they need many rows but do not measure how
they got there (the import, connecting a mailbox and building a campaign have their own benchmarks): a
workspace, mailboxes, running campaigns with their steps, and leads in campaigns. `bench/sender_scale.py`
and `bench/forecast.py` seed through these; `bench/tracking_redirect.py` and others use `bench_lead`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from datetime import datetime
from types import SimpleNamespace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from outreach_core.kernel.bulk import insert_rows
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaign_mailboxes,
    campaign_steps,
    campaign_variants,
    campaigns,
    leads,
)
from outreach_core.kernel.ids import new_ids
from outreach_core.kernel.runtime import Runtime
from outreach_core.targets.rules import derived_columns
from outreach_core.workspace.setup import init_workspace

BATCH = 20_000
"""Leads (and their campaign leads) written per transaction."""


def bench_lead(i: int, lead_id: str, workspace_id: str, now: datetime, **overrides: Any) -> dict[str, Any]:
    """Lead number `i`: `person{i}@company{i % 5000}.example`, verified valid, active and enriched."""
    email = f"person{i}@company{i % 5000}.example"
    first, company = f"First{i % 100}", f"Company {i % 5000}"
    return {
        "id": lead_id,
        "workspace_id": workspace_id,
        "email": email,
        "domain": f"company{i % 5000}.example",
        "first_name": first,
        "last_name": "Bench",
        "company": company,
        "custom": {},
        **derived_columns(email, first, "Bench", company),
        "verify_status": "valid",
        "status": "active",
        "enriched_at": now,
        "created_at": now,
        **overrides,
    }


async def bench_workspace(rt: Runtime, kind: str, name: str) -> tuple[str, str]:
    """A workspace on the agency plan and its owner (unique per process); (workspace id, user id)."""
    result = await rt.system(
        init_workspace,
        email=f"{kind}-{os.getpid()}@example.com",
        name="Bench",
        workspace=name,
        slug=f"{kind}-bench-{os.getpid()}",
        plan="agency",
    )
    return str(result.workspaceId), str(result.userId)


def bench_mailbox(
    i: int, mailbox_id: str, workspace_id: str, now: datetime, host: str, **overrides: Any
) -> dict[str, Any]:
    """Mailbox number `i`: `sender{i}@bench.test`, SMTP with STARTTLS and IMAP over TLS at `host`."""
    return {
        "id": mailbox_id,
        "workspace_id": workspace_id,
        "email": f"sender{i}@bench.test",
        "domain": "bench.test",
        "provider": "smtp",
        "smtp_host": host,
        "smtp_port": 25,
        "smtp_security": "starttls",
        "smtp_user": f"sender{i}@bench.test",
        "imap_host": host,
        "imap_port": 993,
        "imap_security": "tls",
        "imap_user": f"sender{i}@bench.test",
        "password_encrypted": "x",
        "created_at": now,
        **overrides,
    }


async def add_campaign(
    conn: AsyncConnection,
    workspace_id: str,
    campaign_id: str,
    short: str,
    steps: Sequence[tuple[int, str, str]],
    now: datetime,
    **columns: Any,
) -> None:
    """A running campaign with one variant per step; `steps` are (wait days, subject, body); `short` names
    its steps `stp_<short><position>` and variants `var_<short><position>`; `columns` the rest (name, window,
    days, caps)."""
    await conn.execute(
        campaigns.insert().values(
            id=campaign_id,
            workspace_id=workspace_id,
            status="running",
            started_at=now,
            created_at=now,
            updated_at=now,
            **columns,
        )
    )
    for position, (wait_days, subject, body) in enumerate(steps):
        step_id = f"stp_{short}{position}"
        await conn.execute(
            campaign_steps.insert().values(
                id=step_id,
                workspace_id=workspace_id,
                campaign_id=campaign_id,
                position=position,
                wait_days=wait_days,
                created_at=now,
            )
        )
        await conn.execute(
            campaign_variants.insert().values(
                id=f"var_{short}{position}",
                workspace_id=workspace_id,
                campaign_id=campaign_id,
                step_id=step_id,
                position=0,
                subject=subject,
                body=body,
                created_at=now,
            )
        )


async def assign_mailboxes(
    conn: AsyncConnection, workspace_id: str, pairs: Sequence[tuple[str, str]]
) -> None:
    """(campaign id, mailbox id) pairs: the mailboxes each campaign sends from."""
    await conn.execute(
        campaign_mailboxes.insert(),
        [{"campaign_id": c, "mailbox_id": m, "workspace_id": workspace_id} for c, m in pairs],
    )


async def add_campaign_leads(
    rt: Runtime,
    workspace_id: str,
    n: int,
    lead: Callable[[int, str], dict[str, Any]],
    campaign_lead: Callable[[int, str, str], dict[str, Any]],
) -> None:
    """`n` leads, each in a campaign: `lead(i, lead_id)` and `campaign_lead(i, cl_id, lead_id)` give the
    rows of lead `i`; written `BATCH` at a time through the import's bulk path (COPY on PostgreSQL)."""
    for first in range(0, n, BATCH):
        count = min(BATCH, n - first)
        ids, cl_ids = new_ids("lead", count), new_ids("cl", count)
        lead_rows = [lead(first + k, ids[k]) for k in range(count)]
        cl_rows = [campaign_lead(first + k, cl_ids[k], ids[k]) for k in range(count)]
        async with rt.engine.begin() as conn:
            owner: Any = SimpleNamespace(conn=conn, workspace_id=workspace_id)  # all insert_rows needs
            await insert_rows(owner, leads, lead_rows)
            await insert_rows(owner, campaign_leads, cl_rows)
