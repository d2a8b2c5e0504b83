"""REST/MCP parity cases of write_sequence on the session server, which has no AI (the drafting itself is
compared in tests/billing/test_doors_ai.py)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Prepare


async def write_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    bare = (await http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Parity"})).json()["id"]
    await http.put("/api/v1/offer-profile", headers=ws.headers, json={"company": "Parity Co"})
    return [
        {"id": bare, "mode": "sequence", "steps": 2},
        {"id": bare, "mode": "rewrite"},
        {"id": bare, "mode": "angle", "variantId": "var_missing"},
        {"id": "cmp_missing", "mode": "sequence"},
        {"id": bare, "mode": "sequence", "steps": 0},
    ]


CASES: dict[str, Prepare] = {"write_sequence": write_args}
