"""The delivery pipeline's database side, across workspaces (the `webhooks` worker calls these).

One cycle of the worker is one transaction (`run_cycle`), a handful of statements whatever the batch:

1. **record** the attempts that finished since the last cycle (`attempts.record_attempts`);
2. **fan out** pending outbox events, oldest first (taken and marked dispatched in one statement, `FOR
   UPDATE SKIP LOCKED` on PostgreSQL): one delivery per enabled endpoint subscribed to the kind, holding
   the exact body bytes (`UNIQUE(webhook_id, event_id)` keeps a repeated fan-out from doubling one);
3. **claim** due deliveries per endpoint, at most as many as the endpoint has free slots in this process
   (one index probe per endpoint, so one endpoint's backlog never hides another's work), moving each to
   the end of its lease: a worker that dies after the POST and before the record leaves it to become due
   again, and it is POSTed again (at least once; the receiver dedupes by `Service-Event-Id`).

The POSTs run between cycles, with no transaction open.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ARRAY, Integer, String, bindparam, func, or_, true, union_all

from outreach_core.kernel.bulk import insert_skipping_duplicates
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.crypto import UndecryptableSecret, decrypt
from outreach_core.kernel.db.tables import outbox, webhook_deliveries, webhooks
from outreach_core.kernel.ids import new_ids
from outreach_core.webhooks import rules
from outreach_core.webhooks.attempts import Attempt, Claimed, among, record_attempts

__all__ = ["Attempt", "Claimed", "CycleOutcome", "anything_to_do", "purge_old", "run_cycle"]

d = webhook_deliveries
FAN_OUT_BATCH = 1000
PURGE_BATCH = 5000
_UNION_CHUNK = 200  # SQLite allows 500 terms in a compound SELECT


@dataclass
class CycleOutcome:
    recorded: int = 0
    events: int = 0
    created: int = 0
    claimed: list[Claimed] = field(default_factory=list)
    full: set[str] = field(default_factory=set)  # endpoints whose every free slot was filled: maybe more


@dataclass(frozen=True)
class _Endpoint:
    id: str
    workspace_id: str
    events: tuple[str, ...]
    url: str
    secret_encrypted: str
    previous_secret_encrypted: str | None
    previous_secret_until: datetime | None


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
    caps: dict[str, int],
    default_cap: int,
    probe: set[str] | None,
    claim: bool = True,
    rng: random.Random | None = None,
) -> CycleOutcome:
    """Record `attempts`, fan out pending events and claim due deliveries, in this one transaction.

    `outstanding` counts the deliveries this process holds per endpoint (claimed, not yet recorded); an
    endpoint gets at most `caps[endpoint]` of them (`default_cap` for the others). `probe` limits the claim
    to those endpoints (plus any that got new deliveries in this cycle); None looks at every enabled
    endpoint."""
    outcome = CycleOutcome()
    outcome.recorded = await record_attempts(ctx, attempts, rng)
    if not claim:
        return outcome
    events = await _take_events(ctx)
    endpoints = await _endpoints(ctx, {e.workspace_id for e in events}, probe)
    outcome.events = len(events)
    touched = await _fan_out(ctx, events, endpoints.values())
    outcome.created = sum(touched.values())
    # Between full probes only the endpoints named, or given new deliveries, are looked at (a turned-off
    # endpoint has nothing due: its pending deliveries failed when it was turned off).
    candidates = sorted(w for w in endpoints if probe is None or w in probe or w in touched)
    slots = {w: caps.get(w, default_cap) - outstanding.get(w, 0) for w in candidates}
    slots = {w: n for w, n in slots.items() if n > 0}
    outcome.claimed = await _claim_due(ctx, slots, endpoints)
    got: dict[str, int] = defaultdict(int)
    for c in outcome.claimed:
        got[c.webhook_id] += 1
    outcome.full = {w for w, n in slots.items() if got[w] >= n}
    return outcome


# --- fan-out ---------------------------------------------------------------------------------------------


async def _take_events(ctx: SystemContext, limit: int = FAN_OUT_BATCH) -> list[Any]:
    """Up to `limit` pending events, oldest first, marked dispatched in the same statement."""
    pending = (
        system_scope(outbox)
        .select(outbox.c.seq)
        .where(outbox.c.dispatched_at.is_(None))
        .order_by(outbox.c.seq)
        .limit(limit)
    )
    if ctx.conn.dialect.name == "postgresql":
        pending = pending.with_for_update(skip_locked=True)
    taken = await ctx.conn.execute(
        system_scope(outbox)
        .update()
        .where(outbox.c.seq.in_(pending))
        .values(dispatched_at=ctx.now)
        .returning(
            outbox.c.seq,
            outbox.c.id,
            outbox.c.workspace_id,
            outbox.c.kind,
            outbox.c.payload,
            outbox.c.created_at,
        )
    )
    return sorted(taken.all(), key=lambda e: e.seq)


async def _endpoints(
    ctx: SystemContext, workspaces: set[str], probe: set[str] | None
) -> dict[str, _Endpoint]:
    """The enabled endpoints this cycle needs: every one (`probe` None), else those of `workspaces` (for
    the fan-out) and those in `probe` (for the claim)."""
    w = webhooks.c
    query = system_scope(webhooks).select(
        w.id,
        w.workspace_id,
        w.events,
        w.url,
        w.secret_encrypted,
        w.previous_secret_encrypted,
        w.previous_secret_until,
    )
    query = query.where(w.enabled.is_(True))
    if probe is not None:
        if not workspaces and not probe:
            return {}
        wanted = []
        if workspaces:
            wanted.append(among(ctx, w.workspace_id, sorted(workspaces)))
        if probe:
            wanted.append(among(ctx, w.id, sorted(probe)))
        query = query.where(or_(*wanted))
    rows = await ctx.conn.execute(query)
    return {
        r.id: _Endpoint(
            r.id,
            r.workspace_id,
            tuple(r.events),
            r.url,
            r.secret_encrypted,
            r.previous_secret_encrypted,
            r.previous_secret_until,
        )
        for r in rows
    }


async def _fan_out(ctx: SystemContext, events: list[Any], endpoints: Iterable[_Endpoint]) -> dict[str, int]:
    """A delivery per (event, subscribed endpoint of its workspace). Returns how many per endpoint."""
    subscribed: dict[str, list[_Endpoint]] = defaultdict(list)
    for endpoint in endpoints:
        subscribed[endpoint.workspace_id].append(endpoint)
    pairs = [
        (event, endpoint.id)
        for event in events
        for endpoint in subscribed.get(event.workspace_id, ())
        if event.kind in endpoint.events
    ]
    if not pairs:
        return {}
    rows: list[dict[str, Any]] = []
    bodies: dict[str, str] = {}
    # ids of one batch share their time part; sorted, they follow the events' order (newest-first lists)
    for (event, hook_id), delivery_id in zip(pairs, sorted(new_ids("whd", len(pairs))), strict=True):
        if event.id not in bodies:
            data = event.payload.get("data") if isinstance(event.payload, dict) else None
            body = rules.body_bytes(event.id, event.kind, event.created_at, event.workspace_id, data)
            bodies[event.id] = body.decode()
        rows.append(
            {
                "id": delivery_id,
                "workspace_id": event.workspace_id,
                "webhook_id": hook_id,
                "event_id": event.id,
                "type": event.kind,
                "body": bodies[event.id],
                "status": "pending",
                "attempts": 0,
                "round_attempts": 0,
                "next_attempt_at": ctx.now,
                "created_at": ctx.now,
            }
        )
    await ctx.conn.execute(insert_skipping_duplicates(ctx, d), rows)
    made: dict[str, int] = defaultdict(int)
    for r in rows:
        made[r["webhook_id"]] += 1
    return made


# --- claim -----------------------------------------------------------------------------------------------


async def _claim_due(
    ctx: SystemContext, slots: dict[str, int], endpoints: dict[str, _Endpoint]
) -> list[Claimed]:
    """Claim up to `slots[endpoint]` due deliveries of each endpoint, oldest due first, for one lease."""
    if not slots:
        return []
    due = (d.c.next_attempt_at.is_not(None), d.c.next_attempt_at <= ctx.now)
    lease = ctx.now + timedelta(seconds=rules.lease_seconds(ctx.settings.webhook_timeout_s))
    picks: list[Any] = []
    if ctx.conn.dialect.name == "postgresql":
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
        picks.append(system_scope(d).select(picked.c.id).select_from(hooks).join(picked, true()))
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
            picks.append(union_all(*(p.select() for p in parts)) if len(parts) > 1 else parts[0].select())
    claimed: list[Any] = []
    for pick in picks:
        claimed += (
            await ctx.conn.execute(
                system_scope(d)
                .update()
                .where(d.c.id.in_(pick))
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
    secrets = {w: _secrets(ctx, endpoints[w]) for w in {c.webhook_id for c in claimed}}
    return [
        Claimed(
            delivery_id=c.id,
            workspace_id=c.workspace_id,
            webhook_id=c.webhook_id,
            event_id=c.event_id,
            type=c.type,
            body=c.body.encode(),
            round_attempts=c.round_attempts,
            url=endpoints[c.webhook_id].url,
            secrets=secrets[c.webhook_id],
        )
        for c in sorted(claimed, key=lambda c: c.id)
    ]


def _secrets(ctx: SystemContext, endpoint: _Endpoint) -> tuple[str, ...]:
    """The signing secrets, decrypted: the current one, and the previous one while its overlap lasts.
    None decrypts (the key that wrote them is gone): empty, and the attempt fails unsent."""
    tokens = [endpoint.secret_encrypted]
    until = endpoint.previous_secret_until
    if endpoint.previous_secret_encrypted and until is not None and until > ctx.now:
        tokens.append(endpoint.previous_secret_encrypted)
    try:
        return tuple(decrypt(ctx.settings, t, rules.SECRET_PURPOSE) for t in tokens)
    except UndecryptableSecret:
        return ()


# --- purge -----------------------------------------------------------------------------------------------


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


def parse_body(body: str) -> dict[str, Any]:
    """A stored body as JSON (it was written by `rules.body_bytes`)."""
    value = json.loads(body)
    return value if isinstance(value, dict) else {"body": value}
