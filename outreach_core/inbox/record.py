"""Recording a folder batch in one transaction: skip what is already recorded or too old, match, upsert the
thread, insert the message, apply its effects (docs/inbox.md, "Recording and effects")."""

from __future__ import annotations

import datetime as dt
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import nh3

from outreach_core.inbox.ai_labels import AiLabel
from outreach_core.inbox.effects import (
    Received,
    apply_effects,
    check_bounce_rates,
    failed_recipient,
    put_labels,
)
from outreach_core.inbox.known import Known, Pending, ThreadState, load_known, load_threads
from outreach_core.inbox.labeling import THREAD_KIND, LabelVerdict, rule_label
from outreach_core.inbox.matching import LOOKUP_CHUNK, Match, match_messages
from outreach_core.inbox.rules import Classification, ParsedMessage
from outreach_core.kernel.context import (
    SystemContext,
    WorkspaceContext,
    as_workspace,
    scoped,
    workspace_itself,
)
from outreach_core.kernel.db.tables import inbox_messages, leads, mailboxes
from outreach_core.kernel.ids import new_id
from outreach_core.kernel.rollups import sync_replies
from outreach_core.labels.builtin import builtin_label_ids

INBOX_TASK = "inbox"
REPLY_KINDS = ("reply", "auto_reply", "out_of_office", "unsubscribe_request")


class FetchedFacts(Protocol):
    """What recording needs of a fetched message (`pipeline.Fetched`; a protocol, since pipeline imports
    this module)."""

    @property
    def uid(self) -> int: ...
    @property
    def arrived_at(self) -> dt.datetime: ...


class BatchFacts(Protocol):
    """What recording needs of a folder batch (`pipeline.FolderBatch`)."""

    @property
    def workspace_id(self) -> str: ...
    @property
    def mailbox_id(self) -> str: ...
    @property
    def folder(self) -> str: ...
    @property
    def uidvalidity(self) -> int: ...


@dataclass(frozen=True)
class Prepared:
    """One fetched message, parsed and classified (outside the transaction); `digest` is its
    `body_digest`."""

    fetched: FetchedFacts
    parsed: ParsedMessage
    verdict: Classification
    digest: str


_BODY_START = re.compile(rb"\r?\n\r?\n")


def body_digest(raw: bytes) -> str:
    """sha256 (hex) of the message below its top-level headers, line ends as LF. With the Message-ID it
    tells a copy (the same message in another folder, or read again after the server renumbered a folder;
    a header a filter added on the way changes nothing) from another message that reuses a Message-ID
    (bounce generators that number their notices badly, a sender's broken mail software)."""
    found = _BODY_START.search(raw)
    body = raw[found.end() :] if found else b""
    return hashlib.sha256(body.replace(b"\r\n", b"\n").rstrip()).hexdigest()


def inbox_context(ctx: SystemContext, workspace_id: str) -> WorkspaceContext:
    """The workspace acting on its own behalf for what its inbox reads."""
    return as_workspace(ctx, workspace_itself(workspace_id, INBOX_TASK))


async def to_record(ctx: WorkspaceContext, batch: BatchFacts, prepared: Sequence[Prepared]) -> list[Prepared]:
    """The messages of the batch that are new, stored kinds, and arrived after the mailbox's `inbox_since`.

    A message is not new when the mailbox has one with its (folder, UIDVALIDITY, UID), or one with its
    Message-ID and body (`body_digest`: a changed UIDVALIDITY re-reads a folder, and the same message may be
    in two folders); the same holds inside the batch. A Message-ID alone proves nothing: distinct messages
    that share one (bounce notices numbered badly) are each recorded. Rows recorded before the digest
    existed are recognised by their Message-ID alone."""
    since = (
        await ctx.conn.execute(
            scoped(ctx, mailboxes).select(mailboxes.c.inbox_since).where(mailboxes.c.id == batch.mailbox_id)
        )
    ).scalar_one_or_none()
    wanted = [
        p
        for p in prepared
        if p.verdict.kind in THREAD_KIND and (since is None or p.fetched.arrived_at >= since)
    ]
    if not wanted:
        return []
    seen_uids: set[int] = set()
    seen: dict[str, set[str | None]] = {}  # Message-ID -> bodies recorded with it (None: any)
    uids = [p.fetched.uid for p in wanted]
    ids = sorted({p.parsed.message_id for p in wanted if p.parsed.message_id})
    im = scoped(ctx, inbox_messages)
    for start in range(0, len(uids), LOOKUP_CHUNK):
        rows = await ctx.conn.execute(
            im.select(inbox_messages.c.uid).where(
                inbox_messages.c.mailbox_id == batch.mailbox_id,
                inbox_messages.c.folder == batch.folder,
                inbox_messages.c.uidvalidity == batch.uidvalidity,
                inbox_messages.c.uid.in_(uids[start : start + LOOKUP_CHUNK]),
            )
        )
        seen_uids.update(int(u) for u in rows.scalars())
    for start in range(0, len(ids), LOOKUP_CHUNK):
        rows = await ctx.conn.execute(
            im.select(inbox_messages.c.message_id, inbox_messages.c.body_digest).where(
                inbox_messages.c.mailbox_id == batch.mailbox_id,
                inbox_messages.c.message_id.in_(ids[start : start + LOOKUP_CHUNK]),
            )
        )
        for r in rows:
            seen.setdefault(str(r.message_id), set()).add(r.body_digest)
    fresh: list[Prepared] = []
    for p in wanted:
        mid = p.parsed.message_id
        bodies = seen.get(mid, set()) if mid else set()
        if p.fetched.uid in seen_uids or None in bodies or p.digest in bodies:
            continue
        if mid:
            seen.setdefault(mid, set()).add(p.digest)
        fresh.append(p)
    return fresh


async def record_messages(
    ctx: SystemContext,
    batch: BatchFacts,
    prepared: Sequence[Prepared],
    ai: Mapping[int, AiLabel] | None = None,
) -> int:
    """Record what the batch holds for the workspace's leads; returns how many messages were recorded."""
    wctx = inbox_context(ctx, batch.workspace_id)
    fresh = await to_record(wctx, batch, prepared)
    if not fresh:
        return 0
    matches = await match_messages(wctx, batch.mailbox_id, [(p.parsed, p.verdict) for p in fresh])
    matched = [(p, m) for p, m in zip(fresh, matches, strict=True) if m is not None]
    if not matched:
        return 0
    await lock_leads(wctx, [m.lead_id for _, m in matched])
    builtin = await builtin_label_ids(wctx)
    known = await load_known(
        wctx,
        [m.lead_id for _, m in matched],
        [m.campaign_id for _, m in matched if m.campaign_id],
        [m.send_id for _, m in matched if m.send_id],
    )
    pending = Pending(await load_threads(wctx, [conversation_of(m, batch.mailbox_id) for _, m in matched]))
    received: list[Received] = []
    for p, m in matched:
        verdict = _label_verdict(p, builtin, (ai or {}).get(p.fetched.uid))
        received.append(await _record_one(wctx, batch, p, m, verdict, known, pending))
    await put_labels(wctx, received)
    await pending.flush(wctx)
    await sync_replies(wctx, [m.lead_id for _, m in matched])  # the analytics rollups
    await check_bounce_rates(wctx, pending)
    return len(matched)


async def lock_leads(ctx: WorkspaceContext, lead_ids: Sequence[str]) -> None:
    """Lock the batch's leads first, in id order (PostgreSQL; SQLite writes one transaction at a time).
    Batches of two mailboxes that touch the same lead (a lead emailed from both, its bounces read by both)
    then take turns, instead of locking that lead's rows (lead, campaign lead, suppression, thread) in
    opposite orders and failing with a deadlock, to be read again after a back-off."""
    wanted = sorted(set(lead_ids))
    for start in range(0, len(wanted), LOOKUP_CHUNK):
        await ctx.conn.execute(
            scoped(ctx, leads)
            .select(leads.c.id)
            .where(leads.c.id.in_(wanted[start : start + LOOKUP_CHUNK]))
            .order_by(leads.c.id)
            .with_for_update()
        )


def _label_verdict(p: Prepared, builtin: dict[str, str], ai: AiLabel | None) -> LabelVerdict:
    if p.verdict.kind == "reply" and ai is not None and ai.ok:
        return LabelVerdict(ai.label_id, "ai", ai.reason[:500])
    return rule_label(p.verdict, builtin, ai.reason if ai is not None else None)


def _bounce(p: Prepared, m: Match) -> dict[str, Any] | None:
    first = failed_recipient(p.verdict, m.lead_email)
    if first is None:
        return None
    return {
        "status": first.status or first.reply_code,
        "hard": first.hard,
        "reason": first.reason,
        "recipient": first.recipient,
    }


def _hard_bounce(p: Prepared, m: Match) -> bool:
    """A bounce that says the lead's address cannot receive mail (not a soft bounce, not a delay warning)."""
    first = failed_recipient(p.verdict, m.lead_email)
    return first is not None and first.hard and first.action != "delayed"


def keeps_label(thread: Mapping[str, Any], label: LabelVerdict, known: Known) -> bool:
    """Whether the thread keeps its label over the new message's (docs/inbox.md, "Labels"): a manual label
    always; a positive or negative one against a message with no label, or a neutral one (auto-reply,
    out of office): a later auto-reply must not hide that the lead said yes (or no)."""
    if thread["label_source"] == "manual":
        return True
    held = known.labels.get(thread["label_id"] or "")
    if held is None or held[1] not in ("positive", "negative"):
        return False
    new = known.labels.get(label.label_id or "")
    return new is None or new[1] == "neutral"


KIND_RANK: dict[str, int] = {
    "unsubscribe_request": 3,  # the person asked to stop (or complained): nothing after it changes that
    "reply": 2,  # a person's answer
    "bounce": 1,  # automatic answers (a hard bounce arriving is an exception: `thread_kind`)
    "out_of_office": 1,
    "auto_reply": 1,
}
"""The precedence of thread kinds (docs/inbox.md, "Threads and messages"): a new message sets its thread's
kind only when its own kind ranks at least as high, so an out-of-office after a person's reply leaves the
thread a `reply`; between kinds of the same rank the later arrival wins."""


def thread_kind(
    current: str, last_at: dt.datetime, new: str, arrived: dt.datetime, *, hard_bounce: bool = False
) -> str:
    """The thread's kind once a message of kind `new` that arrived at `arrived` joins a thread of kind
    `current` whose latest message is from `last_at`. A hard bounce ranks with an unsubscribe request as it
    arrives (the address cannot receive mail: the conversation is over, as its Bounce label says)."""
    rank, held = (3 if hard_bounce else KIND_RANK[new]), KIND_RANK.get(current, 0)
    if rank > held or (rank == held and _utc(arrived) >= _utc(last_at)):
        return new
    return current


def message_kind(classified: str) -> str:
    """A received message's own kind: its thread kind, except a spam complaint (ARF), kept as `complaint` so
    complaints can be counted (its thread is an `unsubscribe_request`: the thread kinds are fixed)."""
    return "complaint" if classified == "complaint" else THREAD_KIND[classified]


def conversation_of(m: Match, mailbox_id: str) -> str:
    """A thread's identity in its workspace: (lead, campaign or -, mailbox)."""
    return f"{m.lead_id}:{m.campaign_id or '-'}:{mailbox_id}"


async def _record_one(
    ctx: WorkspaceContext,
    batch: BatchFacts,
    p: Prepared,
    m: Match,
    label: LabelVerdict,
    known: Known,
    pending: Pending,
) -> Received:
    parsed, verdict, arrived = p.parsed, p.verdict, p.fetched.arrived_at
    kind = THREAD_KIND[verdict.kind]
    forwarded = m.by == "thread" and kind in REPLY_KINDS and parsed.from_address != m.lead_email
    conversation = conversation_of(m, batch.mailbox_id)
    thread = pending.threads.get(conversation)
    kept = thread is not None and keeps_label(thread.values, label, known)
    labelled = {} if kept else {
        "label_id": label.label_id, "label_source": label.source, "label_reason": label.reason
    }  # fmt: skip
    if thread is None:
        person = known.people[m.lead_id]
        subject = parsed.subject[:1000]
        search = " ".join(x for x in (person.email, person.first_name, person.last_name, subject) if x)
        thread = ThreadState(
            new_id("thr"),
            subject,
            False,
            {
                "conversation": conversation,
                "lead_id": m.lead_id,
                "campaign_id": m.campaign_id,
                "mailbox_id": batch.mailbox_id,
                "subject": subject,
                "search_text": search.lower(),
                "created_at": ctx.now,
                "kind": kind,
                "last_message_at": arrived,
                "unread": True,
                "message_count": 1,
                "label_id": None,
                "label_source": None,
                "label_reason": None,
                **labelled,
            },
        )
        pending.threads[conversation] = thread
    else:
        thread.values.update(
            kind=thread_kind(
                thread.values["kind"],
                thread.values["last_message_at"],
                kind,
                arrived,
                hard_bounce=_hard_bounce(p, m),
            ),
            last_message_at=_later(thread.values["last_message_at"], arrived),
            unread=True,
            message_count=thread.values["message_count"] + 1,
            **labelled,
        )
        thread.dirty = True
        thread.added += 1
    message_row_id = new_id("msg")
    pending.messages.append(
        {
            "id": message_row_id,
            "thread_id": thread.id,
            "mailbox_id": batch.mailbox_id,
            "direction": "in",
            "folder": batch.folder,
            "uidvalidity": batch.uidvalidity,
            "uid": p.fetched.uid,
            "message_id": parsed.message_id,
            "body_digest": p.digest,
            "kind": message_kind(verdict.kind),
            "from_email": (parsed.from_address or "")[:320],
            "from_name": parsed.from_name[:200] or None,
            "to_emails": list(parsed.to),
            "subject": parsed.subject,
            "text": parsed.text,
            "html": received_html(parsed.html),
            "bounce": _bounce(p, m),
            "send_id": m.send_id,
            "forwarded": forwarded,
            "source": label.source,
            "reason": label.reason[:500],
            "arrived_at": arrived,
            "created_at": ctx.now,
        }
    )
    received = Received(
        message_id=message_row_id,
        thread_id=thread.id,
        lead_id=m.lead_id,
        lead_email=m.lead_email,
        campaign_id=m.campaign_id,
        send_id=m.send_id,
        verdict=verdict,
        from_email=parsed.from_address or "",
        subject=parsed.subject,
        text=parsed.text,
        arrived_at=arrived,
        label_id=None if kept else label.label_id,
        label_source=label.source,
        thread_subject=thread.subject,
        known=known,
        pending=pending,
    )
    await apply_effects(ctx, received)
    return received


def received_html(markup: str | None) -> str | None:
    """A received HTML body as stored and shown (DESIGN section 7): through nh3's default allow-list (tables
    and inline formatting kept; scripts, styles, event handlers, `javascript:` links removed), and with
    **remote content blocked**: an image's `src` is kept only when it is inline (`cid:`, `data:image/...`),
    so a client rendering the stored HTML never tells the sender when and where it was read (the `img`
    stays, with its `alt` text). The original is unchanged in the mailbox."""
    if markup is None:
        return None
    return nh3.clean(
        _SURROGATES.sub("\ufffd", markup),
        clean_content_tags={"script", "style"},
        url_schemes=nh3.ALLOWED_URL_SCHEMES | INLINE_SCHEMES,
        attribute_filter=_no_remote_content,
    )


INLINE_SCHEMES = {"cid", "data"}
"""URL schemes of inline images (RFC 2392 `cid:` parts, RFC 2397 `data:`): kept only as an image's `src`."""
_SURROGATES = re.compile("[\ud800-\udfff]")


def _no_remote_content(element: str, attribute: str, value: str) -> str | None:
    """nh3's attribute filter: an `img` keeps `src` only when it is inline; `cid:` and `data:` URLs are
    dropped anywhere else (as nh3's default schemes do). Other attributes nh3 allows load nothing."""
    scheme = value.strip().lower()
    if element == "img" and attribute == "src":
        return value if scheme.startswith(("cid:", "data:image/")) else None
    if attribute in ("href", "cite") and scheme.startswith(("cid:", "data:")):
        return None
    return value


def _later(a: dt.datetime, b: dt.datetime) -> dt.datetime:
    """The later of two instants (naive values are UTC)."""
    return max(_utc(a), _utc(b))


def _utc(when: dt.datetime) -> dt.datetime:
    """An instant in UTC (a naive value, as SQLite may give one back, is UTC)."""
    return when.replace(tzinfo=dt.UTC) if when.tzinfo is None else when.astimezone(dt.UTC)
