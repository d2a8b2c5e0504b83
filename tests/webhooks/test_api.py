"""The webhook routes as a REST client sees them: create (secret once), list with counts and the catalogue,
update, delete, test; and every kind of bad input refused with a clear 422 that stores nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock
from tests.conftest import MakeWorkspace
from tests.webhooks.conftest import CreateHook, MakeRuntime, run_worker
from tests.webhooks.helpers import delivery_rows, new_lead, won
from tests.webhooks.receiver import Answer, Receiver

HINT = "OUTREACH_ALLOW_PRIVATE_URLS=1"


async def _listed(http: httpx.AsyncClient, headers: dict[str, str]) -> dict[str, Any]:
    response = await http.get("/api/v1/webhooks", headers=headers)
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


async def test_create_list_update_and_delete(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    """On a server with the default settings (no private URLs): a public https URL."""
    ws = await make_workspace()
    body = {
        "url": "https://crm.example.com/hooks/outreach",
        "events": ["lead.won", "lead.replied", "lead.won"],
    }
    created = await http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    assert created.status_code == 200, created.text
    hook, secret = created.json()["webhook"], created.json()["secret"]
    assert secret.startswith("whsec_") and len(secret) == 49
    assert hook["url"] == body["url"] and hook["events"] == ["lead.won", "lead.replied"]
    assert hook["enabled"] is True and hook["disabledReason"] is None and hook["description"] is None
    assert (hook["lastDeliveryAt"], hook["lastStatus"]) == (None, None)
    assert (hook["delivered"], hook["failed"], hook["pending"]) == (0, 0, 0)

    listed = await _listed(http, ws.headers)
    assert [h["id"] for h in listed["webhooks"]] == [hook["id"]]
    assert secret not in str(listed) and "secret" not in listed["webhooks"][0]
    assert [e["type"] for e in listed["events"]] == [
        "lead.replied",
        "lead.labeled",
        "lead.bounced",
        "lead.unsubscribed",
        "lead.won",
        "campaign.paused",
    ]
    assert all(e["description"] for e in listed["events"])

    patch = {"url": "https://crm.example.com/v2", "description": "CRM", "events": ["campaign.paused"]}
    updated = await http.patch(f"/api/v1/webhooks/{hook['id']}", headers=ws.headers, json=patch)
    assert updated.status_code == 200
    assert {k: updated.json()[k] for k in patch} == patch
    cleared = await http.patch(
        f"/api/v1/webhooks/{hook['id']}", headers=ws.headers, json={"description": None}
    )
    assert cleared.json()["description"] is None and cleared.json()["url"] == patch["url"]
    refused = await http.patch(f"/api/v1/webhooks/{hook['id']}", headers=ws.headers, json={"url": None})
    assert refused.status_code == 422
    assert [f["path"] for f in refused.json()["error"]["details"]["fields"]] == ["url"]
    assert (await _listed(http, ws.headers))["webhooks"][0]["url"] == patch["url"]

    gone = await http.delete(f"/api/v1/webhooks/{hook['id']}", headers=ws.headers)
    assert gone.status_code == 200 and gone.json() == {"ok": True}
    assert (await _listed(http, ws.headers))["webhooks"] == []
    for method, path in (
        ("PATCH", f"/webhooks/{hook['id']}"),
        ("DELETE", f"/webhooks/{hook['id']}"),
        ("POST", f"/webhooks/{hook['id']}/test"),
        ("GET", f"/webhooks/{hook['id']}/deliveries"),
        ("POST", f"/webhooks/{hook['id']}/rotate-secret"),
    ):
        missing = await http.request(
            method, f"/api/v1{path}", headers=ws.headers, json={} if method == "PATCH" else None
        )
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found", (method, path)


BAD_CREATES: list[tuple[dict[str, Any], str, str]] = [
    ({"url": "not a url", "events": ["lead.won"]}, "url", "only http and https"),
    ({"url": "ftp://crm.example.com/x", "events": ["lead.won"]}, "url", "only http and https"),
    ({"url": "https://", "events": ["lead.won"]}, "url", "no host"),
    ({"url": "http://crm.example.com/x", "events": ["lead.won"]}, "url", "must start with https://"),
    ({"url": "https://10.1.2.3/x", "events": ["lead.won"]}, "url", HINT),
    ({"url": "https://127.0.0.1:8443/x", "events": ["lead.won"]}, "url", HINT),
    ({"url": "https://[::ffff:127.0.0.1]/x", "events": ["lead.won"]}, "url", HINT),
    ({"url": "https://169.254.169.254/latest", "events": ["lead.won"]}, "url", HINT),
    ({"url": "https://localhost/x", "events": ["lead.won"]}, "url", HINT),
    ({"url": "https://me:pw@crm.example.com/x", "events": ["lead.won"]}, "url", "user name or password"),
    ({"url": "https://crm.example.com/" + "x" * 2000, "events": ["lead.won"]}, "url", "at most 2000"),
    ({"url": "https://crm.example.com/x", "events": []}, "events", "at least 1"),
    ({"url": "https://crm.example.com/x", "events": ["lead.sold"]}, "events.0", "lead.replied"),
    ({"url": "https://crm.example.com/x"}, "events", "required"),
    ({"events": ["lead.won"]}, "url", "required"),
    (
        {"url": "https://crm.example.com/x", "events": ["lead.won"], "secret": "mine"},
        "secret",
        "not permitted",
    ),
    (
        {"url": "https://crm.example.com/x", "events": ["lead.won"], "description": "d" * 501},
        "description",
        "500",
    ),
]


@pytest.mark.parametrize(
    ("body", "path", "words"), BAD_CREATES, ids=[f"{b[1]}-{i}" for i, b in enumerate(BAD_CREATES)]
)
async def test_bad_input_is_a_clear_422_and_stores_nothing(
    body: dict[str, Any], path: str, words: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    refused = await http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    assert refused.status_code == 422, refused.text
    error = refused.json()["error"]
    assert error["code"] == "invalid_input"
    fields = error["details"]["fields"]
    assert [f["path"] for f in fields][:1] == [path] and words in fields[0]["message"], error
    assert (await _listed(http, ws.headers))["webhooks"] == []


async def test_a_bad_update_changes_nothing(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    body = {"url": "https://crm.example.com/hooks", "events": ["lead.won"], "description": "CRM"}
    hook = (await http.post("/api/v1/webhooks", headers=ws.headers, json=body)).json()["webhook"]
    for patch in (
        {"url": "https://192.168.1.10/x", "description": "changed"},
        {"events": [], "description": "changed"},
        {"events": ["nope"]},
        {"enabled": "yes"},
    ):
        refused = await http.patch(f"/api/v1/webhooks/{hook['id']}", headers=ws.headers, json=patch)
        assert refused.status_code == 422, patch
    [after] = (await _listed(http, ws.headers))["webhooks"]
    assert after == hook


async def test_a_workspace_has_at_most_20_endpoints(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    body = {"url": "https://crm.example.com/hooks", "events": ["lead.won"]}
    for _ in range(20):
        assert (await http.post("/api/v1/webhooks", headers=ws.headers, json=body)).status_code == 200
    refused = await http.post("/api/v1/webhooks", headers=ws.headers, json=body)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "conflict"
    assert "at most 20" in refused.json()["error"]["message"]
    assert len((await _listed(http, ws.headers))["webhooks"]) == 20


async def test_http_and_loopback_urls_are_accepted_when_private_urls_are_allowed(
    hook_http: httpx.AsyncClient, make_workspace: MakeWorkspace, create_hook: CreateHook
) -> None:
    ws = await make_workspace()
    created = await create_hook(ws, "http://127.0.0.1:9/hook")
    assert created["webhook"]["url"] == "http://127.0.0.1:9/hook"
    refused = await hook_http.post(
        "/api/v1/webhooks", headers=ws.headers, json={"url": "gopher://127.0.0.1/", "events": ["lead.won"]}
    )
    assert refused.status_code == 422


async def test_the_test_sends_a_signed_sample_and_returns_the_answer(
    hook_http: httpx.AsyncClient, make_workspace: MakeWorkspace, create_hook: CreateHook, receiver: Receiver
) -> None:
    ws = await make_workspace()
    ep = receiver.endpoint(Answer(200, b'{"received": true}'), Answer(500, b"boom"))
    created = await create_hook(ws, ep.url, ["lead.won"])
    ep.secrets = [created["secret"]]
    hook_id = created["webhook"]["id"]

    tested = await hook_http.post(f"/api/v1/webhooks/{hook_id}/test", headers=ws.headers)
    assert tested.status_code == 200
    result = tested.json()
    assert result["delivered"] is True and result["status"] == 200 and result["error"] is None
    assert result["body"] == '{"received": true}' and 0 <= result["ms"] < 2000
    [got] = receiver.at(ep)
    assert got.verified and got.headers["service-event-type"] == "lead.replied"
    body = got.json
    assert body["type"] == "lead.replied" and body["test"] is True and body["workspaceId"] == ws.workspace_id
    assert got.headers["service-event-id"] == body["id"]
    assert set(body["data"]) == {"lead", "campaign", "thread", "step", "variant", "message"}
    assert body["data"]["lead"]["email"] == "jane.doe@example.com"

    failed = (await hook_http.post(f"/api/v1/webhooks/{hook_id}/test", headers=ws.headers)).json()
    assert failed == {
        "delivered": False,
        "status": 500,
        "error": "HTTP 500: boom",
        "body": "boom",
        "ms": failed["ms"],
    }
    # not retried, not in the delivery log, not the endpoint's last status
    assert (await hook_http.get(f"/api/v1/webhooks/{hook_id}/deliveries", headers=ws.headers)).json() == {
        "deliveries": []
    }
    listed = (await hook_http.get("/api/v1/webhooks", headers=ws.headers)).json()["webhooks"]
    assert listed[0]["lastStatus"] is None and len(receiver.at(ep)) == 2


async def test_the_test_of_an_endpoint_that_does_not_answer_says_why(
    hook_http: httpx.AsyncClient, make_workspace: MakeWorkspace, create_hook: CreateHook
) -> None:
    from tests.conftest import free_port

    ws = await make_workspace()
    created = await create_hook(ws, f"http://127.0.0.1:{free_port()}/nobody")
    result = (
        await hook_http.post(f"/api/v1/webhooks/{created['webhook']['id']}/test", headers=ws.headers)
    ).json()
    assert result["delivered"] is False and result["status"] == 0
    assert result["error"] == "connection failed" and result["body"] == ""


async def test_the_test_refuses_a_private_address_on_a_server_that_does_not_allow_them(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: Any
) -> None:
    """A public name that resolves to a loopback address: refused on the address, never contacted."""
    dns_server.add("hooks.rebind.example.com", "A", "127.0.0.1")
    ws = await make_workspace()
    body = {"url": "https://hooks.rebind.example.com/x", "events": ["lead.won"]}
    hook = (await http.post("/api/v1/webhooks", headers=ws.headers, json=body)).json()["webhook"]
    result = (await http.post(f"/api/v1/webhooks/{hook['id']}/test", headers=ws.headers)).json()
    assert result["delivered"] is False and result["status"] == 0
    assert "127.0.0.1" in result["error"] and HINT in result["error"]


async def test_deleting_an_endpoint_drops_its_pending_deliveries(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    from datetime import UTC, datetime

    ws = await make_workspace()
    ep = receiver.endpoint(Answer(500))
    created = await create_hook(ws, ep.url)
    hook_id = created["webhook"]["id"]
    await won(hook_http, ws, (await new_lead(hook_http, ws))["id"])
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(clock)
    await run_worker(rt)
    assert [r.status for r in await delivery_rows(rt, hook_id)] == ["pending"]
    assert (await hook_http.delete(f"/api/v1/webhooks/{hook_id}", headers=ws.headers)).status_code == 200
    assert await delivery_rows(rt, hook_id) == []
    clock.advance(hours=1)
    await run_worker(rt)
    assert len(receiver.at(ep)) == 1


async def test_deliveries_are_listed_newest_first_with_a_limit(
    hook_http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    create_hook: CreateHook,
    make_runtime: MakeRuntime,
    receiver: Receiver,
) -> None:
    ws = await make_workspace()
    ep = receiver.endpoint()
    hook_id = (await create_hook(ws, ep.url))["webhook"]["id"]
    leads = [await new_lead(hook_http, ws) for _ in range(3)]
    for lead in leads:
        await won(hook_http, ws, lead["id"])
    await run_worker(make_runtime())
    path = f"/api/v1/webhooks/{hook_id}/deliveries"
    listed = (await hook_http.get(path, headers=ws.headers)).json()["deliveries"]
    assert [d["payload"]["data"]["lead"]["id"] for d in listed] == [lead["id"] for lead in reversed(leads)]
    assert len((await hook_http.get(path, headers=ws.headers, params={"limit": 2})).json()["deliveries"]) == 2
    for limit in ("0", "201", "x"):
        refused = await hook_http.get(path, headers=ws.headers, params={"limit": limit})
        assert refused.status_code == 422
