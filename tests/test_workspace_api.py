"""Workspace routes over real HTTP: ping, me, members and invitations, sending settings, roles."""

from __future__ import annotations

import httpx

from tests.conftest import MakeWorkspace


async def test_ping_needs_no_credential(http: httpx.AsyncClient) -> None:
    response = await http.get("/api/v1/ping")
    assert response.status_code == 200
    body = response.json()
    assert body["ok"] is True and body["time"].endswith("Z")


async def test_me_describes_the_caller(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace(plan="pro")
    body = (await http.get("/api/v1/me", headers=ws.headers)).json()
    assert body["user"] == {"id": ws.user_id, "name": body["user"]["name"], "email": ws.email}
    assert body["workspace"]["id"] == ws.workspace_id and body["workspace"]["slug"] == ws.slug
    assert body["role"] == "owner" and body["auth"] == "api_key"
    billing = body["billing"]
    assert billing["plan"] == "pro" and billing["planName"] == "Pro" and billing["status"] == "active"
    assert billing["emailsPerMonth"] == 150_000 and billing["contacts"] == 50_000
    assert billing["interval"] == "month" and billing["renewsAt"].endswith("Z")
    assert billing["cancelAtPeriodEnd"] is False and billing["emailsSentThisPeriod"] == 0


async def test_me_without_plan(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace(plan=None)
    billing = (await http.get("/api/v1/me", headers=ws.headers)).json()["billing"]
    assert billing["plan"] is None and billing["status"] is None and billing["emailsPerMonth"] == 0


async def test_invitations_are_listed_for_owners_and_admins_only(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    admin = await owner.add_member("admin")
    member = await owner.add_member("member")
    created = await http.post(
        "/api/v1/invitations",
        headers=admin.headers,
        json={"email": "New.Person@Example.com", "role": "member"},
    )
    assert created.status_code == 200, created.text
    assert created.json()["email"] == "new.person@example.com"

    for who in (owner, admin):
        listed = (await http.get("/api/v1/members", headers=who.headers)).json()
        assert [i["email"] for i in listed["invitations"]] == ["new.person@example.com"]
        assert {m["role"] for m in listed["members"]} == {"owner", "admin", "member"}
    as_member = (await http.get("/api/v1/members", headers=member.headers)).json()
    assert as_member["invitations"] == [] and len(as_member["members"]) == 3

    refused = await http.post("/api/v1/invitations", headers=member.headers, json={"email": "x@example.com"})
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"


async def test_accepting_an_invitation_gives_its_role(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    await http.post(
        "/api/v1/invitations", headers=owner.headers, json={"email": "inv@example.com", "role": "admin"}
    )
    from outreach_core.workspace.setup import add_member

    added = await owner.runtime.system(add_member, workspace=owner.slug, email="inv@example.com", name="Inv")
    assert added.role == "admin"
    me = (await http.get("/api/v1/me", headers={"Authorization": f"Bearer {added.apiKey}"})).json()
    assert me["role"] == "admin" and me["workspace"]["id"] == owner.workspace_id
    listed = (await http.get("/api/v1/members", headers=owner.headers)).json()
    assert listed["invitations"] == []


async def test_member_roles_can_change_but_the_last_owner_stays(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    admin = await owner.add_member("admin")
    members = (await http.get("/api/v1/members", headers=owner.headers)).json()["members"]
    owner_member = next(m for m in members if m["userId"] == owner.user_id)
    admin_member = next(m for m in members if m["userId"] == admin.user_id)

    demote_self = await http.patch(
        f"/api/v1/members/{owner_member['id']}", headers=owner.headers, json={"role": "admin"}
    )
    assert demote_self.status_code == 409
    by_admin = await http.patch(
        f"/api/v1/members/{admin_member['id']}", headers=admin.headers, json={"role": "owner"}
    )
    assert by_admin.status_code == 403
    promoted = await http.patch(
        f"/api/v1/members/{admin_member['id']}", headers=owner.headers, json={"role": "owner"}
    )
    assert promoted.status_code == 200 and promoted.json()["role"] == "owner"
    assert (await http.get("/api/v1/me", headers=admin.headers)).json()["role"] == "owner"


async def test_removed_member_loses_access_at_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    assert (await http.get("/api/v1/me", headers=member.headers)).status_code == 200
    members = (await http.get("/api/v1/members", headers=owner.headers)).json()["members"]
    target = next(m for m in members if m["userId"] == member.user_id)
    removed = await http.delete(f"/api/v1/members/{target['id']}", headers=owner.headers)
    assert removed.status_code == 200 and removed.json() == {"ok": True}
    assert (await http.get("/api/v1/me", headers=member.headers)).status_code == 401


async def test_sending_settings_roundtrip_and_roles(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    member = await owner.add_member("member")
    initial = (await http.get("/api/v1/settings/sending", headers=member.headers)).json()
    assert initial == {"unsubscribeMode": "link", "aiLabels": True, "ownAiKey": None}

    changed = await http.patch(
        "/api/v1/settings/sending", headers=owner.headers, json={"unsubscribeMode": "reply_text"}
    )
    assert changed.status_code == 200
    assert changed.json() == {"unsubscribeMode": "reply_text", "aiLabels": True, "ownAiKey": None}
    partial = await http.patch("/api/v1/settings/sending", headers=owner.headers, json={"aiLabels": False})
    assert partial.json() == {"unsubscribeMode": "reply_text", "aiLabels": False, "ownAiKey": None}

    refused = await http.patch("/api/v1/settings/sending", headers=member.headers, json={"aiLabels": True})
    assert refused.status_code == 403
    bad = await http.patch(
        "/api/v1/settings/sending", headers=owner.headers, json={"unsubscribeMode": "pigeon"}
    )
    assert bad.status_code == 422 and bad.json()["error"]["details"]["fields"][0]["path"] == "unsubscribeMode"
    read_only = await http.patch(
        "/api/v1/settings/sending", headers=owner.headers, json={"ownAiKey": "openai"}
    )
    assert read_only.status_code == 422
    after = (await http.get("/api/v1/settings/sending", headers=owner.headers)).json()
    assert after == {"unsubscribeMode": "reply_text", "aiLabels": False, "ownAiKey": None}


async def test_malformed_json_is_400_and_unknown_route_404(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    bad = await http.post(
        "/api/v1/apiKeys/create", headers={**ws.headers, "content-type": "application/json"}, content=b"{nope"
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_request"
    json_headers = {**ws.headers, "content-type": "application/json"}
    for blank, status in ((b"", 200), (b"\n", 400), (b" \r\n\t", 400), (b"\x0b", 400)):
        answer = await http.patch("/api/v1/settings/sending", headers=json_headers, content=blank)
        assert answer.status_code == status, blank  # only a missing body counts as no body
    missing = await http.get("/api/v1/nowhere", headers=ws.headers)
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_a_single_valued_query_parameter_given_twice_is_refused(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    answer = await http.get("/api/v1/suppressions?pageSize=10&pageSize=20", headers=ws.headers)
    assert answer.status_code == 422 and answer.json()["error"]["code"] == "invalid_input"
    listed = await http.get("/api/v1/leads?status=active&status=won", headers=ws.headers)
    assert listed.status_code == 200  # list parameters repeat
