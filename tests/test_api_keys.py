"""API keys over real HTTP: limits, shown once, hashed, lastUsedAt without a write per request, revocation
and expiry take effect on the very next request."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from outreach_core.api_keys.rules import hash_secret
from outreach_core.kernel.context import system_scope
from outreach_core.kernel.db.tables import api_keys
from outreach_core.kernel.runtime import Runtime
from tests.conftest import MakeWorkspace
from workers import usage_flush


async def _stored(runtime: Runtime, key_id: str) -> dict[str, object]:
    async def read(ctx: object) -> dict[str, object]:
        t = system_scope(api_keys)
        row = (await ctx.conn.execute(t.select().where(t.c.id == key_id))).one()  # type: ignore[attr-defined]
        return dict(row._mapping)

    return await runtime.system_read(read)


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"name": ""},
        {"name": "x" * 61},
        {"name": "ok", "expiresInDays": 0},
        {"name": "ok", "expiresInDays": 366},
        {"name": "ok", "expiresInDays": "soon"},
        {"name": "ok", "extra": 1},
    ],
)
async def test_create_refuses_out_of_limit_input(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, body: dict[str, object]
) -> None:
    ws = await make_workspace()
    before = (await http.get("/api/v1/api-keys", headers=ws.headers)).json()
    response = await http.post("/api/v1/apiKeys/create", headers=ws.headers, json=body)
    assert response.status_code == 422, response.text
    assert response.json()["error"]["code"] == "invalid_input"
    assert response.json()["error"]["details"]["fields"]
    assert len((await http.get("/api/v1/api-keys", headers=ws.headers)).json()) == len(before)


async def test_key_is_shown_once_stored_hashed_and_listed_with_its_start(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    created = await http.post(
        "/api/v1/apiKeys/create", headers=ws.headers, json={"name": "x" * 60, "expiresInDays": 365}
    )
    assert created.status_code == 200
    key_id, key = created.json()["id"], created.json()["key"]
    stored = await _stored(ws.runtime, key_id)
    assert stored["key_hash"] == hash_secret(key) and key not in str(stored)

    listed = (await http.get("/api/v1/api-keys", headers=ws.headers)).json()
    item = next(k for k in listed if k["id"] == key_id)
    assert key.startswith(item["start"]) and len(item["start"]) < len(key)
    assert item["name"] == "x" * 60 and item["createdBy"]["id"] == ws.user_id
    expires = datetime.fromisoformat(item["expiresAt"].replace("Z", "+00:00"))
    assert timedelta(days=364, hours=23) < expires - datetime.now(UTC) <= timedelta(days=365)
    assert key not in created.text.replace(key, "", 1)  # the secret appears once, in the create response
    assert all(key not in str(v) for v in item.values())

    me = await http.get("/api/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert me.status_code == 200 and me.json()["user"]["id"] == ws.user_id


async def test_last_used_is_visible_at_once_and_written_in_batches(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    key = (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": "probe"})).json()
    listed = (await http.get("/api/v1/api-keys", headers=ws.headers)).json()
    assert next(k for k in listed if k["id"] == key["id"])["lastUsedAt"] is None

    for _ in range(3):
        assert (
            await http.get("/api/v1/me", headers={"Authorization": f"Bearer {key['key']}"})
        ).status_code == 200
    assert (await _stored(ws.runtime, key["id"]))["last_used_at"] is None  # no write in the request path
    listed = (await http.get("/api/v1/api-keys", headers=ws.headers)).json()
    assert next(k for k in listed if k["id"] == key["id"])["lastUsedAt"] is not None

    assert await usage_flush.tick(ws.runtime) >= 1
    assert (await _stored(ws.runtime, key["id"]))["last_used_at"] is not None


async def test_members_see_and_revoke_only_their_own_keys(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    admin = await owner.add_member("admin")
    owner_key = (await http.post("/api/v1/apiKeys/create", headers=owner.headers, json={"name": "o"})).json()
    member_key = (
        await http.post("/api/v1/apiKeys/create", headers=member.headers, json={"name": "m"})
    ).json()

    member_view = {k["id"] for k in (await http.get("/api/v1/api-keys", headers=member.headers)).json()}
    assert member_key["id"] in member_view and owner_key["id"] not in member_view
    admin_view = {k["id"] for k in (await http.get("/api/v1/api-keys", headers=admin.headers)).json()}
    assert {member_key["id"], owner_key["id"]} <= admin_view

    refused = await http.post("/api/v1/apiKeys/revoke", headers=member.headers, json={"id": owner_key["id"]})
    assert refused.status_code == 403
    own = await http.post("/api/v1/apiKeys/revoke", headers=member.headers, json={"id": member_key["id"]})
    assert own.status_code == 200 and own.json() == {"ok": True}
    by_admin = await http.post("/api/v1/apiKeys/revoke", headers=admin.headers, json={"id": owner_key["id"]})
    assert by_admin.status_code == 200
    again = await http.post("/api/v1/apiKeys/revoke", headers=admin.headers, json={"id": owner_key["id"]})
    assert again.status_code == 404


async def test_revoked_key_is_refused_on_the_next_request(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    key = (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": "short-lived"})).json()
    auth = {"Authorization": f"Bearer {key['key']}"}
    assert (await http.get("/api/v1/me", headers=auth)).status_code == 200
    assert (
        await http.post("/api/v1/apiKeys/revoke", headers=ws.headers, json={"id": key["id"]})
    ).status_code == 200
    refused = await http.get("/api/v1/me", headers=auth)
    assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
    assert refused.json()["error"]["code"] == "unauthorized"
    listed = {k["id"] for k in (await http.get("/api/v1/api-keys", headers=ws.headers)).json()}
    assert key["id"] not in listed


async def test_expired_key_is_refused(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    key = (
        await http.post(
            "/api/v1/apiKeys/create", headers=ws.headers, json={"name": "1 day", "expiresInDays": 1}
        )
    ).json()
    auth = {"Authorization": f"Bearer {key['key']}"}
    assert (await http.get("/api/v1/me", headers=auth)).status_code == 200

    async def expire(ctx: object) -> None:
        t = system_scope(api_keys)
        past = datetime.now(UTC) - timedelta(seconds=1)
        await ctx.conn.execute(t.update().where(t.c.id == key["id"]).values(expires_at=past))  # type: ignore[attr-defined]

    await ws.runtime.system(expire)
    assert (await http.get("/api/v1/me", headers=auth)).status_code == 401
