"""Recording what the POSTs got, across workspaces (step 1 of a delivery cycle; see `delivery.py`).

Each attempt gets a row; its delivery moves on (delivered; the next retry of the schedule, with jitter;
failed when the schedule is used up or the endpoint answered 410 Gone); its endpoint's last status and
failure streak are updated, and an endpoint that answered 410, or failed every attempt for 3 days and at
least 20 attempts, is turned off with the reason (its pending deliveries fail with it). An attempt whose
delivery no longer exists (the endpoint was deleted while the POST ran) is dropped.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ARRAY, Boolean, ColumnElement, Integer, String, any_, bindparam, case, func
from sqlalchemy.types import TypeEngine

from outreach_core.kernel.bulk import update_each
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.db.tables import webhook_attempts, webhook_deliveries, webhooks
from outreach_core.kernel.db.types import UtcDateTime
from outreach_core.kernel.ids import new_ids
from outreach_core.webhooks import rules

d = webhook_deliveries


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


async def record_attempts(
    ctx: SystemContext, attempts: Sequence[Attempt], rng: random.Random | None = None
) -> int:
    """Write what the POSTs got and move deliveries and endpoints on (see the module docstring)."""
    if not attempts:
        return 0
    recorded = await _insert_attempts(ctx, sorted(attempts, key=lambda a: a.at))
    if not recorded:
        return 0
    now = ctx.now
    schedule = ctx.settings.webhook_retry_delays
    moves: list[dict[str, Any]] = []
    for a in recorded:
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
    await _update_endpoints(ctx, recorded)
    return len(recorded)


async def _insert_attempts(ctx: SystemContext, attempts: list[Attempt]) -> list[Attempt]:
    """An attempt row for each attempt whose delivery still exists; returns those (in time order)."""
    ids = new_ids("wha", len(attempts))
    if ctx.conn.dialect.name == "postgresql":
        # one statement: the rows come in as arrays and are joined to their (still existing) deliveries
        columns: dict[str, tuple[list[Any], TypeEngine[Any]]] = {
            "id": (ids, String()),
            "delivery_id": ([a.claimed.delivery_id for a in attempts], String()),
            "at": ([a.at for a in attempts], UtcDateTime()),
            "status": ([a.status for a in attempts], Integer()),
            "ms": ([a.ms for a in attempts], Integer()),
            "error": ([a.error for a in attempts], String()),
        }
        arrays: list[Any] = [bindparam(f"a_{n}", vs, type_=ARRAY(t)) for n, (vs, t) in columns.items()]
        v = func.unnest(*arrays).table_valued(*columns).render_derived(name="v")
        source = system_scope(d).select(
            v.c.id, d.c.workspace_id, v.c.delivery_id, v.c.at, v.c.status, v.c.ms, v.c.error
        )
        target = ["id", "workspace_id", "delivery_id", "at", "status", "ms", "error"]
        insert = system_scope(webhook_attempts).insert_many([])[0]
        statement = insert.from_select(target, source.where(d.c.id == v.c.delivery_id))
        written = await ctx.conn.execute(statement.returning(webhook_attempts.c.delivery_id))
        existing = set(written.scalars())
        return [a for a in attempts if a.claimed.delivery_id in existing]
    # SQLite (in-process, so two statements cost little)
    wanted = [a.claimed.delivery_id for a in attempts]
    found = await ctx.conn.execute(system_scope(d).select(d.c.id).where(d.c.id.in_(wanted)))
    existing = set(found.scalars())
    kept = [(i, a) for i, a in zip(ids, attempts, strict=True) if a.claimed.delivery_id in existing]
    if kept:
        rows = [
            {
                "id": attempt_id,
                "workspace_id": a.claimed.workspace_id,
                "delivery_id": a.claimed.delivery_id,
                "at": a.at,
                "status": a.status,
                "ms": a.ms,
                "error": a.error,
            }
            for attempt_id, a in kept
        ]
        await ctx.conn.execute(*system_scope(webhook_attempts).insert_many(rows))
    return [a for _, a in kept]


async def _update_endpoints(ctx: SystemContext, attempts: Sequence[Attempt]) -> None:
    """Last status and failure streak per endpoint (attempts in time order), then turn off the endpoints
    that answered 410 or have failed every attempt for long enough."""
    by_hook: dict[str, list[Attempt]] = defaultdict(list)
    for a in attempts:
        by_hook[a.claimed.webhook_id].append(a)
    rows: list[dict[str, Any]] = []
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
    reasons = {
        h: rules.gone_reason(ctx.now) for h, mine in by_hook.items() if any(a.status == 410 for a in mine)
    }
    failing = sorted(h for h, mine in by_hook.items() if not rules.is_delivered(mine[-1].status))
    if failing:
        streaks = await ctx.conn.execute(
            system_scope(webhooks)
            .select(w.id, w.failing_since, w.failed_attempts)
            .where(
                among(ctx, w.id, failing),
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
    failed = [
        {
            "webhook_id": r["id"],
            "last_error": f"not sent: the endpoint was turned off. {r['disabled_reason']}",
        }
        for r in rows
    ]
    await update_each(
        ctx,
        system_scope(d).update(),
        [{**r, "last_error": r["last_error"][:500]} for r in failed],
        key="webhook_id",
        where=lambda v: [d.c.status == "pending"],
        values=lambda v: {
            "status": "failed",
            "next_attempt_at": None,
            "claimed_until": None,
            "last_error": v["last_error"],
        },
    )


def among(ctx: SystemContext, column: ColumnElement[Any], values: Sequence[Any]) -> ColumnElement[bool]:
    """`column IN (values)`, as one array parameter on PostgreSQL."""
    if ctx.conn.dialect.name == "postgresql":
        return column == any_(bindparam(None, list(values), type_=ARRAY(column.type)))
    return column.in_(list(values))
