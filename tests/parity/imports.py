"""REST/MCP parity cases of lead imports."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare, new_list, no_args, unique


async def import_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    rows = [{"email": f"p{next(unique)}@parity.test"}, {"email": "bad"}]
    return [
        {"fileName": "parity.csv", "rows": rows, "confirm": True},
        {"importId": "imp_missing", "rows": [], "confirm": True},
    ]


async def get_import_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    body = {"rows": [{"email": f"p{next(unique)}@parity.test"}], "final": True}
    imported = (await http.post("/api/v1/leads/import", headers=ws.headers, json=body)).json()
    return [{"id": imported["id"]}, {"id": "imp_missing"}]


async def import_csv_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    n = next(unique)
    text = f"Email;First Name;Colour\np{n}@parity.test;Ada;blue\nnot-an-address;Bob;red\n"
    return [
        {"csv": text, "fileName": "parity.csv", "confirm": True},
        {"csv": f"Mail,Who\np{n}x@parity.test,Cy\n", "map": {"firstName": "Who"}, "confirm": True},
        {"csv": "Name,Phone\nAda,1\n", "confirm": True},
    ]


CASES: dict[str, Prepare] = {
    "import_leads": import_args,
    "import_leads_csv": import_csv_args,
    "get_import": get_import_args,
    "list_imports": no_args,
}


async def _their_import(http: httpx.AsyncClient, theirs: WorkspaceHandle, *, final: bool) -> str:
    body = {"rows": [{"email": f"p{next(unique)}@parity.test"}], "final": final}
    imported = await http.post("/api/v1/leads/import", headers=theirs.headers, json=body)
    assert imported.status_code == 200, imported.text
    return str(imported.json()["id"])


async def their_import_listed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    await _their_import(http, theirs, final=True)
    return [{}]


async def their_import(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await _their_import(http, theirs, final=True)}]


async def their_import_continued(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """The next chunk of their open import, and a first chunk onto their list."""
    rows = [{"email": f"p{next(unique)}@parity.test"}]
    return [
        {"importId": await _their_import(http, theirs, final=False), "rows": rows},
        {"list": {"id": await new_list(http, theirs)}, "rows": rows},
    ]


async def their_list_for_csv(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A CSV import onto their list."""
    text = f"Email\np{next(unique)}@parity.test\n"
    return [{"csv": text, "list": {"id": await new_list(http, theirs)}}]


FOREIGN: dict[str, Foreign] = {
    "import_leads": their_import_continued,
    "import_leads_csv": their_list_for_csv,
    "get_import": their_import,
    "list_imports": their_import_listed,
}
