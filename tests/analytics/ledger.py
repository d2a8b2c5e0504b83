"""Hand-built ledgers for the analytics tests: campaigns, mailboxes, leads, sends, replies, bounces and wins
written as the sender and the inbox write them, each in its own transaction that also calls the rollup
function the real transaction calls (`outreach_core.kernel.rollups`)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    analytics_counters,
    campaign_leads,
    campaign_steps,
    campaign_variants,
    campaigns,
    inbox_messages,
    labels,
    leads,
    mailboxes,
    sends,
    threads,
    workspaces,
)
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.rollups import count_sends, count_won, sync_replies
from tests.conftest import WorkspaceHandle

UTC = dt.UTC


@dataclass
class Ledger:
    ws: WorkspaceHandle
    labels: dict[str, str] = field(default_factory=dict)  # type -> label id
    threads: dict[tuple[str, str, str], str] = field(default_factory=dict)  # (lead, campaign, mailbox)

    async def run(self, fn: Any) -> Any:
        return await self.ws.runtime.execute(await self.ws.principal(), fn)

    async def timezone(self, name: str) -> None:
        async def write(ctx: WorkspaceContext) -> None:
            await ctx.conn.execute(scoped(ctx, workspaces).update().values(timezone=name))

        await self.run(write)

    async def label(self, kind: str) -> str:
        if kind not in self.labels:
            label_id = new_id("lbl")

            async def write(ctx: WorkspaceContext) -> None:
                await ctx.conn.execute(
                    scoped(ctx, labels).insert(
                        {
                            "id": label_id,
                            "name": f"{kind} {label_id[-6:]}",
                            "type": kind,
                            "triggers": {},
                            "created_at": dt.datetime.now(UTC),
                        }
                    )
                )

            await self.run(write)
            self.labels[kind] = label_id
        return self.labels[kind]

    async def mailbox(self, status: str = "active", **values: Any) -> str:
        mailbox_id = new_id("mbx")
        n = mailbox_id[-8:].lower()

        async def write(ctx: WorkspaceContext) -> None:
            await ctx.conn.execute(
                scoped(ctx, mailboxes).insert(
                    {
                        "id": mailbox_id,
                        "email": f"box-{n}@mail.test",
                        "domain": "mail.test",
                        "provider": "smtp",
                        "status": status,
                        "ramp_started_on": "2026-01-01",
                        "smtp_host": "127.0.0.1",
                        "smtp_port": 25,
                        "smtp_security": "starttls",
                        "smtp_user": f"box-{n}@mail.test",
                        "imap_host": "127.0.0.1",
                        "imap_port": 993,
                        "imap_security": "tls",
                        "imap_user": f"box-{n}@mail.test",
                        "password_encrypted": "x",
                        "created_at": dt.datetime.now(UTC),
                        **values,
                    }
                )
            )

        await self.run(write)
        return mailbox_id

    async def campaign(
        self, variants: list[int] | None = None, name: str = "Campaign"
    ) -> tuple[str, list[list[str]]]:
        """A campaign with steps of `variants[i]` variants each (default: two steps of one); returns its id
        and the variant ids per step."""
        campaign_id = new_id("cmp")
        shape = variants or [1, 1]
        ids = [[new_id("var") for _ in range(n)] for n in shape]
        now = dt.datetime.now(UTC)

        async def write(ctx: WorkspaceContext) -> None:
            await ctx.conn.execute(
                scoped(ctx, campaigns).insert(
                    {"id": campaign_id, "name": name, "created_at": now, "updated_at": now}
                )
            )
            for position, variant_ids in enumerate(ids):
                step_id = new_id("stp")
                await ctx.conn.execute(
                    scoped(ctx, campaign_steps).insert(
                        {"id": step_id, "campaign_id": campaign_id, "position": position, "created_at": now}
                    )
                )
                for v, variant_id in enumerate(variant_ids):
                    await ctx.conn.execute(
                        scoped(ctx, campaign_variants).insert(
                            {
                                "id": variant_id,
                                "campaign_id": campaign_id,
                                "step_id": step_id,
                                "position": v,
                                "subject": f"Subject {position}{v}",
                                "created_at": now,
                            }
                        )
                    )

        await self.run(write)
        return campaign_id, ids

    async def lead(
        self, *, esp: str = "google", country: str | None = None, timezone: str | None = None
    ) -> str:
        lead_id = new_id("lead")

        async def write(ctx: WorkspaceContext) -> None:
            await ctx.conn.execute(
                scoped(ctx, leads).insert(
                    {
                        "id": lead_id,
                        "email": f"{lead_id.lower()}@lead.example",
                        "domain": "lead.example",
                        "custom": {},
                        "esp": esp,
                        "country": country,
                        "timezone": timezone,
                        "created_at": dt.datetime.now(UTC),
                    }
                )
            )

        await self.run(write)
        return lead_id

    async def send(
        self,
        campaign_id: str,
        lead_id: str,
        mailbox_id: str | None,
        *,
        at: dt.datetime,
        step: int = 0,
        variant_id: str | None = None,
        status: str = "sent",
    ) -> str:
        """A ledger row as the sender resolves it (`sent`, or `bounced` when the server refused it), with
        the rollup call of `sending/outcomes.py`."""
        send_id = new_id("snd")

        async def write(ctx: WorkspaceContext) -> None:
            cl = (
                await ctx.conn.execute(
                    scoped(ctx, campaign_leads)
                    .select(campaign_leads.c.id)
                    .where(campaign_leads.c.campaign_id == campaign_id, campaign_leads.c.lead_id == lead_id)
                )
            ).scalar_one_or_none()
            if cl is None:
                cl = new_id("cl")
                await ctx.conn.execute(
                    scoped(ctx, campaign_leads).insert(
                        {"id": cl, "campaign_id": campaign_id, "lead_id": lead_id, "added_at": at}
                    )
                )
            await ctx.conn.execute(
                scoped(ctx, sends).insert(
                    {
                        "id": send_id,
                        "campaign_id": campaign_id,
                        "campaign_lead_id": cl,
                        "lead_id": lead_id,
                        "mailbox_id": mailbox_id,
                        "step": step,
                        "variant_id": variant_id,
                        "message_id": f"<{send_id}@mail.test>",
                        "to_email": "x@lead.example",
                        "subject": "s",
                        "body_html": "b",
                        "body_text": "b",
                        "status": status,
                        "attempts": 1,
                        "created_at": at,
                        "sent_at": None if status in ("sending", "retry", "failed") else at,
                    }
                )
            )
            await count_sends(ctx, [send_id])

        await self.run(write)
        return send_id

    async def reply(
        self, send_id: str, *, at: dt.datetime, label: str | None = None, kind: str = "reply"
    ) -> str:
        """A received message answering `send_id`, recorded as the inbox records it (thread per lead,
        campaign and mailbox; the label on the thread), with the rollup call of `inbox/record.py`."""
        label_id = await self.label(label) if label else None

        async def write(ctx: WorkspaceContext) -> str:
            s = (await ctx.conn.execute(scoped(ctx, sends).select().where(sends.c.id == send_id))).one()
            key = (s.lead_id, s.campaign_id, s.mailbox_id)
            thread_id = self.threads.get(key)
            if thread_id is None:
                thread_id = new_id("thr")
                await ctx.conn.execute(
                    scoped(ctx, threads).insert(
                        {
                            "id": thread_id,
                            "conversation": f"{s.lead_id}:{s.campaign_id}:{s.mailbox_id}",
                            "lead_id": s.lead_id,
                            "campaign_id": s.campaign_id,
                            "mailbox_id": s.mailbox_id,
                            "kind": kind,
                            "label_id": label_id,
                            "last_message_at": at,
                            "created_at": at,
                        }
                    )
                )
                self.threads[key] = thread_id
            elif label_id is not None:
                await ctx.conn.execute(
                    scoped(ctx, threads).update().where(threads.c.id == thread_id).values(label_id=label_id)
                )
            message_id = new_id("msg")
            await ctx.conn.execute(
                scoped(ctx, inbox_messages).insert(
                    {
                        "id": message_id,
                        "thread_id": thread_id,
                        "mailbox_id": s.mailbox_id,
                        "direction": "in",
                        "kind": kind,
                        "to_emails": [],
                        "send_id": send_id,
                        "source": "rules",
                        "arrived_at": at,
                        "created_at": at,
                    }
                )
            )
            await sync_replies(ctx, [s.lead_id])
            return thread_id

        return str(await self.run(write))

    async def relabel(self, thread_id: str, label: str | None) -> None:
        """A person changes the thread's label (`update_thread`'s rollup call)."""
        label_id = await self.label(label) if label else None

        async def write(ctx: WorkspaceContext) -> None:
            lead_id = (
                await ctx.conn.execute(
                    scoped(ctx, threads).select(threads.c.lead_id).where(threads.c.id == thread_id)
                )
            ).scalar_one()
            await ctx.conn.execute(
                scoped(ctx, threads).update().where(threads.c.id == thread_id).values(label_id=label_id)
            )
            await sync_replies(ctx, [lead_id])

        await self.run(write)

    async def hard_bounce(self, send_id: str) -> None:
        """A bounce read from the mailbox turns the sent email `bounced` (`inbox/effects.py`)."""

        async def write(ctx: WorkspaceContext) -> None:
            await count_sends(ctx, [send_id], -1)
            await ctx.conn.execute(
                scoped(ctx, sends)
                .update()
                .where(sends.c.id == send_id, sends.c.status == "sent")
                .values(status="bounced")
            )
            await count_sends(ctx, [send_id])

        await self.run(write)

    async def soft_bounce(self, send_id: str) -> None:
        """A soft bounce: the email is sent again later (`inbox/effects.py`): it stops counting."""

        async def write(ctx: WorkspaceContext) -> None:
            await count_sends(ctx, [send_id], -1)
            await ctx.conn.execute(
                scoped(ctx, sends).update().where(sends.c.id == send_id).values(status="retry", sent_at=None)
            )

        await self.run(write)

    async def resend(self, send_id: str, at: dt.datetime) -> None:
        """The retried email goes out (`sending/outcomes.py`)."""

        async def write(ctx: WorkspaceContext) -> None:
            await ctx.conn.execute(
                scoped(ctx, sends).update().where(sends.c.id == send_id).values(status="sent", sent_at=at)
            )
            await count_sends(ctx, [send_id])

        await self.run(write)

    async def won(self, lead_id: str, at: dt.datetime, campaign_id: str | None = None) -> None:
        """`mark_won`'s rollup calls."""

        async def write(ctx: WorkspaceContext) -> None:
            row = (
                await ctx.conn.execute(
                    scoped(ctx, leads)
                    .select(leads.c.won_at, leads.c.won_campaign_id)
                    .where(leads.c.id == lead_id)
                )
            ).one()
            await ctx.conn.execute(
                scoped(ctx, leads)
                .update()
                .where(leads.c.id == lead_id)
                .values(status="won", won_at=at, won_campaign_id=campaign_id)
            )
            if row.won_at is not None:
                await count_won(ctx, row.won_at, row.won_campaign_id, -1)
            await count_won(ctx, at, campaign_id)

        await self.run(write)

    async def ledger_sent(self) -> int:
        """Ledger rows counted as sent (sent or bounced), counted directly."""

        async def read(ctx: WorkspaceContext) -> int:
            found = await ctx.conn.execute(
                scoped(ctx, sends).select(sends.c.id).where(sends.c.status.in_(("sent", "bounced")))
            )
            return len(found.all())

        return int(await self.ws.runtime.read(await self.ws.principal(), read))

    async def counters(self) -> list[tuple[Any, ...]]:
        """Every non-zero counter row of the workspace, sorted (to compare two countings)."""

        async def read(ctx: WorkspaceContext) -> list[tuple[Any, ...]]:
            t = analytics_counters
            rows = await ctx.conn.execute(
                scoped(ctx, t).select(*(c for c in t.c if c.name != "workspace_id"))
            )
            out = [tuple(r) for r in rows if any(v for v in tuple(r)[5:])]
            return sorted(out, key=repr)

        return list(await self.ws.runtime.read(await self.ws.principal(), read))
