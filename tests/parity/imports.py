"""REST/MCP parity cases of lead imports."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Prepare,
    no_args,
    unique,
)


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


CASES: dict[str, Prepare] = {
    "import_leads": import_args,
    "get_import": get_import_args,
    "list_imports": no_args,
}
