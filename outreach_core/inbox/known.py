"""What recording a batch reads once instead of once per message: the workspace's labels, the matched leads'
fixed facts (address, names, domain, zone), their campaigns' settings and the answered emails' step and
variant. Then an event's `data` costs one read (the lead as the change left it) instead of four.

Only facts a batch does not change are kept here; statuses are always read where they are changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, case

from outreach_core.events.data import lead_payload, step_refs
from outreach_core.events.outbox import EventKind, record_events
from outreach_core.kernel.bulk import update_each
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    campaign_leads,
    campaign_variants,
    campaigns,
    inbox_messages,
    labels,
    leads,
    sends,
    threads,
)
from outreach_core.labels.schemas import LabelTriggers
from outreach_core.labels.store import LabelRow


@dataclass
class Person:
    """A matched lead; `status` is kept as the batch's effects change it (they update the row too)."""

    email: str
    first_name: str | None
    last_name: str | None
    company: str | None
    domain: str
    timezone: str | None
    status: str


@dataclass
class CampaignLead:
    """A matched lead's campaign lead, kept as the batch's effects change it (they update the row too)."""

    id: str
    lead_id: str
    status: str
    step: int
    next_at: Any


@dataclass(frozen=True)
class CampaignFacts:
    name: str
    stop_on_reply: bool
    stop_for_company: bool
    timezone_fallback: str


@dataclass
class Known:
    labels: dict[str, tuple[LabelRow, str]] = field(default_factory=dict)  # id -> (row, type)
    people: dict[str, Person] = field(default_factory=dict)
    campaigns: dict[str, CampaignFacts] = field(default_factory=dict)
    steps: dict[str, tuple[dict[str, Any], dict[str, Any] | None]] = field(default_factory=dict)  # send id ->
    cls: dict[tuple[str, str], CampaignLead] = field(default_factory=dict)  # (campaign, lead) ->


async def load_known(
    ctx: WorkspaceContext, lead_ids: Iterable[str], campaign_ids: Iterable[str], send_ids: Iterable[str]
) -> Known:
    known = Known()
    for r in await ctx.conn.execute(
        scoped(ctx, labels).select(labels.c.id, labels.c.name, labels.c.type, labels.c.triggers)
    ):
        known.labels[r.id] = (LabelRow(r.id, r.name, LabelTriggers.model_validate(r.triggers)), str(r.type))
    wanted = sorted(set(lead_ids))
    for start in range(0, len(wanted), 500):
        rows = await ctx.conn.execute(
            scoped(ctx, leads)
            .select(
                leads.c.id,
                leads.c.email,
                leads.c.first_name,
                leads.c.last_name,
                leads.c.company,
                leads.c.domain,
                leads.c.timezone,
                leads.c.status,
            )
            .where(leads.c.id.in_(wanted[start : start + 500]))
        )
        for r in rows:
            known.people[r.id] = Person(
                r.email, r.first_name, r.last_name, r.company, r.domain, r.timezone, r.status
            )
        rows = await ctx.conn.execute(
            scoped(ctx, campaign_leads)
            .select(
                campaign_leads.c.id,
                campaign_leads.c.campaign_id,
                campaign_leads.c.lead_id,
                campaign_leads.c.status,
                campaign_leads.c.step,
                campaign_leads.c.next_at,
            )
            .where(campaign_leads.c.lead_id.in_(wanted[start : start + 500]))
        )
        for r in rows:
            known.cls[(r.campaign_id, r.lead_id)] = CampaignLead(r.id, r.lead_id, r.status, r.step, r.next_at)
    cids = sorted(set(campaign_ids))
    if cids:
        rows = await ctx.conn.execute(
            scoped(ctx, campaigns)
            .select(
                campaigns.c.id,
                campaigns.c.name,
                campaigns.c.stop_on_reply,
                campaigns.c.stop_for_company,
                campaigns.c.timezone_fallback,
            )
            .where(campaigns.c.id.in_(cids))
        )
        for r in rows:
            known.campaigns[r.id] = CampaignFacts(
                r.name, r.stop_on_reply, r.stop_for_company, r.timezone_fallback
            )
    sids = sorted(set(send_ids))
    for start in range(0, len(sids), 500):
        rows = await ctx.conn.execute(
            scoped(ctx, sends)
            .select(
                sends.c.id, sends.c.step_id, sends.c.step, sends.c.variant_id, campaign_variants.c.position
            )
            .outerjoin(campaign_variants, campaign_variants.c.id == sends.c.variant_id)
            .where(sends.c.id.in_(sids[start : start + 500]))
        )
        for r in rows:
            known.steps[r.id] = step_refs(r.step_id, r.step, r.variant_id, r.position)
    return known


async def event_data(
    ctx: WorkspaceContext,
    known: Known,
    lead_id: str,
    *,
    campaign_id: str | None,
    send_id: str | None,
    thread: dict[str, Any],
    **extra: Any,
) -> dict[str, Any]:
    """The `data` `event_data.lead_event_data` builds, from what the batch knows (the lead as its effects left
    it: they keep `Person.status` with the row)."""
    lead = known.people[lead_id]
    step, variant = known.steps.get(send_id or "", (None, None))
    facts = known.campaigns.get(campaign_id or "")
    return lead_payload(
        lead_id,
        lead,
        campaign=None if facts is None or campaign_id is None else {"id": campaign_id, "name": facts.name},
        thread=thread,
        step=step,
        variant=variant,
        **extra,
    )


@dataclass
class ThreadState:
    """A thread as the batch has left it so far; written once at the end (or at a flush)."""

    id: str
    subject: str
    stored: bool  # a row exists already (read at the start, or inserted by an earlier flush)
    values: dict[str, Any]  # the columns to insert, or to set on the existing row
    dirty: bool = False
    added: int = 0  # messages added to a stored thread since it was read: `message_count` grows by this


@dataclass
class Pending:
    """Writes of a batch gathered and done together: new threads, changed threads, message rows, events.
    `flush` writes them (threads first, for the messages' foreign key); the effects flush before anything
    that reads them (`unsubscribe_lead` reads the thread) or records an event of its own, so events keep
    their order."""

    threads: dict[str, ThreadState] = field(default_factory=dict)  # by conversation
    messages: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[EventKind, dict[str, Any]]] = field(default_factory=list)
    # campaigns with a hard bounce in the batch: their bounce rate is checked once, after the last flush
    bounced_campaigns: set[str] = field(default_factory=set)

    async def flush(self, ctx: WorkspaceContext) -> None:
        new = [t for t in self.threads.values() if not t.stored]
        if new:
            await ctx.conn.execute(*scoped(ctx, threads).insert_many([{"id": t.id, **t.values} for t in new]))
        changed = [t for t in self.threads.values() if t.stored and t.dirty]
        if changed:
            await update_each(
                ctx,
                scoped(ctx, threads).update(),
                [{"id": t.id, **t.values, "added": t.added} for t in changed],
                values=_thread_changes,
                types={"added": Integer()},
            )
        for t in self.threads.values():
            t.stored, t.dirty, t.added = True, False, 0
            t.values = {k: t.values[k] for k in THREAD_CHANGES}
        if self.messages:
            await ctx.conn.execute(*scoped(ctx, inbox_messages).insert_many(self.messages))
            self.messages = []
        await record_events(ctx, self.events)
        self.events = []


THREAD_CHANGES = (
    "kind",
    "last_message_at",
    "unread",
    "message_count",
    "label_id",
    "label_source",
    "label_reason",
)
"""The columns a new message changes on its thread (all of them each time: one statement for all rows)."""


def _thread_changes(v: Mapping[str, Any]) -> dict[str, Any]:
    """What a stored thread's row gets, safe against a change made since the batch read it: the count grows
    by the messages added (never set back), and a label a person set (`manual`) is never replaced."""
    manual = threads.c.label_source == "manual"
    kept = {k: case((manual, threads.c[k]), else_=v[k]) for k in ("label_id", "label_source", "label_reason")}
    return {
        "kind": v["kind"],
        "last_message_at": v["last_message_at"],
        "unread": v["unread"],
        "message_count": threads.c.message_count + v["added"],
        **kept,
    }


async def load_threads(ctx: WorkspaceContext, conversations: Iterable[str]) -> dict[str, ThreadState]:
    """The batch's existing threads, by conversation."""
    found: dict[str, ThreadState] = {}
    wanted = sorted(set(conversations))
    for start in range(0, len(wanted), 500):
        rows = await ctx.conn.execute(
            scoped(ctx, threads)
            .select(
                threads.c.conversation,
                threads.c.id,
                threads.c.subject,
                *(threads.c[k] for k in THREAD_CHANGES),
            )
            .where(threads.c.conversation.in_(wanted[start : start + 500]))
        )
        for r in rows:
            found[r.conversation] = ThreadState(
                r.id, r.subject, True, {k: getattr(r, k) for k in THREAD_CHANGES}
            )
    return found
