"""Alembic environment: runs on the connection handed over by `outreach_core.kernel.db.migrate`."""

from __future__ import annotations

from alembic import context

from outreach_core.kernel.db.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `outreach migrate` (outreach_core.kernel.db.migrate)")

context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
)
with context.begin_transaction():
    context.run_migrations()
