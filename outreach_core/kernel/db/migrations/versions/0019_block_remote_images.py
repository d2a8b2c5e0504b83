"""received HTML already stored: remote images blocked as new messages' are (issue 25.8; docs/inbox.md,
"Threads and messages"): an `img` keeps its `src` only when it is inline (`cid:`, `data:image/`)

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import nh3
import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

BATCH = 500

inbox_messages = sa.table(
    "inbox_messages",
    sa.column("id", sa.String),
    sa.column("direction", sa.String),
    sa.column("html", sa.Text),
)


# A copy of `inbox.record.received_html` as written, not an import: a migration keeps doing what it did.
def _inline_only(element: str, attribute: str, value: str) -> str | None:
    scheme = value.strip().lower()
    if element == "img" and attribute == "src":
        return value if scheme.startswith(("cid:", "data:image/")) else None
    if attribute in ("href", "cite") and scheme.startswith(("cid:", "data:")):
        return None
    return value


def _clean(markup: str) -> str:
    return nh3.clean(
        markup,
        clean_content_tags={"script", "style"},
        url_schemes=nh3.ALLOWED_URL_SCHEMES | {"cid", "data"},
        attribute_filter=_inline_only,
    )


def upgrade() -> None:
    bind = op.get_bind()
    after = ""
    while True:  # keyset pages over the received messages with an image (stored HTML was sanitized already)
        rows = bind.execute(
            sa.select(inbox_messages.c.id, inbox_messages.c.html)
            .where(
                inbox_messages.c.id > after,
                inbox_messages.c.direction == "in",
                inbox_messages.c.html.like("%<img%"),
            )
            .order_by(inbox_messages.c.id)
            .limit(BATCH)
        ).all()
        if not rows:
            return
        for row in rows:
            cleaned = _clean(row.html)
            if cleaned != row.html:
                bind.execute(
                    inbox_messages.update().where(inbox_messages.c.id == row.id).values(html=cleaned)
                )
        after = rows[-1].id


def downgrade() -> None:
    pass  # the remote addresses are gone; nothing to restore
