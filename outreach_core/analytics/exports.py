"""CSV exports a spreadsheet opens (UTF-8 with a byte order mark, a header row, CRLF lines): the overview's
days and a campaign's leads. Cells that a spreadsheet would read as a formula are prefixed with `'`."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from outreach_core.analytics.schemas import CampaignLeadExport
from outreach_core.campaigns.store import campaign_row
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import campaign_leads, leads

BOM = "\ufeff"
CHUNK_ROWS = 1000
LEAD_COLUMNS = (
    "email",
    "first_name",
    "last_name",
    "company",
    "title",
    "country",
    "status",
    "emails_sent",
    "last_sent_at",
    "reason",
    "added_at",
)


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def csv_stream(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> Iterator[bytes]:
    """The CSV document in chunks of encoded bytes: the BOM and header, then `CHUNK_ROWS` rows a chunk."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    buffer.write(BOM)
    writer.writerow(header)
    for n, row in enumerate(rows, 1):
        writer.writerow([_cell(v) for v in row])
        if n % CHUNK_ROWS == 0:
            yield buffer.getvalue().encode("utf-8")
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue().encode("utf-8")


def overview_csv(answer: Any) -> Iterator[bytes]:
    """The overview's days: date, sent, replied, positive, bounced, opened."""
    header = ("date", "sent", "replied", "positive", "bounced", "opened")
    return csv_stream(header, ([getattr(d, k) for k in header] for d in answer.series))


def leads_csv(answer: CampaignLeadExport) -> Iterator[bytes]:
    return csv_stream(LEAD_COLUMNS, answer.rows)


async def export_campaign_leads(ctx: WorkspaceContext, id: str) -> CampaignLeadExport:
    """Every lead of the campaign with its progress, oldest first, for the CSV export."""
    await campaign_row(ctx, id)
    cl = campaign_leads
    rows = await ctx.conn.execute(
        scoped(ctx, cl)
        .select(
            leads.c.email,
            leads.c.first_name,
            leads.c.last_name,
            leads.c.company,
            leads.c.title,
            leads.c.country,
            cl.c.status,
            cl.c.step,
            cl.c.last_sent_at,
            cl.c.reason,
            cl.c.added_at,
        )
        .select_from(cl.join(leads, leads.c.id == cl.c.lead_id))
        .where(cl.c.campaign_id == id)
        .order_by(cl.c.added_at, cl.c.id)
    )
    return CampaignLeadExport(
        rows=[
            [
                *(r[i] or "" for i in range(6)),
                r.status,
                str(r.step),
                _iso(r.last_sent_at),
                r.reason or "",
                _iso(r.added_at),
            ]
            for r in rows
        ]
    )


def _iso(at: Any) -> str:
    return "" if at is None else at.isoformat(timespec="seconds").replace("+00:00", "Z")
