"""The delivery pipeline's database side, across workspaces (the `webhooks` worker calls these).

One cycle of the worker is one transaction (`run_cycle`):

1. **record** the attempts that finished since the last cycle: an attempt row each, the delivery moved on
   (delivered; next retry on the schedule, with jitter; failed when the schedule is used up or the endpoint
   answered 410), the endpoint's last status and failure streak, and the endpoint turned off after a 410
   or after failing every attempt for 3 days (its pending deliveries fail with it);
2. **fan out** pending outbox events (oldest first, `FOR UPDATE SKIP LOCKED` on PostgreSQL): one delivery
   per enabled endpoint subscribed to the kind, with the exact body bytes, then the events are marked
   dispatched (`UNIQUE(webhook_id, event_id)` keeps a repeated fan-out from doubling a delivery);
3. **claim** due deliveries per endpoint, at most as many as the endpoint has free slots in this process
   (so one endpoint's backlog never hides another's work), moving each to the end of its lease: a worker
   that dies after the POST and before the record leaves it to become due again, and it is POSTed again
   (at least once; the receiver dedupes by `Service-Event-Id`).

The POSTs run between cycles, with no transaction open.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ARRAY,
    Boolean,
    ColumnElement,
    Integer,
    String,
    any_,
    bindparam,
    case,
    func,
    true,
    union_all,
)

from outreach_core.bulk import insert_skipping_duplicates, update_each
from outreach_core.context import SystemContext, system_scope
from outreach_core.crypto import UndecryptableSecret, decrypt
from outreach_core.db.tables import outbox, webhook_attempts, webhook_deliveries, webhooks
from outreach_core.db.types import UtcDateTime
from outreach_core.ids import new_ids
from outreach_core.webhooks import rules

d = webhook_deliveries
FAN_OUT_BATCH = 1000
PURGE_BATCH = 5000
_UNION_CHUNK = 200  # SQLite allows 500 terms in a compound SELECT


@dataclass(frozen=True)
class Claimed:
    """One delivery a worker POSTs: everything the request needs."""

    delivery_id: str
    workspace_id: str
    webhook_id: str
    event_id: str
    type: str
    body: bytes
    round_attempts: int
    url: str
    secrets: tuple[str, ...]  # current first, then the previous one during a rotation; empty: undecryptable


@dataclass(frozen=True)
class Attempt:
    """What one POST of a claimed delivery got."""

    claimed: Claimed
    at: datetime
    status: int  # 0: no answer
    ms: int
    error: str | None


@dataclass
class CycleOutcome:
    recorded: int = 0
    events: int = 0
    created: int = 0
    claimed: list[Claimed] = field(default_factory=list)
    full: set[str] = field(default_factory=set)  # endpoints whose every free slot was filled: maybe more


async def anything_to_do(ctx: SystemContext) -> bool:
    """Is an event waiting for fan-out or a delivery due? Two index probes, no write lock."""
    pending = outbox.c.dispatched_at.is_(None)
    if (await ctx.conn.execute(system_scope(outbox).select(outbox.c.seq).where(pending).limit(1))).first():
        return True
    due = (
        system_scope(d).select(d.c.id).where(d.c.next_attempt_at.is_not(None), d.c.next_attempt_at <= ctx.now)
    )
    return (await ctx.conn.execute(due.limit(1))).first() is not None


async def run_cycle(
    ctx: SystemContext,
    attempts: Sequence[Attempt],
    *,
    outstanding: dict[str, int],
    cap: int,
    probe: set[str] | None,
    claim: bool = True,
    rng: random.Random | None = None,
) -> CycleOutcome:
    """Record `attempts`, fan out pending events and claim due deliveries, in this one transaction.

    `outstanding` counts the deliveries this process holds per endpoint (claimed, not yet recorded); an
    endpoint gets at most `cap` of them. `probe` limits the claim to those endpoints (plus any that got new
    deliveries in this cycle); None looks at every enabled endpoint."""
    outcome = CycleOutcome()
    outcome.recorded = await record_attempts(ctx, attempts, rng)
    if not claim:
        return outcome
    outcome.events, created, touched = await fan_out(ctx)
    outcome.created = created
    candidates = await _enabled_endpoints(ctx)
    if probe is not None:
        candidates = [w for w in candidates if w in probe or w in touched]
    slots = {w: cap - outstanding.get(w, 0) for w in candidates}
    slots = {w: n for w, n in slots.items() if n > 0}
    outcome.claimed = await claim_due(ctx, slots)
    got: dict[str, int] = defaultdict(int)
    for c in outcome.claimed:
        got[c.webhook_id] += 1
    outcome.full = {w for w, n in slots.items() if got[w] >= n}
    return outcome


# --- fan-out ----------------------------------------------------------------------------------------------


async def fan_out(ctx: SystemContext, limit: int = FAN_OUT_BATCH) -> tuple[int, int, set[str]]:
    """Turn up to `limit` pending events into deliveries. Returns (events, deliveries, endpoints)."""
    query = (
        system_scope(outbox)
        .select(
            outbox.c.seq,
            outbox.c.id,
            outbox.c.workspace_id,
            outbox.c.kind,
            outbox.c.payload,
            outbox.c.created_at,
        )
        .where(outbox.c.dispatched_at.is_(None))
        .order_by(outbox.c.seq)
        .limit(limit)
    )
    if _postgres(ctx):
        query = query.with_for_update(skip_locked=True)
    events = (await ctx.conn.execute(query)).all()
    if not events:
        return 0, 0, set()
    workspaces = sorted({e.workspace_id for e in events})
    subscribed: dict[str, list[tuple[str, list[str]]]] = defaultdict(list)
    for hook in await ctx.conn.execute(
        system_scope(webhooks)
        .select(webhooks.c.id, webhooks.c.workspace_id, webhooks.c.events)
        .where(_among(ctx, webhooks.c.workspace_id, workspaces), webhooks.c.enabled.is_(True))
    ):
        subscribed[hook.workspace_id].append((hook.id, list(hook.events)))
    pairs = [
        (event, hook_id)
        for event in events
        for hook_id, kinds in subscribed.get(event.workspace_id, ())
        if event.kind in kinds
    ]
    rows: list[dict[str, Any]] = []
    bodies: dict[str, bytes] = {}
    # ids of one batch share their time part; sorted, they follow the events' order (newest-first lists)
    for (event, hook_id), delivery_id in zip(pairs, sorted(new_ids("whd", len(pairs))), strict=True):
        if event.id not in bodies:
            data = event.payload.get("data") if isinstance(event.payload, dict) else None
            bodies[event.id] = rules.body_bytes(
                event.id, event.kind, event.created_at, event.workspace_id, data
            )
        rows.append(
            {
                "id": delivery_id,
                "workspace_id": event.workspace_id,
                "webhook_id": hook_id,
                "event_id": event.id,
                "type": event.kind,
                "body": bodies[event.id].decode(),
                "status": "pending",
                "attempts": 0,
                "round_attempts": 0,
                "next_attempt_at": ctx.now,
                "created_at": ctx.now,
            }
        )
    if rows:
        await ctx.conn.execute(insert_skipping_duplicates(ctx, d), rows)
    await ctx.conn.execute(
        system_scope(outbox)
        .update()
        .where(_among(ctx, outbox.c.seq, [e.seq for e in events]))
        .values(dispatched_at=ctx.now)
    )
    return len(events), len(rows), {r["webhook_id"] for r in rows}


# --- claim ------------------------------------------------------------------------------------------------


async def _enabled_endpoints(ctx: SystemContext) -> list[str]:
    rows = await ctx.conn.execute(
        system_scope(webhooks).select(webhooks.c.id).where(webhooks.c.enabled.is_(True))
    )
    return sorted(str(r) for r in rows.scalars())


async def claim_due(ctx: SystemContext, slots: dict[str, int]) -> list[Claimed]:
    """Claim up to `slots[endpoint]` due deliveries of each endpoint, oldest due first, for one lease."""
    if not slots:
        return []
    due = (d.c.next_attempt_at.is_not(None), d.c.next_attempt_at <= ctx.now)
    ids: list[str] = []
    if _postgres(ctx):
        hooks = (
            func.unnest(
                bindparam("hook_ids", list(slots), type_=ARRAY(String())),
                bindparam("hook_slots", list(slots.values()), type_=ARRAY(Integer())),
            )
            .table_valued("id", "slots")
            .render_derived(name="w")
        )
        picked = (
            system_scope(d)
            .select(d.c.id)
            .where(d.c.webhook_id == hooks.c.id, *due)
            .order_by(d.c.next_attempt_at)
            .limit(hooks.c.slots)
            .with_for_update(skip_locked=True)
            .lateral("p")
        )
        query = system_scope(d).select(picked.c.id).select_from(hooks).join(picked, true())
        ids = [str(i) for i in (await ctx.conn.execute(query)).scalars()]
    else:
        # SQLite: one writer at a time, so nothing to skip; one probe of the due index per endpoint
        items = sorted(slots.items())
        for start in range(0, len(items), _UNION_CHUNK):
            parts = [
                system_scope(d)
                .select(d.c.id)
                .where(d.c.webhook_id == hook_id, *due)
                .order_by(d.c.next_attempt_at)
                .limit(n)
                .subquery()
                for hook_id, n in items[start : start + _UNION_CHUNK]
            ]
            union = parts[0].select() if len(parts) == 1 else _union(parts)
            ids += [str(i) for i in (await ctx.conn.execute(union)).scalars()]
    if not ids:
        return []
    lease = ctx.now + timedelta(seconds=rules.lease_seconds(ctx.settings.webhook_timeout_s))
    claimed = (
        await ctx.conn.execute(
            system_scope(d)
            .update()
            .where(_among(ctx, d.c.id, ids))
            .values(next_attempt_at=lease, claimed_until=lease)
            .returning(
                d.c.id,
                d.c.workspace_id,
                d.c.webhook_id,
                d.c.event_id,
                d.c.type,
                d.c.body,
                d.c.round_attempts,
            )
        )
    ).all()
    targets = await _targets(ctx, sorted({c.webhook_id for c in claimed}))
    return [
        Claimed(
            delivery_id=c.id,
            workspace_id=c.workspace_id,
            webhook_id=c.webhook_id,
            event_id=c.event_id,
            type=c.type,
            body=c.body.encode(),
            round_attempts=c.round_attempts,
            url=targets[c.webhook_id][0],
            secrets=targets[c.webhook_id][1],
        )
        for c in sorted(claimed, key=lambda c: c.id)
    ]


def _union(parts: list[Any]) -> Any:
    return union_all(*(p.select() for p in parts))


async def _targets(ctx: SystemContext, hook_ids: list[str]) -> dict[str, tuple[str, tuple[str, ...]]]:
    """URL and signing secrets (decrypted; the previous one too while its overlap lasts) per endpoint."""
    rows = await ctx.conn.execute(
        system_scope(webhooks)
        .select(
            webhooks.c.id,
            webhooks.c.url,
            webhooks.c.secret_encrypted,
            webhooks.c.previous_secret_encrypted,
            webhooks.c.previous_secret_until,
        )
        .where(_among(ctx, webhooks.c.id, hook_ids))
    )
    out: dict[str, tuple[str, tuple[str, ...]]] = {}
    for r in rows:
        tokens = [r.secret_encrypted]
        if r.previous_secret_encrypted and r.previous_secret_until and r.previous_secret_until > ctx.now:
            tokens.append(r.previous_secret_encrypted)
        try:
            secrets = tuple(decrypt(ctx.settings, t, rules.SECRET_PURPOSE) for t in tokens)
        except UndecryptableSecret:
            secrets = ()  # recorded as a failed attempt: nothing is sent unsigned
        out[r.id] = (r.url, secrets)
    return out


# --- record -----------------------------------------------------------------------------------------------


async def record_attempts(
    ctx: SystemContext, attempts: Sequence[Attempt], rng: random.Random | None = None
) -> int:
    """Write what the POSTs got and move deliveries and endpoints on (see the module docstring)."""
    if not attempts:
        return 0
    now = ctx.now
    existing = set(
        (
            await ctx.conn.execute(
                system_scope(d)
                .select(d.c.id)
                .where(_among(ctx, d.c.id, [a.claimed.delivery_id for a in attempts]))
            )
        ).scalars()
    )
    attempts = sorted((a for a in attempts if a.claimed.delivery_id in existing), key=lambda a: a.at)
    if not attempts:
        return 0
    ids = new_ids("wha", len(attempts))
    await ctx.conn.execute(
        *system_scope(webhook_attempts).insert_many(
            [
                {
                    "id": attempt_id,
                    "workspace_id": a.claimed.workspace_id,
                    "delivery_id": a.claimed.delivery_id,
                    "at": a.at,
                    "status": a.status,
                    "ms": a.ms,
                    "error": a.error,
                }
                for attempt_id, a in zip(ids, attempts, strict=True)
            ]
        )
    )
    schedule = ctx.settings.webhook_retry_delays
    moves: list[dict[str, Any]] = []
    for a in attempts:
        done = rules.is_delivered(a.status)
        round_attempts = a.claimed.round_attempts + 1
        delay = None if done or a.status == 410 else rules.retry_delay(round_attempts, schedule, rng)
        moves.append(
            {
                "id": a.claimed.delivery_id,
                "status": "delivered" if done else ("pending" if delay is not None else "failed"),
                "round_attempts": round_attempts,
                "next_attempt_at": now + timedelta(seconds=delay) if delay is not None else None,
                "last_status": a.status,
                "last_error": a.error,
                "delivered_at": now if done else None,
            }
        )
    await update_each(
        ctx,
        system_scope(d).update(),
        moves,
        where=lambda v: [d.c.status == "pending"],
        values=lambda v: {
            "status": v["status"],
            "attempts": d.c.attempts + 1,
            "round_attempts": v["round_attempts"],
            "next_attempt_at": v["next_attempt_at"],
            "claimed_until": None,
            "last_status": v["last_status"],
            "last_error": v["last_error"],
            "delivered_at": v["delivered_at"],
        },
    )
    await _update_endpoints(ctx, attempts)
    return len(attempts)


async def _update_endpoints(ctx: SystemContext, attempts: Sequence[Attempt]) -> None:
    """Last status and failure streak per endpoint (attempts in time order), then turn off the endpoints
    that answered 410 or have failed every attempt for long enough."""
    by_hook: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_hook[a.claimed.webhook_id].append(a)
    rows: list[dict[str, Any]] = []
    gone: list[str] = []
    for hook_id, mine in sorted(by_hook.items()):
        successes = [i for i, a in enumerate(mine) if rules.is_delivered(a.status)]
        after = mine[successes[-1] + 1 :] if successes else mine
        rows.append(
            {
                "id": hook_id,
                "last_delivery_at": mine[-1].at,
                "last_status": mine[-1].status,
                "reset": bool(successes),
                "fails": len(after),
                "since": after[0].at if after else None,
            }
        )
        if any(a.status == 410 for a in mine):
            gone.append(hook_id)
    w = webhooks.c
    await update_each(
        ctx,
        system_scope(webhooks).update(),
        rows,
        types={"reset": Boolean(), "fails": Integer(), "since": UtcDateTime()},
        values=lambda v: {
            "last_delivery_at": v["last_delivery_at"],
            "last_status": v["last_status"],
            "failed_attempts": case((v["reset"], v["fails"]), else_=w.failed_attempts + v["fails"]),
            "failing_since": case((v["reset"], v["since"]), else_=func.coalesce(w.failing_since, v["since"])),
        },
    )
    reasons = {hook_id: rules.gone_reason(ctx.now) for hook_id in gone}
    streaks = await ctx.conn.execute(
        system_scope(webhooks)
        .select(w.id, w.failing_since, w.failed_attempts)
        .where(
            _among(ctx, w.id, sorted(by_hook)),
            w.enabled.is_(True),
            w.failed_attempts >= rules.DISABLE_MIN_ATTEMPTS,
            w.failing_since <= ctx.now - rules.DISABLE_AFTER,
        )
    )
    for r in streaks:
        reasons.setdefault(r.id, rules.long_failure_reason(r.failing_since, r.failed_attempts))
    await turn_off(ctx, reasons)


async def turn_off(ctx: SystemContext, reasons: dict[str, str]) -> None:
    """Turn endpoints off with a reason (shown as `disabledReason`); their pending deliveries fail."""
    if not reasons:
        return
    rows = [{"id": k, "disabled_reason": v[:500]} for k, v in sorted(reasons.items())]
    await update_each(
        ctx,
        system_scope(webhooks).update(),
        rows,
        where=lambda v: [webhooks.c.enabled.is_(True)],
        values=lambda v: {"enabled": False, "disabled_reason": v["disabled_reason"], "updated_at": ctx.now},
    )
    await fail_pending(ctx, rows)


async def fail_pending(ctx: SystemContext, rows: list[dict[str, Any]]) -> None:
    """Fail the pending deliveries of endpoints turned off (`rows`: `{id, disabled_reason}`)."""
    await update_each(
        ctx,
        system_scope(d).update(),
        [
            {
                "webhook_id": r["id"],
                "last_error": f"not sent: the endpoint was turned off. {r['disabled_reason']}"[:500],
            }
            for r in rows
        ],
        key="webhook_id",
        where=lambda v: [d.c.status == "pending"],
        values=lambda v: {
            "status": "failed",
            "next_attempt_at": None,
            "claimed_until": None,
            "last_error": v["last_error"],
        },
    )


# --- purge ------------------------------------------------------------------------------------------------


async def purge_old(ctx: SystemContext, batch: int = PURGE_BATCH) -> int:
    """Delete up to `batch` deliveries (with their attempts) and dispatched events older than the 30 days
    deliveries are kept. Returns how many rows went; the worker repeats while a batch comes back full."""
    cutoff = ctx.now - rules.KEEP_DELIVERIES
    old = system_scope(d).select(d.c.id).where(d.c.created_at < cutoff).limit(batch)
    gone = (
        await ctx.conn.execute(system_scope(d).delete().where(d.c.id.in_(old.scalar_subquery())))
    ).rowcount
    events = (
        system_scope(outbox)
        .select(outbox.c.seq)
        .where(outbox.c.dispatched_at.is_not(None), outbox.c.dispatched_at < cutoff)
        .limit(batch)
    )
    dropped = (
        await ctx.conn.execute(
            system_scope(outbox).delete().where(outbox.c.seq.in_(events.scalar_subquery()))
        )
    ).rowcount
    return max(int(gone), int(dropped))


# --- helpers ----------------------------------------------------------------------------------------------


def _postgres(ctx: SystemContext) -> bool:
    return ctx.conn.dialect.name == "postgresql"


def _among(ctx: SystemContext, column: ColumnElement[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """`column IN (values)`, as one array parameter on PostgreSQL."""
    if _postgres(ctx):
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(list(values))


def parse_body(body: str) -> dict[str, Any]:
    """A stored body as JSON (it was written by `rules.body_bytes`)."""
    value = json.loads(body)
    return value if isinstance(value, dict) else {"body": value}
