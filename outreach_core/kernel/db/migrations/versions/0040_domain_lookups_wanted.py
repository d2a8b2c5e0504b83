"""`domain_lookups_wanted`: the mail domains the import merge noted for the `enrich` worker, in the database

Revision ID: 0040
Revises: 0039
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from outreach_core.kernel.db.types import UtcDateTime

revision = "0040"
down_revision = "0039"
branch_labels = None
depends_on = None

# Under `outreach serve` the merge (the `import` worker) and the `enrich` worker run in two processes: the
# domains the merge meets without a cache entry reach the worker through this table instead of the memory
# of one process (issue 31; `outreach_core.enrichment.pipeline`). Nothing to carry over: the in-memory set
# of a running process is only a head start, and every domain in it is still looked up after storing.


def upgrade() -> None:
    op.create_table(
        "domain_lookups_wanted",
        sa.Column("domain", sa.String(253), nullable=False),
        sa.Column("noted_at", UtcDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("domain", name="pk_domain_lookups_wanted"),
    )
    op.create_index("ix_domain_lookups_wanted_noted_at", "domain_lookups_wanted", ["noted_at", "domain"])


def downgrade() -> None:
    op.drop_index("ix_domain_lookups_wanted_noted_at", table_name="domain_lookups_wanted")
    op.drop_table("domain_lookups_wanted")
