"""OUTREACH_BILLING=stripe through the official `stripe` library, against a local server speaking the parts
of Stripe's API the provider uses: checkout sessions by price lookup key, the customer portal, signed
webhook events (verified with the library's helper; applied once, never older over newer), sync before any
webhook, plan changes and dedicated IP add-ons on the subscription."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from tests.billing.conftest import Served
from tests.billing.servers import FakeStripe, stripe_signature
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import call_mcp


@pytest.fixture
async def stripe_api(stripe_app: Served) -> AsyncIterator[httpx.AsyncClient]:
    async with stripe_app.client() as client:
        yield client


async def _deliver(
    api: httpx.AsyncClient, event: dict[str, Any], signature: str | None = None
) -> httpx.Response:
    payload = json.dumps(event).encode()
    headers = {"Content-Type": "application/json", "Stripe-Signature": signature or stripe_signature(payload)}
    return await api.post("/billing/stripe/webhook", content=payload, headers=headers)


async def _billing(api: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, Any]:
    return (await api.get("/api/v1/billing", headers=ws.headers)).json()  # type: ignore[no-any-return]


async def _subscribe(
    api: httpx.AsyncClient, stripe_server: FakeStripe, ws: WorkspaceHandle, plan: str = "growth"
) -> tuple[str, dict[str, Any]]:
    url = (
        await api.post(
            "/api/v1/billing/checkout", headers=ws.headers, json={"plan": plan, "interval": "month"}
        )
    ).json()["url"]
    session_id = url.rsplit("/", 1)[1]
    event = stripe_server.complete_checkout(session_id)
    assert (await _deliver(api, event)).json() == {"received": True, "applied": True}
    return session_id, event


async def test_checkout_then_the_signed_event_activates_the_plan(
    stripe_api: httpx.AsyncClient, stripe_server: FakeStripe, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    assert (await _billing(stripe_api, ws))["enabled"] is True
    answer = await stripe_api.post(
        "/api/v1/billing/checkout",
        headers=ws.headers,
        json={"plan": "pro", "interval": "year", "returnTo": "onboarding"},
    )
    assert answer.status_code == 200, answer.text
    url = answer.json()["url"]
    assert url.startswith("https://checkout.stripe.test/cs_test_")
    session = stripe_server.sessions[url.rsplit("/", 1)[1]]
    [item] = session["line_items"]
    assert stripe_server.prices[item["price"]]["lookup_key"] == "outreach_pro_year"
    assert session["mode"] == "subscription" and session["client_reference_id"] == ws.workspace_id
    assert (
        session["customer_email"] == ws.email
        and session["subscription_data"]["metadata"]["workspace_id"] == ws.workspace_id
    )
    assert "/billing/done?to=onboarding" in session["success_url"]
    assert (await _billing(stripe_api, ws))["plan"] is None  # nothing until Stripe says it is paid

    event = stripe_server.complete_checkout(url.rsplit("/", 1)[1])
    delivered = await _deliver(stripe_api, event)
    assert delivered.json() == {"received": True, "applied": True}
    got = await _billing(stripe_api, ws)
    assert (got["plan"], got["interval"], got["status"], got["payerIsYou"]) == ("pro", "year", "active", True)
    sub = stripe_server.subscriptions[event["data"]["object"]["id"]]
    ends = datetime.fromtimestamp(sub["current_period_end"], UTC)
    assert got["renewsAt"] == ends.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    assert ends.year == datetime.now(UTC).year + 1  # a yearly plan
    # delivered again (Stripe retries): applied once
    assert (await _deliver(stripe_api, event)).json() == {"received": True, "applied": False}


async def test_bad_signatures_change_nothing(
    stripe_api: httpx.AsyncClient, stripe_server: FakeStripe, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    url = (
        await stripe_api.post(
            "/api/v1/billing/checkout", headers=ws.headers, json={"plan": "growth", "interval": "month"}
        )
    ).json()["url"]
    event = stripe_server.complete_checkout(url.rsplit("/", 1)[1])
    payload = json.dumps(event).encode()
    for signature in (
        stripe_signature(payload, secret="whsec_someone_else"),
        stripe_signature(payload, at=1_000_000_000),  # signed long ago: a replay
        "t=1,v1=00",
        "",
    ):
        refused = await _deliver(stripe_api, event, signature or "none")
        assert refused.status_code == 400 and refused.json()["error"]["code"] == "invalid_signature"
    tampered = json.dumps(
        {**event, "data": {"object": {**event["data"]["object"], "status": "trialing"}}}
    ).encode()
    signed_for_the_original = {"Stripe-Signature": stripe_signature(payload)}
    answer = await stripe_api.post(
        "/billing/stripe/webhook", content=tampered, headers=signed_for_the_original
    )
    assert answer.status_code == 400
    assert (await _billing(stripe_api, ws))["plan"] is None


async def test_an_older_event_never_overwrites_a_newer_one(
    stripe_api: httpx.AsyncClient, stripe_server: FakeStripe, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    _, created = await _subscribe(stripe_api, stripe_server, ws)
    sub = created["data"]["object"]
    cancelled = stripe_server.event("customer.subscription.updated", {**sub, "cancel_at_period_end": True},
                                    created=created["created"] + 10)  # fmt: skip
    stale = stripe_server.event("customer.subscription.updated", {**sub, "cancel_at_period_end": False},
                                created=created["created"] + 5)  # fmt: skip
    assert (await _deliver(stripe_api, cancelled)).json()["applied"] is True
    assert (await _deliver(stripe_api, stale)).json()["applied"] is False
    assert (await _billing(stripe_api, ws))["cancelAtPeriodEnd"] is True
    deleted = stripe_server.event(
        "customer.subscription.deleted", {**sub, "status": "canceled"}, created=created["created"] + 20
    )
    assert (await _deliver(stripe_api, deleted)).json()["applied"] is True
    assert (await _billing(stripe_api, ws))["status"] == "canceled"


async def test_sync_finds_the_subscription_before_any_webhook(
    stripe_api: httpx.AsyncClient, stripe_server: FakeStripe, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    assert (await stripe_api.post("/api/v1/billing/sync", headers=ws.headers)).json() == {"found": False}
    url = (
        await stripe_api.post(
            "/api/v1/billing/checkout", headers=ws.headers, json={"plan": "scale", "interval": "month"}
        )
    ).json()["url"]
    stripe_server.complete_checkout(url.rsplit("/", 1)[1], email=ws.email)  # its webhook never arrives
    assert (await stripe_api.post("/api/v1/billing/sync", headers=ws.headers)).json() == {"found": True}
    got = await _billing(stripe_api, ws)
    assert (got["plan"], got["status"]) == ("scale", "active")


async def test_portal_plan_change_and_dedicated_ips_go_through_the_subscription(
    stripe_api: httpx.AsyncClient, stripe_server: FakeStripe, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    refused = await stripe_api.post("/api/v1/billing/portal", headers=ws.headers)
    assert refused.status_code == 409  # no customer yet
    _, created = await _subscribe(stripe_api, stripe_server, ws)
    customer = created["data"]["object"]["customer"]
    portal = (await stripe_api.post("/api/v1/billing/portal", headers=ws.headers)).json()
    assert portal == {"url": f"https://billing.stripe.test/p/{customer}"}

    sessions_before = len(stripe_server.sessions)
    moved = await stripe_api.post(
        "/api/v1/billing/checkout", headers=ws.headers, json={"plan": "agency", "interval": "month"}
    )
    assert moved.status_code == 200 and moved.json() == {"url": None}  # paying already: moved at once
    assert len(stripe_server.sessions) == sessions_before
    assert (await _billing(stripe_api, ws))["plan"] == "agency"

    ips = await stripe_api.post("/api/v1/billing/setDedicatedIps", headers=ws.headers, json={"quantity": 3})
    assert ips.status_code == 200 and ips.json()["addons"] == 3
    sub = stripe_server.subscriptions[created["data"]["object"]["id"]]
    addon = [i for i in sub["items"]["data"] if i["price"]["lookup_key"] == "outreach_dedicated_ip_month"]
    assert [i["quantity"] for i in addon] == [3]
    assert (
        await stripe_api.post("/api/v1/billing/setDedicatedIps", headers=ws.headers, json={"quantity": 0})
    ).json()["addons"] == 0
    assert not [
        i for i in sub["items"]["data"] if i["price"]["lookup_key"].startswith("outreach_dedicated_ip")
    ]


async def test_stripe_failures_are_a_clear_409_and_change_nothing(
    stripe_app: Served,
    stripe_api: httpx.AsyncClient,
    stripe_server: FakeStripe,
    make_workspace: MakeWorkspace,
) -> None:
    ws = await make_workspace(plan=None)
    prices = dict(stripe_server.prices)
    stripe_server.prices.clear()
    try:
        refused = await stripe_api.post(
            "/api/v1/billing/checkout", headers=ws.headers, json={"plan": "growth", "interval": "month"}
        )
    finally:
        stripe_server.prices.update(prices)
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "billing_unavailable"
    assert "lookup key outreach_growth_month" in refused.json()["error"]["message"]
    assert (await _billing(stripe_api, ws))["plan"] is None


async def test_a_members_billing_change_never_reaches_stripe(
    stripe_app: Served,
    stripe_api: httpx.AsyncClient,
    stripe_server: FakeStripe,
    make_workspace: MakeWorkspace,
) -> None:
    """Billing changes are for owners and admins (the catalogue's role, checked before the pre-transaction
    step): a member's checkout, portal, sync or add-on change is 403 through REST and MCP, and Stripe is
    asked nothing; the same sync by an admin reaches Stripe."""
    ws = await make_workspace(plan=None)
    await _subscribe(stripe_api, stripe_server, ws)
    admin, member = await ws.add_member("admin"), await ws.add_member("member")
    changes: list[tuple[str, str, dict[str, Any]]] = [
        ("checkout", "start_checkout", {"plan": "pro", "interval": "month"}),
        ("portal", "open_billing_portal", {}),
        ("sync", "sync_billing", {}),
        ("setDedicatedIps", "set_dedicated_ips", {"quantity": 1}),
    ]
    asked = len(stripe_server.calls)
    async with stripe_app.mcp(member.api_key) as member_mcp:
        for path, tool, args in changes:
            refused = await stripe_api.post(f"/api/v1/billing/{path}", headers=member.headers, json=args)
            assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden", path
            is_error, body = await call_mcp(member_mcp, tool, args)
            assert is_error and body["error"]["code"] == "forbidden", (tool, body)
    assert stripe_server.calls[asked:] == []
    assert (await _billing(stripe_api, member))["dedicatedIps"]["addons"] == 0  # members may read it
    synced = await stripe_api.post("/api/v1/billing/sync", headers=admin.headers)
    assert synced.json() == {"found": True} and stripe_server.calls[asked:]
