"""Which lead (and campaign email) a received message belongs to, in the mailbox's workspace only.

In order (docs/inbox.md, "Matching"):

1. by thread: the message's `In-Reply-To`, then its `References` (nearest first) and, for bounces and
   complaint reports, the Message-IDs of the returned original first, against the send ledger (`sends`)
   and the messages already recorded in the mailbox (a reply to a reply sent from a thread);
2. by address: a bounce's failed recipients, a complaint's complaining recipients, else the sender of a
   reply, as a lead of the workspace; the campaign is then that of the latest email the mailbox sent the
   lead (none: the thread has no campaign).

Never matched: our own mail (its Message-ID is in `sends`: a self-CC, a copy delivered to a read folder) and
a person's message whose From is the mailbox's own address (bounce and complaint reports are matched
whatever their From says).

Every look-up is scoped to the workspace, so a forged `In-Reply-To` naming another workspace's email never
matches. A message matching nothing is ignored by the caller.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Select

from outreach_core.inbox.rules import Classification, ParsedMessage
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import inbox_messages, leads, mailboxes, sends, threads

LOOKUP_CHUNK = 500


@dataclass(frozen=True)
class Match:
    """The lead a message belongs to; `send_id` the campaign email it answers or returns (None when matched
    by address and the mailbox never sent the lead anything), `by` how it was found."""

    lead_id: str
    lead_email: str
    campaign_id: str | None
    send_id: str | None
    by: Literal["thread", "address"]


def thread_ids(parsed: ParsedMessage, verdict: Classification) -> list[str]:
    """The Message-IDs that can place the message in a thread, best first."""
    ids: list[str] = []
    if verdict.kind in ("bounce", "complaint"):
        ids += parsed.original_message_ids
    if parsed.in_reply_to:
        ids.append(parsed.in_reply_to)
    ids += reversed(parsed.references)
    own = parsed.message_id
    return list(dict.fromkeys(i for i in ids if i and i != own))


def addresses(parsed: ParsedMessage, verdict: Classification) -> list[str]:
    """The addresses that can name the lead, best first."""
    if verdict.kind == "bounce":
        found = [b.recipient for b in verdict.bounces if b.recipient]
    elif verdict.kind == "complaint" and verdict.complaint is not None:
        found = list(verdict.complaint.recipients)
    else:
        found = [parsed.from_address] if parsed.from_address else []
    return list(dict.fromkeys(a.lower() for a in found))


async def match_messages(
    ctx: WorkspaceContext, mailbox_id: str, items: Sequence[tuple[ParsedMessage, Classification]]
) -> list[Match | None]:
    """A match (or None) for each message, with a handful of queries for the whole batch. Our own mail is
    never a lead's message (`ours`)."""
    wanted_ids = {i for p, v in items for i in thread_ids(p, v)}
    own_ids = {p.message_id for p, _ in items if p.message_id}
    by_send = await _sends_by_message_id(ctx, wanted_ids | own_ids)
    by_thread = await _threads_by_message_id(ctx, mailbox_id, wanted_ids - by_send.keys())
    own_address = await _mailbox_address(ctx, mailbox_id)
    results: list[Match | None] = []
    pending: list[tuple[int, list[str]]] = []
    for n, (parsed, verdict) in enumerate(items):
        found: Match | None = None
        if ours(parsed, verdict, own_address, by_send.keys()):
            results.append(None)
            continue
        for mid in thread_ids(parsed, verdict):
            found = by_send.get(mid) or by_thread.get(mid)
            if found is not None:
                break
        results.append(found)
        if found is None:
            pending.append((n, addresses(parsed, verdict)))
    wanted = {a for _, named in pending for a in named}
    if wanted:
        people = await _leads_by_email(ctx, wanted)
        latest = await _latest_sends(ctx, mailbox_id, {lead_id for lead_id, _ in people.values()})
        for n, named in pending:
            for address in named:
                if address in people:
                    lead_id, email = people[address]
                    campaign_id, send_id = latest.get(lead_id, (None, None))
                    results[n] = Match(lead_id, email, campaign_id, send_id, "address")
                    break
    return results


REPORT_KINDS = ("bounce", "complaint")
"""Reports about an email of ours, whoever they say they are from."""


def ours(
    parsed: ParsedMessage, verdict: Classification, own_address: str | None, sent_ids: Container[str]
) -> bool:
    """A copy of our own email (its Message-ID is in the send ledger: a self-CC, a copy delivered to the
    inbox) or a person's message written from the mailbox's own address: not a lead's message, never
    recorded. A bounce or complaint report is never taken for our own writing because of its `From`: some
    report generators write the address they report to as the sender too (it is still about our email)."""
    if parsed.message_id and parsed.message_id in sent_ids:
        return True
    if verdict.kind in REPORT_KINDS:
        return False
    sender = (parsed.from_address or "").lower()
    return bool(sender) and sender == own_address


async def _mailbox_address(ctx: WorkspaceContext, mailbox_id: str) -> str | None:
    found = (
        await ctx.conn.execute(
            scoped(ctx, mailboxes).select(mailboxes.c.email).where(mailboxes.c.id == mailbox_id)
        )
    ).scalar_one_or_none()
    return None if found is None else str(found).lower()


async def _sends_by_message_id(ctx: WorkspaceContext, ids: Iterable[str]) -> dict[str, Match]:
    out: dict[str, Match] = {}
    for chunk in _chunks(ids):
        rows = await ctx.conn.execute(
            scoped(ctx, sends)
            .select(
                sends.c.message_id,
                sends.c.id,
                sends.c.lead_id,
                sends.c.campaign_id,
                leads.c.email,
            )
            .join(leads, leads.c.id == sends.c.lead_id)
            .where(sends.c.message_id.in_(chunk))
        )
        for r in rows:
            out[r.message_id] = Match(r.lead_id, r.email, r.campaign_id, r.id, "thread")
    return out


async def _threads_by_message_id(
    ctx: WorkspaceContext, mailbox_id: str, ids: Iterable[str]
) -> dict[str, Match]:
    """Messages already recorded in the mailbox's threads (a reply sent from a thread, an earlier reply)."""
    out: dict[str, Match] = {}
    for chunk in _chunks(ids):
        rows = await ctx.conn.execute(
            scoped(ctx, inbox_messages)
            .select(
                inbox_messages.c.message_id,
                inbox_messages.c.send_id,
                threads.c.lead_id,
                threads.c.campaign_id,
                leads.c.email,
            )
            .join(threads, threads.c.id == inbox_messages.c.thread_id)
            .join(leads, leads.c.id == threads.c.lead_id)
            .where(inbox_messages.c.mailbox_id == mailbox_id, inbox_messages.c.message_id.in_(chunk))
        )
        for r in rows:
            out[r.message_id] = Match(r.lead_id, r.email, r.campaign_id, r.send_id, "thread")
    return out


async def _leads_by_email(ctx: WorkspaceContext, emails: Iterable[str]) -> dict[str, tuple[str, str]]:
    out: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(emails):
        rows = await ctx.conn.execute(
            scoped(ctx, leads).select(leads.c.id, leads.c.email).where(leads.c.email.in_(chunk))
        )
        for r in rows:
            out[r.email] = (r.id, r.email)
    return out


async def _latest_sends(
    ctx: WorkspaceContext, mailbox_id: str, lead_ids: Iterable[str]
) -> dict[str, tuple[str, str]]:
    """Per lead, the latest email this mailbox sent it: (campaign, send)."""
    out: dict[str, tuple[str, str]] = {}
    for chunk in _chunks(lead_ids):
        for r in await ctx.conn.execute(latest_sends_query(ctx, mailbox_id, chunk)):
            out.setdefault(r.lead_id, (r.campaign_id, r.id))
    return out


def latest_sends_query(ctx: WorkspaceContext, mailbox_id: str, lead_ids: Sequence[str]) -> Select[Any]:
    """The emails the mailbox sent these leads, newest first (walks `ix_sends_lead_mailbox`)."""
    return (
        scoped(ctx, sends)
        .select(sends.c.lead_id, sends.c.campaign_id, sends.c.id)
        .where(
            sends.c.lead_id.in_(lead_ids),
            sends.c.mailbox_id == mailbox_id,
            sends.c.sent_at.is_not(None),
        )
        .order_by(sends.c.created_at.desc(), sends.c.id.desc())
    )


def _chunks(values: Iterable[str]) -> Iterable[list[str]]:
    items = sorted(set(values))
    for start in range(0, len(items), LOOKUP_CHUNK):
        yield items[start : start + LOOKUP_CHUNK]
