"""Migrations produce exactly the schema the code declares, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from outreach_core.kernel.db.migrate import alembic_config, migrate
from outreach_core.kernel.db.tables import metadata
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from tests.conftest import PG_URL


async def test_migrated_schema_matches_tables(runtime: Runtime) -> None:
    def diff(sync_conn: Any) -> list[Any]:
        ctx = MigrationContext.configure(sync_conn, opts={"compare_type": False})
        return list(compare_metadata(ctx, metadata))

    async with runtime.engine.connect() as conn:
        differences = [d for d in await conn.run_sync(diff) if not _is_search_index(d)]
    if runtime.engine.dialect.name == "postgresql":  # declared for SQLite, dropped by migration 0035
        differences = [d for d in differences if not _is_postgresql_dropped_fk(d)]
    assert differences == []


def _is_postgresql_dropped_fk(diff: Any) -> bool:
    """The foreign keys of `leads` and `lead_search_pending` to `workspaces` exist on SQLite only: on
    PostgreSQL a trigger on `workspaces` deletes a deleted workspace's rows (migration 0035); so do those of
    `import_seen`, whose rows a trigger on `lead_imports` deletes with their import (migration 0039)."""
    return (
        isinstance(diff, tuple)
        and diff[0] == "add_fk"
        and diff[1].name
        in (
            "fk_leads_workspace_id_workspaces",
            "fk_lead_search_pending_workspace_id_workspaces",
            "fk_import_seen_import_id_lead_imports",
            "fk_import_seen_workspace_id_workspaces",
        )
    )


def _is_search_index(diff: Any) -> bool:
    """The lead search indexes (FTS5 / pg_trgm / short terms / SQLite's email order) and SQLite's covering
    index of the analytics counters are created by raw DDL on purpose."""
    obj = diff[1] if isinstance(diff, tuple) and len(diff) > 1 else None
    name = getattr(obj, "name", "") or ""
    return name.startswith("leads_fts") or name in (
        "ix_leads_search_trgm",
        "ix_leads_search_short",
        "ix_lead_search_trgm",
        "ix_lead_search_short",
        "ix_leads_ws_email_search",
        "ix_analytics_counters_cover",
    )


async def test_sqlite_runs_in_wal_with_foreign_keys(runtime: Runtime) -> None:
    if not runtime.is_sqlite:
        return
    async with runtime.engine.connect() as conn:
        assert (await conn.execute(text("PRAGMA journal_mode"))).scalar_one() == "wal"
        assert (await conn.execute(text("PRAGMA foreign_keys"))).scalar_one() == 1


async def test_refreshed_sqlite_statistics_reach_connections_already_open(runtime: Runtime) -> None:
    """SQLite reads planner statistics when a connection loads the schema, and reloads it only when the
    schema version changes, which ANALYZE alone does not do once `sqlite_stat1` exists: the refresh after an
    import changes the version, so the server's pooled connections plan with the new statistics."""
    from outreach_core.kernel.db.maintenance import refresh_lead_statistics

    if not runtime.is_sqlite:
        return
    async with runtime.engine.connect() as already_open:
        version = text("PRAGMA schema_version")
        for _ in range(2):  # the second time `sqlite_stat1` exists already
            before = (await already_open.execute(version)).scalar_one()
            await already_open.rollback()  # its next transaction sees what was committed meanwhile
            async with runtime.engine.begin() as conn:
                await refresh_lead_statistics(conn)
            assert (await already_open.execute(version)).scalar_one() > before
            await already_open.rollback()


async def test_postgresql_plans_each_statement_for_its_parameters(runtime: Runtime) -> None:
    """A generic plan made while a table was small would stay a sequential scan as an import grows it."""
    if runtime.is_sqlite:
        return
    async with runtime.engine.connect() as conn:
        assert (await conn.execute(text("SHOW plan_cache_mode"))).scalar_one() == "force_custom_plan"


async def _no_builtin_labels(ctx: object) -> int:
    return 0


async def test_upgrading_keeps_existing_leads_searchable_by_short_terms_and_downgrading_by_long_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0008 refills SQLite's search index for leads indexed before it, with each text's end marks,
    so 1-2 character terms find them through the index; going back to 0007 rebuilds the index as it was."""
    from outreach_core.auth.authenticate import authenticate_api_key
    from outreach_core.leads import operations
    from outreach_core.leads.operations import create_lead, list_leads
    from outreach_core.leads.schemas import CreateLeadIn, ListLeadsQuery
    from outreach_core.workspace.setup import init_workspace

    if PG_URL:
        pytest.skip("migration 0008 refills SQLite's FTS5 index; on PostgreSQL it only adds an index")
    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32))
    await migrate(rt.engine, "0007")
    # the schema predates the built-in labels (0011/0012, which add them to such workspaces on upgrade)
    monkeypatch.setattr("outreach_core.workspace.setup.ensure_builtin_labels", _no_builtin_labels)
    made = await rt.system(init_workspace, email="o@example.com", name="O", workspace="W", plan="growth")
    principal = await rt.system_read(authenticate_api_key, made.apiKey)
    for email, company in (("ann@a.io", "Buzz"), ("bob@b.io", "Jazz Co"), ("cid@c.io", "Acme")):
        await rt.execute(principal, create_lead, CreateLeadIn(email=email, company=company))

    async def never_common(ctx: object, term: str) -> bool:
        return False

    async def found(term: str) -> list[str]:
        page = await rt.read(principal, list_leads, ListLeadsQuery(search=term))
        return sorted(lead.email for lead in page.leads)

    monkeypatch.setattr(operations, "common_short_term", never_common)  # the index answers
    try:
        await migrate(rt.engine)
        assert await found("zz") == ["ann@a.io", "bob@b.io"]  # "buzz" ends the text: found by its end marks
        assert await found("me") == ["cid@c.io"]
        assert await found("co") == ["bob@b.io"]
        assert await found("q") == []

        def downgrade(sync_conn: Any) -> None:
            command.downgrade(alembic_config(sync_conn), "0007")

        async with rt.engine.begin() as conn:
            await conn.run_sync(downgrade)
        assert await found("buzz") == ["ann@a.io"] and await found("jazz co") == ["bob@b.io"]
    finally:
        await rt.dispose()


async def test_upgrading_takes_texts_too_long_for_the_sort_indexes_out_of_the_search_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Migration 0009 empties `search_index` for texts over 900 bytes before the sort indexes carry it: such
    a lead (indexed under 0008) is still found, by testing rows, and so are the others, either way."""
    from outreach_core.auth.authenticate import authenticate_api_key
    from outreach_core.leads.operations import create_lead, list_leads
    from outreach_core.leads.schemas import CreateLeadIn, ListLeadsQuery
    from outreach_core.workspace.setup import init_workspace

    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32))
    await migrate(rt.engine, "0008")
    # the schema predates the built-in labels (0011/0012, which add them to such workspaces on upgrade)
    monkeypatch.setattr("outreach_core.workspace.setup.ensure_builtin_labels", _no_builtin_labels)
    made = await rt.system(init_workspace, email="o@example.com", name="O", workspace="W", plan="growth")
    principal = await rt.system_read(authenticate_api_key, made.apiKey)
    long_company = "Hooli " + "".join(chr(0x4E00 + i * 13) for i in range(290))
    for email, company in (("ann@a.io", long_company), ("bob@b.io", "Hooli")):
        lead = CreateLeadIn(email=email, first_name=company[-50:], company=company)  # ann: over 1,000 bytes
        await rt.execute(principal, create_lead, lead)
    async with rt.engine.begin() as conn:  # as revision 0008 indexed every text, however long
        await conn.execute(text("UPDATE leads SET search_index = search_text"))

    async def state() -> tuple[list[str], int]:
        page = await rt.read(principal, list_leads, ListLeadsQuery(search="hooli"))
        async with rt.engine.connect() as conn:
            indexed = (await conn.execute(text("SELECT count(search_index) FROM leads"))).scalar_one()
        return sorted(lead.email for lead in page.leads), indexed

    try:
        assert await state() == (["ann@a.io", "bob@b.io"], 2)
        await migrate(rt.engine)
        assert await state() == (["ann@a.io", "bob@b.io"], 1)

        def downgrade(sync_conn: Any) -> None:
            command.downgrade(alembic_config(sync_conn), "0008")

        async with rt.engine.begin() as conn:
            await conn.run_sync(downgrade)
        assert await state() == (["ann@a.io", "bob@b.io"], 1)
    finally:
        await rt.dispose()


async def test_upgrading_gives_existing_memberships_their_leads_creation_order(tmp_path: Path) -> None:
    """Migration 0033 copies each lead's `created_at` onto its memberships: a list made before it pages in
    its leads' creation order at once, newest or oldest first (created here in neither the order of their
    ids nor of their addresses), and going back to 0032 keeps every membership."""
    from datetime import UTC, datetime, timedelta

    from outreach_core.auth.authenticate import authenticate_api_key
    from outreach_core.kernel.ports import FixedClock, Ports
    from outreach_core.leads.operations import create_lead, list_leads
    from outreach_core.leads.schemas import CreateLeadIn, ListLeadsQuery
    from outreach_core.lists.operations import create_list
    from outreach_core.lists.schemas import CreateListIn
    from outreach_core.workspace.setup import init_workspace

    start = datetime(2026, 1, 1, tzinfo=UTC)
    clock = FixedClock(start)
    settings = Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32)
    rt = Runtime(settings, ports=Ports(clock=clock))
    await migrate(rt.engine, "0032")
    made = await rt.system(init_workspace, email="o@example.com", name="O", workspace="W", plan="growth")
    principal = await rt.system_read(authenticate_api_key, made.apiKey)
    for email, seconds in (("bob@b.io", 20), ("ann@a.io", 10), ("dee@d.io", 30), ("cid@c.io", 5)):
        clock.set(start + timedelta(seconds=seconds))
        await rt.execute(principal, create_lead, CreateLeadIn(email=email))
    listed = await rt.execute(principal, create_list, CreateListIn(name="Before"))
    async with rt.engine.begin() as conn:  # as the code of revision 0032 wrote memberships
        await conn.execute(
            text(
                "INSERT INTO list_leads (list_id, lead_id, workspace_id, added_at) "
                "SELECT :list_id, id, workspace_id, '2026-02-01 00:00:00.000000' FROM leads "
                "WHERE email <> 'cid@c.io'"
            ),
            {"list_id": listed.id},
        )

    async def page(direction: str) -> tuple[list[str], int]:
        query = ListLeadsQuery(list_id=listed.id, dir=direction, page_size=10)
        got = await rt.read(principal, list_leads, query)
        return [lead.email for lead in got.leads], got.total

    try:
        await migrate(rt.engine)
        assert await page("desc") == (["dee@d.io", "bob@b.io", "ann@a.io"], 3)
        assert await page("asc") == (["ann@a.io", "bob@b.io", "dee@d.io"], 3)

        def downgrade(sync_conn: Any) -> None:
            command.downgrade(alembic_config(sync_conn), "0032")

        async with rt.engine.begin() as conn:
            await conn.run_sync(downgrade)
            members = (await conn.execute(text("SELECT count(*) FROM list_leads"))).scalar_one()
        assert members == 3
    finally:
        await rt.dispose()


async def test_postgresql_leads_leave_half_of_each_page_free_and_import_seen_has_no_foreign_keys(
    runtime: Runtime,
) -> None:
    """Migration 0039 (PostgreSQL): `leads` at fillfactor 50, so that `existing: update` of a whole page of
    leads stays on the page (HOT); `import_seen` without its two foreign keys (a trigger deletes a deleted
    import's rows). Going back to 0038 restores both, and forward again."""
    if runtime.is_sqlite:
        pytest.skip("SQLite has no fillfactor and keeps import_seen's foreign keys")

    async def state() -> tuple[list[str], list[str]]:
        async with runtime.engine.connect() as conn:
            options = (
                await conn.execute(text("SELECT reloptions FROM pg_class WHERE relname = 'leads'"))
            ).scalar_one()
            keys = (
                await conn.execute(
                    text(
                        "SELECT conname FROM pg_constraint WHERE contype = 'f' "
                        "AND conrelid = 'import_seen'::regclass ORDER BY conname"
                    )
                )
            ).scalars()
            return [o for o in options or [] if o.startswith("fillfactor")], list(keys)

    def downgrade(sync_conn: Any) -> None:
        command.downgrade(alembic_config(sync_conn), "0038")

    assert await state() == (["fillfactor=50"], [])
    try:
        async with runtime.engine.begin() as conn:
            await conn.run_sync(downgrade)
        assert await state() == (
            [],
            ["fk_import_seen_import_id_lead_imports", "fk_import_seen_workspace_id_workspaces"],
        )
    finally:
        await migrate(runtime.engine)
    assert await state() == (["fillfactor=50"], [])


async def test_domain_lookups_wanted_comes_and_goes_with_migration_0040(runtime: Runtime) -> None:
    """Migration 0040: the table of the mail domains the merge noted for the `enrich` worker; going back
    to 0039 drops it (what it held is looked up after storing anyway), and forward again restores it."""

    async def tables() -> set[str]:
        def names(sync_conn: Any) -> set[str]:
            from sqlalchemy import inspect

            return set(inspect(sync_conn).get_table_names())

        async with runtime.engine.connect() as conn:
            return await conn.run_sync(names)

    def downgrade(sync_conn: Any) -> None:
        command.downgrade(alembic_config(sync_conn), "0039")

    assert "domain_lookups_wanted" in await tables()
    try:
        async with runtime.engine.begin() as conn:
            await conn.run_sync(downgrade)
        assert "domain_lookups_wanted" not in await tables()
    finally:
        await migrate(runtime.engine)
    assert "domain_lookups_wanted" in await tables()
