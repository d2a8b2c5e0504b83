"""What the `inbox` worker hands the core: messages fetched from one folder of one mailbox, in UID order.

`ingest_batch` records a batch and advances the folder's checkpoint in one transaction, so a batch is handled
exactly once whatever crashes in between (the worker re-fetches from the checkpoint). Parsing, classifying
and the AI labels of replies happen before that transaction (no transaction is held open across an AI
call); see docs/inbox.md, "Recording and effects".
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal, Protocol

import structlog
from sqlalchemy import func

from outreach_core.ai.keys import OwnKey, choose_ai, own_key
from outreach_core.inbox.ai_labels import AiLabel, LabelChoice, ai_label
from outreach_core.inbox.folders import advance_checkpoint
from outreach_core.inbox.leases import holds
from outreach_core.inbox.matching import match_messages
from outreach_core.inbox.record import Prepared, body_digest, inbox_context, record_messages, to_record
from outreach_core.inbox.rules import classify, parse_message
from outreach_core.kernel.context import SystemContext, scoped
from outreach_core.kernel.db.tables import labels, workspaces
from outreach_core.warmup.rules import header_token, quoted_tokens
from outreach_core.warmup.tending import record_bounces

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

FolderRole = Literal["inbox", "junk"]
AI_CONCURRENCY = 8  # AI calls of one batch in flight at once (a batch of replies waits for the slowest)
_log = structlog.get_logger(__name__)
Guard = Callable[[Awaitable[int]], Awaitable[int]]
"""Wraps the recording transaction of a batch (the worker shields it from its task's cancellation)."""


class LeaseLost(Exception):
    """The worker no longer holds the mailbox's lease: the batch was not recorded (another reads it)."""


@dataclass(frozen=True)
class Fetched:
    """One message as the server gave it: its UID, INTERNALDATE (aware; when it arrived in the mailbox, never
    the `Date` header), RFC822.SIZE, and its bytes (up to the worker's fetch limit; `size` is the whole)."""

    uid: int
    arrived_at: datetime
    size: int
    raw: bytes


@dataclass(frozen=True)
class FolderBatch:
    """Messages of one folder under one UIDVALIDITY, ascending UIDs; `last_uid` is the checkpoint once they
    are recorded (at least the highest UID among them; higher when messages were skipped)."""

    workspace_id: str
    mailbox_id: str
    folder: str
    role: FolderRole
    uidvalidity: int
    last_uid: int
    messages: Sequence[Fetched]


async def record_batch(
    ctx: SystemContext,
    batch: FolderBatch,
    prepared: Sequence[Prepared] | None = None,
    ai: Mapping[int, AiLabel] | None = None,
    *,
    holder: str | None = None,
) -> int:
    """Record the batch and advance its checkpoint; returns how many messages were recorded. `prepared`
    (the parsed and classified messages) and `ai` (AI labels of replies by UID) come from `ingest_batch`;
    without them the messages are parsed here and labelled by the rules only. With `holder` (a worker's
    lease holder) it first checks, locking the lease row, that the holder still holds the mailbox's lease,
    and raises `LeaseLost` (nothing recorded) when not."""
    if holder is not None and not await holds(ctx, batch.mailbox_id, holder):
        _log.warning("inbox_lease_lost", mailbox_id=batch.mailbox_id, holder=holder)
        raise LeaseLost(f"{holder} no longer holds the lease of mailbox {batch.mailbox_id}")
    items = prepare(batch) if prepared is None else prepared
    bounced = warmup_bounces(batch)
    if bounced:
        await record_bounces(ctx, bounced)
    recorded = await record_messages(ctx, batch, items, ai)
    await advance_checkpoint(
        ctx, batch.workspace_id, batch.mailbox_id, batch.folder, batch.role, batch.uidvalidity, batch.last_uid
    )
    return recorded


def prepare(batch: FolderBatch) -> list[Prepared]:
    """Parse and classify each message; one that cannot be read is logged (mailbox, folder, UID) and skipped,
    never stopping the batch. Warmup emails (docs/warmup.md: the `X-Outreach-Warmup` header) and bounce
    reports of warmup emails are left out: they never become threads nor count anywhere."""
    out: list[Prepared] = []
    for fetched in batch.messages:
        where = {"mailbox_id": batch.mailbox_id, "folder": batch.folder, "uid": fetched.uid}
        if header_token(fetched.raw) is not None:
            continue
        try:
            parsed = parse_message(fetched.raw)
            verdict = classify(parsed, fetched.arrived_at)
        except Exception:  # the rules never raise by design; a bug there must not stop the mailbox
            _log.exception("inbox_message_unreadable", **where)
            continue
        if verdict.kind == "bounce" and quoted_tokens(fetched.raw):
            continue
        if parsed.defects:
            _log.warning("inbox_message_malformed", defects=list(parsed.defects)[:5], **where)
        out.append(Prepared(fetched, parsed, verdict, body_digest(fetched.raw)))
    return out


def warmup_bounces(batch: FolderBatch) -> list[str]:
    """Tokens of warmup emails that bounce reports of the batch quote (their recipients leave the pool)."""
    tokens: list[str] = []
    for fetched in batch.messages:
        if header_token(fetched.raw) is not None:
            continue
        quoted = quoted_tokens(fetched.raw)
        if quoted:
            try:
                if classify(parse_message(fetched.raw), fetched.arrived_at).kind == "bounce":
                    tokens.extend(quoted)
            except Exception:
                continue
    return tokens


class IngestBatch(Protocol):
    """The signature of `ingest_batch` (the worker's `ingest`; tests wrap it)."""

    def __call__(
        self, runtime: Background, batch: FolderBatch, *, holder: str | None = ..., guard: Guard | None = ...
    ) -> Awaitable[int]: ...


async def ingest_batch(
    runtime: Background, batch: FolderBatch, *, holder: str | None = None, guard: Guard | None = None
) -> int:
    """Everything one batch causes, then its checkpoint, in one transaction; returns the messages recorded.

    Before it (`label_batch`): parse and classify, and with the workspace's `aiLabels` on and an AI port
    configured, label the replies that belong to a lead. The recording transaction runs inside `guard` when
    given, and checks `holder`'s lease when given (`record_batch`)."""
    prepared, ai = await label_batch(runtime, batch)
    work = runtime.system(record_batch, batch, prepared, ai, holder=holder)
    return await (work if guard is None else guard(work))


async def label_batch(runtime: Background, batch: FolderBatch) -> tuple[list[Prepared], dict[int, AiLabel]]:
    """Parse and classify the batch, and label by AI the replies that belong to a lead (matched in a read
    transaction first), one AI call each, up to `AI_CONCURRENCY` at once; no transaction is held open."""
    prepared = prepare(batch)
    ai: dict[int, AiLabel] = {}
    can_ask = runtime.ports.ai is not None or runtime.ports.ai_keys is not None
    if can_ask and any(p.verdict.kind == "reply" for p in prepared):
        choices, replies, key = await runtime.system_read(_ai_work, batch, prepared)
        port = choose_ai(runtime.ports, key).chat  # the workspace's own key replaces the server's
        if port is None:
            return prepared, ai
        limit = asyncio.Semaphore(AI_CONCURRENCY)

        async def label(p: Prepared) -> None:
            async with limit:
                ai[p.fetched.uid] = await ai_label(
                    port, choices, p.parsed.subject, p.verdict.own_text or p.parsed.text
                )

        await asyncio.gather(*(label(p) for p in replies))
    return prepared, ai


async def _ai_work(
    ctx: SystemContext, batch: FolderBatch, prepared: Sequence[Prepared]
) -> tuple[list[LabelChoice], list[Prepared], OwnKey | None]:
    """The workspace's labels, the replies of the batch to label by AI (none when `aiLabels` is off) and
    the workspace's own AI key."""
    wctx = inbox_context(ctx, batch.workspace_id)
    on = (
        await ctx.conn.execute(scoped(wctx, workspaces).select(workspaces.c.ai_labels))
    ).scalar_one_or_none()
    if not on:
        return [], [], None
    fresh = [p for p in await to_record(wctx, batch, prepared) if p.verdict.kind == "reply"]
    if not fresh:
        return [], [], None
    matches = await match_messages(wctx, batch.mailbox_id, [(p.parsed, p.verdict) for p in fresh])
    replies = [p for p, m in zip(fresh, matches, strict=True) if m is not None]
    rows = await ctx.conn.execute(
        scoped(wctx, labels)
        .select(labels.c.id, labels.c.name, labels.c.type)
        .order_by(func.coalesce(labels.c.builtin, "~"), labels.c.created_at, labels.c.id)
    )
    return [LabelChoice(r.id, r.name, r.type) for r in rows], replies, await own_key(wctx)
