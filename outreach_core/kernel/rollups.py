"""Analytics rollups, kept in the transactions that change what they count (issue 28, docs/analytics.md).

Counters live in `analytics_counters` in UTC buckets: hourly (`h`), daily (`d`) and weekly (`k`, 7-day
blocks from the epoch) for what a period asks (the workspace, campaigns, mailboxes, ESPs, the reply heatmap
and countries), all-time (`t`) for a campaign's breakdown (step and variant, mailbox, ESP). Calendar days of
any time zone are unions of whole UTC hours, so a change of the workspace time zone moves day boundaries
without rewriting a counter (zones with a half-hour offset are read at the hour: documented); a period reads
the weeks inside it, the days at their edges and the hours at the days' edges (`analytics/rules.py:pieces`).

What calls what (each in the transaction that records the change):

- `count_sends(ctx, ids)` after a send became `sent` or `bounced` (sender outcomes, crash recovery), and
  with `sign=-1` before a send stops counting (a soft bounce sends the step again; a hard bounce read from
  the mailbox turns `sent` into `bounced`: un-count, change, count). Sent and bounced count at `sent_at`.
- `sync_replies(ctx, lead_ids)` after the inbox recorded messages of those leads and after a thread's label
  changed: it recounts each lead's replies (one per lead and campaign: its first reply to a campaign email,
  counted against that email's step, variant, mailbox and ESP, at the hour it arrived, under the label type
  its thread carries now) and moves only what differs from what was counted (`analytics_replies`).
- `count_won(ctx, at, campaign_id)` when a lead is marked won (`sign=-1` for the win it replaces).
- `count_opens(ctx, opens)`: first opens of people (not scanners), in the transaction that records them
  (`tracking/record.py`).

`outreach analytics rebuild` (analytics/rebuild.py) counts the ledger again set-based (what `add_send` and
a first open count, in SQL) and the replies with `sync_replies`; a test proves both give the same counters.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import Column, MetaData, Table, text
from sqlalchemy.dialects import postgresql, sqlite

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import (
    analytics_counters,
    analytics_replies,
    inbox_messages,
    labels,
    leads,
    sends,
    threads,
    workspaces,
)
from outreach_core.kernel.db.tables.analytics import COUNTERS

UTC = dt.UTC
EPOCH = dt.datetime(1970, 1, 1, tzinfo=UTC)
SENTIMENTS = ("positive", "negative", "neutral", "warning")
TIMED_DIMS = ("w", "c", "m", "e")
"""Dimensions counted per hour and per day (a period's totals and series)."""
TOTAL_DIMS = ("v", "cm", "ce")
"""Dimensions counted since the beginning (a campaign's breakdown)."""
COUNTED_SENDS = ("sent", "bounced")
NO_KEY = "-"
WEEK = 7 * 86400
"""The weekly grain (`k`): 7-day UTC blocks counted from the epoch (so they begin on Thursdays 00:00 UTC)."""
WEEK_BUCKET = {
    "postgresql": "to_timestamp(floor(extract(epoch FROM {bucket}) / 604800) * 604800)",
    "sqlite": "strftime('%Y-%m-%d %H:%M:%S.000000', "
    "CAST(strftime('%s', {bucket}) AS INTEGER) / 604800 * 604800, 'unixepoch')",
}
"""The week of a bucket column, as SQL spelling it as the counters' column stores it (`timestamptz` on
PostgreSQL, naive UTC text on SQLite): the rebuild and migration 0031 count weeks with it."""
_KEY = ("workspace_id", "dim", "k1", "k2", "grain", "bucket")
_CHUNK = 400

Key = tuple[str, str, str, str, dt.datetime]


def hour_of(at: dt.datetime) -> dt.datetime:
    return at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)


def day_of(at: dt.datetime) -> dt.datetime:
    return at.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)


@lru_cache(maxsize=512)
def zone_or_none(name: str | None) -> ZoneInfo | None:
    """The IANA zone `name`, or None when it is empty or unknown."""
    if not name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


_INDEX = {name: i for i, name in enumerate(COUNTERS)}


class Tally:
    """Counter deltas by rollup key, written in one executemany (`apply`). Buckets are kept as UNIX seconds
    while counting (cheap for a rebuild's millions of rows) and become UTC datetimes when written."""

    def __init__(self) -> None:
        self.rows: dict[tuple[str, str, str, str, int], list[int]] = {}

    def add(self, dim: str, k1: str, k2: str, at: dt.datetime | None, counts: Mapping[str, int]) -> None:
        """Add `counts` under one key: per hour, day and week at `at`, or all-time when `at` is None."""
        self._add(dim, k1, k2, None if at is None else int(at.timestamp()), _items(counts))

    def _add(self, dim: str, k1: str, k2: str, ts: int | None, items: list[tuple[int, int]]) -> None:
        keys = (
            ((dim, k1, k2, "t", 0),)
            if ts is None
            else (
                (dim, k1, k2, "h", ts - ts % 3600),
                (dim, k1, k2, "d", ts - ts % 86400),
                (dim, k1, k2, "k", ts - ts % WEEK),
            )
        )
        rows = self.rows
        for key in keys:
            row = rows.get(key)
            if row is None:
                row = rows[key] = [0] * len(COUNTERS)
            for i, n in items:
                row[i] += n

    def send(
        self,
        *,
        at: dt.datetime,
        campaign_id: str,
        step: int,
        variant_id: str | None,
        mailbox_id: str | None,
        esp: str | None,
        counts: Mapping[str, int],
    ) -> None:
        """What a campaign email (or the reply or open it got) counts under."""
        mailbox, provider = mailbox_id or NO_KEY, esp or "unknown"
        items = _items(counts)
        ts = int(at.timestamp())
        self._add("w", "", "", ts, items)
        self._add("c", campaign_id, "", ts, items)
        self._add("m", mailbox, "", ts, items)
        self._add("e", provider, "", ts, items)
        self._add("v", campaign_id, f"{step}:{variant_id or NO_KEY}", None, items)
        self._add("cm", campaign_id, mailbox, None, items)
        self._add("ce", campaign_id, provider, None, items)

    def send_row(self, row: Any, at: dt.datetime, counts: Mapping[str, int]) -> None:
        """`send` for a ledger row (`campaign_id, step, variant_id, mailbox_id, esp`), counted at `at`."""
        self.send(
            at=at,
            campaign_id=row.campaign_id,
            step=row.step,
            variant_id=row.variant_id,
            mailbox_id=row.mailbox_id,
            esp=row.esp,
            counts=counts,
        )

    def merge(self, other: Tally) -> None:
        """Add `other`'s deltas to this tally."""
        rows = self.rows
        for key, counts in other.rows.items():
            row = rows.get(key)
            if row is None:
                rows[key] = list(counts)
            else:
                for i, n in enumerate(counts):
                    row[i] += n

    def nonzero(self) -> list[dict[str, Any]]:
        out = []
        for (dim, k1, k2, grain, ts), row in self.rows.items():
            if any(row):
                out.append(
                    {
                        "dim": dim,
                        "k1": k1,
                        "k2": k2,
                        "grain": grain,
                        "bucket": _instant(ts),
                        **dict(zip(COUNTERS, row, strict=True)),
                    }
                )
        return out


def _items(counts: Mapping[str, int]) -> list[tuple[int, int]]:
    return [(_INDEX[name], n) for name, n in counts.items() if n]


@lru_cache(maxsize=65536)
def _instant(ts: int) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=ts)


async def apply(ctx: WorkspaceContext, tally: Tally, sign: int = 1) -> None:
    """Add the tally's deltas (times `sign`) to the workspace's counters."""
    rows = tally.nonzero()
    if sign != 1:
        rows = [{**r, **{c: r[c] * sign for c in COUNTERS}} for r in rows]
    if not rows:
        return
    values = [{**r, "workspace_id": ctx.workspace_id} for r in rows]
    await ctx.conn.execute(_upsert(ctx.conn.dialect.name), values)


_STAGED = "analytics_counters_staged"


async def apply_staged(ctx: WorkspaceContext, tally: Tally) -> None:
    """`apply` for a large tally (the rebuild's): the rows inserted into a temporary table without indexes,
    then added to the counters in one `INSERT ... SELECT ... ON CONFLICT` (an executemany upsert of 10^5-10^6
    rows walks both indexes row by row)."""
    rows = tally.nonzero()
    if not rows:
        return
    conn = ctx.conn
    names = ", ".join(("workspace_id", *_KEY[1:], *COUNTERS))
    await conn.execute(text(f"DROP TABLE IF EXISTS {_STAGED}"))
    await conn.execute(
        text(f"CREATE TEMPORARY TABLE {_STAGED} AS SELECT {names} FROM analytics_counters WHERE 1 = 0")
    )
    staged = Table(_STAGED, MetaData(), *(Column(c.name, c.type) for c in analytics_counters.c))
    for start in range(0, len(rows), 50_000):
        await conn.execute(
            staged.insert(), [{**r, "workspace_id": ctx.workspace_id} for r in rows[start : start + 50_000]]
        )
    added = ", ".join(f"{c} = analytics_counters.{c} + excluded.{c}" for c in COUNTERS)
    await conn.execute(
        text(
            f"""INSERT INTO analytics_counters ({names}) SELECT {names} FROM {_STAGED} WHERE true
            ON CONFLICT ({", ".join(_KEY)}) DO UPDATE SET {added}"""
        )
    )
    await conn.execute(text(f"DROP TABLE {_STAGED}"))


@lru_cache(maxsize=2)
def _upsert(dialect_name: str) -> Any:
    """`INSERT ... ON CONFLICT (key) DO UPDATE SET n = n + excluded.n`, run once per row (executemany),
    which SQLite and PostgreSQL spell the same way; built once (its compiled form is cached)."""
    table = analytics_counters
    dialect = postgresql if dialect_name == "postgresql" else sqlite
    stmt = dialect.insert(table)
    return stmt.on_conflict_do_update(
        index_elements=[table.c[k] for k in _KEY],
        set_={c: table.c[c] + stmt.excluded[c] for c in COUNTERS},
    )


# --- sends -------------------------------------------------------------------------------------------------


async def _ledger_rows(ctx: WorkspaceContext, send_ids: Sequence[str], *columns: Any) -> list[Any]:
    """The workspace's ledger rows `send_ids` with what a counter is keyed by (campaign, step, variant,
    mailbox, the lead's ESP) and `columns`, read in chunks of `_CHUNK` ids."""
    rows: list[Any] = []
    for start in range(0, len(send_ids), _CHUNK):
        found = await ctx.conn.execute(
            scoped(ctx, sends)
            .select(
                sends.c.campaign_id,
                sends.c.step,
                sends.c.variant_id,
                sends.c.mailbox_id,
                leads.c.esp,
                *columns,
            )
            .select_from(sends.outerjoin(leads, leads.c.id == sends.c.lead_id))
            .where(sends.c.id.in_(list(send_ids[start : start + _CHUNK])))
        )
        rows.extend(found)
    return rows


async def tally_sends(ctx: WorkspaceContext, tally: Tally, send_ids: Sequence[str], sign: int = 1) -> None:
    """Add what the ledger rows `send_ids` count now (sent; bounced) to `tally`."""
    for r in await _ledger_rows(ctx, send_ids, sends.c.status, sends.c.sent_at):
        add_send(tally, r, sign)


def add_send(tally: Tally, r: Any, sign: int = 1) -> None:
    """One ledger row (`campaign_id, step, variant_id, mailbox_id, status, sent_at, esp`) into `tally`."""
    if r.status not in COUNTED_SENDS or r.sent_at is None:
        return
    counts = {"sent": sign, "bounced": sign if r.status == "bounced" else 0}
    tally.send_row(r, r.sent_at, counts)


async def count_sends(ctx: WorkspaceContext, send_ids: Sequence[str], sign: int = 1) -> None:
    """Count the ledger rows `send_ids` as they are now (`sign=-1`: stop counting them)."""
    if not send_ids:
        return
    tally = Tally()
    await tally_sends(ctx, tally, send_ids, sign)
    await apply(ctx, tally)


async def count_opens(ctx: WorkspaceContext, opens: Sequence[tuple[str, dt.datetime]]) -> None:
    """The first opens `(send_id, at)` of emails of the workspace by people; an email opened again is not
    counted again (tracking calls it in the transaction that records them). One read and one write (a batch
    of tracking hits of a fresh campaign is mostly first opens; one at a time, they were most of the
    recorder's round trips)."""
    if not opens:
        return
    at_of = dict(opens)
    tally = Tally()
    for row in await _ledger_rows(ctx, sorted(at_of), sends.c.id):
        tally.send_row(row, at_of[row.id], {"opened": 1})
    await apply(ctx, tally)


# --- wins --------------------------------------------------------------------------------------------------


def add_won(tally: Tally, at: dt.datetime, campaign_id: str | None, sign: int = 1) -> None:
    tally.add("w", "", "", at, {"won": sign})
    if campaign_id:
        tally.add("c", campaign_id, "", at, {"won": sign})


async def count_won(ctx: WorkspaceContext, at: dt.datetime, campaign_id: str | None, sign: int = 1) -> None:
    """A lead marked won at `at` (by `campaign_id`, when given); `sign=-1` for the win it replaces."""
    tally = Tally()
    add_won(tally, at, campaign_id, sign)
    await apply(ctx, tally)


# --- replies -----------------------------------------------------------------------------------------------


async def workspace_zone(ctx: WorkspaceContext) -> str:
    found = await ctx.conn.execute(scoped(ctx, workspaces).select(workspaces.c.timezone))
    return found.scalar_one_or_none() or "UTC"


def reply_signature(r: Any, fallback_zone: str) -> str:
    """What one reply counts under, as text (`|`-separated; ids hold no `|`)."""
    arrived: dt.datetime = r.arrived_at.astimezone(UTC)
    zone = zone_or_none(r.timezone) or zone_or_none(fallback_zone) or UTC
    local = arrived.astimezone(zone)
    sentiment = r.label_type if r.label_type in SENTIMENTS else ""
    country = (r.country or "").upper()
    parts = (
        arrived.isoformat(),
        r.campaign_id,
        str(r.step),
        r.variant_id or NO_KEY,
        r.mailbox_id or NO_KEY,
        r.esp or "unknown",
        str(local.weekday()),
        str(local.hour),
        country,
        sentiment,
    )
    return "|".join(parts)


def add_reply(tally: Tally, signature: str, sign: int = 1) -> None:
    """The counts of one reply (its `reply_signature`) into `tally`."""
    at, campaign, step, variant, mailbox, esp, dow, hour, country, sentiment = signature.split("|")
    counts = {"replied": sign}
    if sentiment:
        counts[sentiment] = sign
    when = dt.datetime.fromisoformat(at)
    tally.send(
        at=when,
        campaign_id=campaign,
        step=int(step),
        variant_id=None if variant == NO_KEY else variant,
        mailbox_id=None if mailbox == NO_KEY else mailbox,
        esp=esp,
        counts=counts,
    )
    tally.add("hm", dow, hour, when, {"replied": sign})
    tally.add("co", country, "", when, {"replied": sign})


async def counted_replies(ctx: WorkspaceContext, lead_ids: Sequence[str]) -> dict[tuple[str, str], Any]:
    """Each lead's counted reply per campaign, from the inbox now: its first received reply to a campaign
    email, with the email's step, variant, mailbox, the lead's ESP, country and zone and the label type of
    the reply's thread. Keyed by (lead, campaign)."""
    out: dict[tuple[str, str], Any] = {}
    for start in range(0, len(lead_ids), _CHUNK):
        m = inbox_messages
        found = await ctx.conn.execute(
            scoped(ctx, m)
            .select(
                m.c.id,
                m.c.arrived_at,
                m.c.thread_id,
                sends.c.lead_id,
                sends.c.campaign_id,
                sends.c.step,
                sends.c.variant_id,
                sends.c.mailbox_id,
                leads.c.esp,
                leads.c.country,
                leads.c.timezone,
                labels.c.type.label("label_type"),
            )
            .select_from(
                m.join(sends, sends.c.id == m.c.send_id)
                .join(leads, leads.c.id == sends.c.lead_id)
                .join(threads, threads.c.id == m.c.thread_id)
                .outerjoin(labels, labels.c.id == threads.c.label_id)
            )
            .where(
                # the workspace on the ledger too: its (workspace, lead) index finds the lead's emails
                sends.c.workspace_id == ctx.workspace_id,
                sends.c.lead_id.in_(list(lead_ids[start : start + _CHUNK])),
                m.c.direction == "in",
                m.c.kind == "reply",
            )
            .order_by(m.c.arrived_at, m.c.id)
        )
        for r in found:
            out.setdefault((r.lead_id, r.campaign_id), r)
    return out


async def sync_replies(
    ctx: WorkspaceContext, lead_ids: Iterable[str], zone_name: str | None = None, into: Tally | None = None
) -> None:
    """Recount the replies of `lead_ids` (see the module's docstring) and move what changed (the counter
    deltas added to `into` instead, when given: the rebuild writes them all at once)."""
    ids = sorted(set(lead_ids))
    if not ids:
        return
    fallback = zone_name or await workspace_zone(ctx)
    desired = {
        key: (r.id, r.thread_id, reply_signature(r, fallback))
        for key, r in (await counted_replies(ctx, ids)).items()
    }
    stored: dict[tuple[str, str], tuple[str, str, str]] = {}
    table = analytics_replies
    for start in range(0, len(ids), _CHUNK):
        found = await ctx.conn.execute(
            scoped(ctx, table)
            .select(
                table.c.lead_id, table.c.campaign_id, table.c.message_id, table.c.thread_id, table.c.signature
            )
            .where(table.c.lead_id.in_(ids[start : start + _CHUNK]))
        )
        for r in found:
            stored[(r.lead_id, r.campaign_id)] = (r.message_id, r.thread_id, r.signature)
    tally = Tally()
    gone, fresh = [], []
    for key in stored.keys() | desired.keys():
        old, new = stored.get(key), desired.get(key)
        if old == new:
            continue
        if old is not None:
            add_reply(tally, old[2], -1)
            gone.append(key)
        if new is not None:
            add_reply(tally, new[2], 1)
            fresh.append(
                {
                    "lead_id": key[0],
                    "campaign_id": key[1],
                    "message_id": new[0],
                    "thread_id": new[1],
                    "signature": new[2],
                }
            )
    for lead_id, campaign_id in gone:
        await ctx.conn.execute(
            scoped(ctx, table).delete().where(table.c.lead_id == lead_id, table.c.campaign_id == campaign_id)
        )
    if fresh:
        await ctx.conn.execute(*scoped(ctx, table).insert_many(fresh))
    if into is None:
        await apply(ctx, tally)
    else:
        into.merge(tally)


async def leads_of_threads_labeled(ctx: WorkspaceContext, label_id: str) -> list[str]:
    """The leads whose reply threads carry `label_id` (their replies move when the label's type changes or
    the label is deleted: call `sync_replies` with them afterwards)."""
    found = await ctx.conn.execute(
        scoped(ctx, threads).select(threads.c.lead_id).where(threads.c.label_id == label_id).distinct()
    )
    return [r.lead_id for r in found]
