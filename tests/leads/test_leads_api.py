"""The single lead, stats and deletion, over real HTTP (listing and search: `test_lead_listing.py`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads, outbox
from tests.conftest import MakeWorkspace
from tests.doors import call_mcp
from tests.leads.helpers import create, emails, four_people, listing, merge_imports, suppress


async def test_create_normalises_and_returns_every_field(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await create(
        http,
        ws,
        "  Ann.Lee@Example.COM ",
        firstName="Ann",
        lastName="Lee",
        company="Acme",
        title="CTO",
        website="https://acme.example",
        phone="+49 30 1234567",
        linkedin="https://linkedin.com/in/ann",
        country="DE",
        timezone="Europe/Berlin",
        custom={"plan": "pro", "seats": 12},
    )
    assert lead["email"] == "ann.lee@example.com"
    assert (
        lead["firstName"] == "Ann"
        and lead["company"] == "Acme"
        and lead["custom"] == {"plan": "pro", "seats": 12}
    )
    assert lead["status"] == "active" and lead["verifyStatus"] == "unknown" and lead["esp"] == "unknown"
    assert lead["labels"] == [] and lead["lists"] == [] and lead["createdAt"].endswith("Z")
    expected = {
        "id",
        "email",
        "firstName",
        "lastName",
        "company",
        "title",
        "country",
        "timezone",
        "esp",
        "mxHost",
        "verifyStatus",
        "verifyReason",
        "status",
        "labels",
        "createdAt",
        "countrySource",
        "website",
        "phone",
        "linkedin",
        "custom",
        "lists",
        "verifiedAt",
        "updatedAt",
    }
    assert set(lead) == expected
    fetched = (await http.get(f"/api/v1/leads/{lead['id']}", headers=ws.headers)).json()
    assert fetched == lead


@pytest.mark.parametrize("bad", ["", "nope", "a@b", "ann@@x.com", "Ann <ann@x.com>"])
async def test_create_refuses_invalid_addresses(
    bad: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    response = await http.post("/api/v1/leads", headers=ws.headers, json={"email": bad})
    assert response.status_code == 422 and response.json()["error"]["details"]["fields"][0]["path"] == "email"
    assert (await listing(http, ws))["total"] == 0


async def test_create_refuses_duplicates_and_suppressed(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    first = await create(http, ws, "dup@example.com")
    again = await http.post("/api/v1/leads", headers=ws.headers, json={"email": "DUP@example.com"})
    assert again.status_code == 409 and again.json()["error"]["details"]["id"] == first["id"]
    await suppress(http, ws, "blocked.example")
    blocked = await http.post("/api/v1/leads", headers=ws.headers, json={"email": "x@blocked.example"})
    assert blocked.status_code == 409 and blocked.json()["error"]["details"]["reason"] == "suppressed"
    assert (await listing(http, ws))["total"] == 1


async def test_update_is_partial_and_null_clears(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await create(http, ws, "upd@example.com", firstName="Ann", company="Acme", title="CTO")
    patched = await http.patch(
        f"/api/v1/leads/{lead['id']}",
        headers=ws.headers,
        json={"company": "Beta", "title": None, "status": "interested"},
    )
    assert patched.status_code == 200
    body = patched.json()
    assert body["company"] == "Beta" and body["title"] is None and body["firstName"] == "Ann"
    assert body["status"] == "interested" and body["updatedAt"] >= lead["updatedAt"]
    assert await emails(http, ws, search="beta") == ["upd@example.com"]  # search follows the new company
    assert await emails(http, ws, search="acme") == []
    email_change = await http.patch(
        f"/api/v1/leads/{lead['id']}", headers=ws.headers, json={"email": "x@y.com"}
    )
    assert email_change.status_code == 422
    bad_status = await http.patch(f"/api/v1/leads/{lead['id']}", headers=ws.headers, json={"status": "gone"})
    assert bad_status.status_code == 422


async def test_mark_won_sets_status_and_records_the_event(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await create(http, ws, "won@example.com")
    cid = (await http.post("/api/v1/campaigns", headers=ws.headers, json={"name": "Won it"})).json()["id"]
    won = await http.post(
        f"/api/v1/leads/{lead['id']}/won", headers=ws.headers, json={"value": 1200.5, "campaignId": cid}
    )
    assert won.status_code == 200 and won.json()["status"] == "won"

    async def events(ctx: WorkspaceContext) -> list[Any]:
        o = scoped(ctx, outbox)
        return [dict(r._mapping) for r in (await ctx.conn.execute(o.select())).all()]

    recorded = await ws.runtime.read(await ws.principal(), events)
    assert [e["kind"] for e in recorded] == ["lead.won"]
    assert recorded[0]["payload"]["data"] == {
        "lead": {
            "id": lead["id"],
            "email": "won@example.com",
            "firstName": None,
            "lastName": None,
            "company": None,
            "status": "won",
        },
        "campaign": {"id": cid, "name": "Won it"},
        "thread": None,
        "step": None,
        "variant": None,
        "value": 1200.5,
    }
    negative = await http.post(f"/api/v1/leads/{lead['id']}/won", headers=ws.headers, json={"value": -1})
    assert negative.status_code == 422
    missing = await http.post("/api/v1/leads/lead_missing/won", headers=ws.headers, json={})
    assert missing.status_code == 404


async def test_mark_won_refuses_a_campaign_that_is_not_yours(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Callable[..., Any]
) -> None:
    """Another workspace's campaign id, or one that does not exist, is 404 through REST and MCP alike: the
    lead stays as it was and no `lead.won` event is recorded (nothing of the other workspace is sent)."""
    ws, other = await make_workspace(), await make_workspace()
    lead = await create(http, ws, "maybe-won@example.com")
    theirs = (await http.post("/api/v1/campaigns", headers=other.headers, json={"name": "Theirs"})).json()[
        "id"
    ]

    async def won_events(ctx: WorkspaceContext) -> list[Any]:
        o = scoped(ctx, outbox)
        return list((await ctx.conn.execute(o.select().where(outbox.c.kind == "lead.won"))).all())

    for campaign_id in (theirs, "cmp_01jz0000000000000000000000"):
        refused = await http.post(
            f"/api/v1/leads/{lead['id']}/won", headers=ws.headers, json={"campaignId": campaign_id}
        )
        assert refused.status_code == 404
        assert refused.json()["error"]["code"] == "not_found"
        assert "Theirs" not in refused.text
        async with mcp_session(ws.api_key) as client:
            is_error, result = await call_mcp(
                client, "mark_won", {"id": lead["id"], "campaignId": campaign_id}
            )
        assert is_error and result["error"]["code"] == "not_found"
    assert (await http.get(f"/api/v1/leads/{lead['id']}", headers=ws.headers)).json()["status"] == "active"
    assert await ws.runtime.read(await ws.principal(), won_events) == []


async def test_stats_count_every_dimension(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    people = await four_people(http, ws)
    await http.post(f"/api/v1/leads/{people['ann@alpha.io']['id']}/won", headers=ws.headers, json={})
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    assert stats["total"] == 4
    assert stats["status"] == {
        "active": 3,
        "replied": 0,
        "interested": 0,
        "won": 1,
        "bounced": 0,
        "unsubscribed": 0,
        "suppressed": 0,
    }
    assert stats["verify"]["unknown"] == 4 and sum(stats["verify"].values()) == 4
    assert stats["esp"]["unknown"] == 4 and set(stats["esp"]) == {
        "google",
        "microsoft",
        "yahoo",
        "proton",
        "icloud",
        "zoho",
        "other",
        "unknown",
    }
    assert stats["importing"] is False and stats["verifierEnabled"] is False


async def test_delete_by_ids_and_filter(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    people = await four_people(http, ws)
    await suppress(http, ws, "ann@alpha.io")
    by_ids = await http.post(
        "/api/v1/leads/delete",
        headers=ws.headers,
        json={"target": {"ids": [people["ann@alpha.io"]["id"], "lead_missing"]}},
    )
    assert by_ids.status_code == 200 and by_ids.json() == {"deleted": 1}
    by_filter = await http.post(
        "/api/v1/leads/delete", headers=ws.headers, json={"target": {"filter": {"search": "io"}}}
    )
    assert by_filter.json() == {"deleted": 3}
    assert (await listing(http, ws))["total"] == 0
    kept = (await http.get("/api/v1/suppressions", headers=ws.headers, params={"search": "ann@"})).json()
    assert [s["value"] for s in kept["suppressions"]] == ["ann@alpha.io"]  # suppressions stay
    for target in ({}, {"ids": []}, {"ids": ["a"], "all": True}, {"all": False}):
        refused = await http.post("/api/v1/leads/delete", headers=ws.headers, json={"target": target})
        assert refused.status_code == 422, target


async def test_trigger_counters_agree_with_a_full_count(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Stats come from trigger-maintained counters; after every kind of change they equal a real count."""
    from sqlalchemy import func

    from outreach_core.kernel.context import scoped

    ws = await make_workspace()
    people = await four_people(http, ws)
    await http.post(
        "/api/v1/leads/import",
        headers=ws.headers,
        json={"rows": [{"email": f"c{i}@acme.io"} for i in range(30)]},
    )
    await merge_imports(ws)
    await http.patch(
        f"/api/v1/leads/{people['bob@beta.io']['id']}", headers=ws.headers, json={"status": "replied"}
    )
    await http.post(f"/api/v1/leads/{people['cid@gamma.io']['id']}/won", headers=ws.headers, json={})
    await http.post("/api/v1/leads/delete", headers=ws.headers, json={"target": {"filter": {"search": "c1"}}})
    await suppress(http, ws, "dee@delta.io")

    async def real(ctx: WorkspaceContext) -> dict[str, int]:
        t = scoped(ctx, leads)
        rows = (await ctx.conn.execute(t.select(leads.c.status, func.count()).group_by(leads.c.status))).all()
        return {status: n for status, n in rows}

    truth = await ws.runtime.read(await ws.principal(), real)
    stats = (await http.get("/api/v1/leads/stats", headers=ws.headers)).json()
    assert {k: v for k, v in stats["status"].items() if v} == truth
    assert stats["total"] == sum(truth.values()) == (await listing(http, ws))["total"]
    assert (await listing(http, ws, status="replied"))["total"] == truth.get("replied", 0) == 1


async def test_countries_are_stored_as_iso_codes(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    lead = await create(http, ws, "de@acme.io", country="Germany")
    assert lead["country"] == "DE" and lead["countrySource"] is None
    narnia = await http.post(
        "/api/v1/leads", headers=ws.headers, json={"email": "n@acme.io", "country": "Narnia"}
    )
    assert narnia.status_code == 422 and narnia.json()["error"]["details"]["fields"][0]["path"] == "country"
    patched = await http.patch(f"/api/v1/leads/{lead['id']}", headers=ws.headers, json={"country": "fr"})
    assert patched.json()["country"] == "FR"
    imp = await http.post(
        "/api/v1/leads/import",
        headers=ws.headers,
        json={
            "rows": [
                {"email": "uk@acme.io", "country": "United Kingdom"},
                {"email": "x@acme.io", "country": "Narnia"},
            ]
        },
    )
    await merge_imports(ws)
    fetched = await http.get(f"/api/v1/leads/imports/{imp.json()['id']}", headers=ws.headers)
    assert fetched.json()["created"] == 2
    by_email = {lead["email"]: lead for lead in (await listing(http, ws, pageSize=50))["leads"]}
    assert by_email["uk@acme.io"]["country"] == "GB" and by_email["x@acme.io"]["country"] is None
