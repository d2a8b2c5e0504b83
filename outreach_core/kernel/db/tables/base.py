"""The one `MetaData` every table is on, with its naming convention, and the columns every table module
shares."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, MetaData, String

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

ID = String(40)


def ws_fk() -> Column[str]:
    """The `workspace_id` column of a workspace-owned table."""
    return Column("workspace_id", ID, ForeignKey("workspaces.id", ondelete="CASCADE"), nullable=False)
