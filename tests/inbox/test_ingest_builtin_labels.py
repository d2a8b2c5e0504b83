"""The built-in labels the inbox puts on threads: in every new workspace, and added by migration 0012 to
workspaces that existed before (adopting a label already named like one)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import select

from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import labels
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.labels.builtin import BUILTIN_LABELS
from tests.conftest import MakeWorkspace
from tests.lists.helpers import ok

EXPECTED = [(name, kind) for _, name, kind in BUILTIN_LABELS]


async def test_a_new_workspace_has_the_built_in_labels(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    listed = (await ok(http, ws, "GET", "/labels"))["labels"]
    assert sorted((x["name"], x["type"]) for x in listed) == sorted(EXPECTED)
    assert all(x["leads"] == 0 and x["triggers"]["suppress"] is False for x in listed)
    # they are ordinary labels: a person may rename one, and creating one with a built-in name is a conflict
    interested = next(x for x in listed if x["name"] == "Interested")
    assert (await ok(http, ws, "PATCH", f"/labels/{interested['id']}", {"name": "Keen"}))["name"] == "Keen"
    response = await http.post("/api/v1/labels", headers=ws.headers, json={"name": "Bounce"})
    assert response.status_code == 409


async def test_migration_0012_adds_them_to_existing_workspaces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from outreach_core.kernel.context import as_workspace, scoped, workspace_itself
    from outreach_core.kernel.ids import new_id
    from outreach_core.workspace.setup import init_workspace

    async def before_0012(ctx: object) -> int:
        return 0

    rt = Runtime(Settings(database_url=f"sqlite+aiosqlite:///{tmp_path / 'old.db'}", secret_key="s" * 32))
    await migrate(rt.engine, "0011")
    monkeypatch.setattr("outreach_core.workspace.setup.ensure_builtin_labels", before_0012)
    old = await rt.system(init_workspace, email="o@example.com", name="O", workspace="Old", plan="growth")
    own = new_id("lbl")

    async def a_label_of_their_own(ctx: object) -> None:
        wctx = as_workspace(ctx, workspace_itself(old.workspaceId, "test"))  # type: ignore[arg-type]
        await wctx.conn.execute(
            scoped(wctx, labels).insert(
                {"id": own, "name": "interested", "type": "positive", "triggers": {}, "created_at": wctx.now}
            )
        )

    await rt.system(a_label_of_their_own)
    await migrate(rt.engine)
    async with rt.engine.connect() as conn:
        rows = (
            await conn.execute(
                select(labels.c.id, labels.c.name, labels.c.type, labels.c.builtin).where(
                    labels.c.workspace_id == old.workspaceId
                )
            )
        ).all()
    assert sorted(r.builtin for r in rows) == sorted(key for key, _, _ in BUILTIN_LABELS)
    adopted = next(r for r in rows if r.builtin == "interested")
    assert (adopted.id, adopted.name) == (own, "interested")  # theirs, kept, now the built-in one
    assert len(rows) == 8
    await rt.dispose()
