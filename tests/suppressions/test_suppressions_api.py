"""The suppression list over real HTTP: add, list, search, remove, suppress leads, and the status rules."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads
from outreach_core.suppressions.rules import parse_entry
from outreach_core.targets.suppression import suppressed_condition, suppressed_emails
from tests.conftest import MakeWorkspace
from tests.lists.helpers import add_leads, call, lead_rows, new_list, ok, statuses, suppressed_values


def test_entries_are_addresses_or_domains() -> None:
    assert parse_entry(" Ann@Example.COM ") == ("email", "ann@example.com")
    assert parse_entry("mailto:Bob@x.io") == ("email", "bob@x.io")
    assert parse_entry("Example.COM.") == ("domain", "example.com")
    assert parse_entry("@Example.com") == ("domain", "example.com")
    assert parse_entry("bücher.de") == ("domain", "xn--bcher-kva.de")
    for bad in ("", "   ", "nope", "a@", "@", "@@x.com", "a@b", "x y.com", "a@@b.com"):
        assert parse_entry(bad) is None, bad


async def test_add_counts_added_existing_and_invalid(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    first = await ok(
        http,
        ws,
        "POST",
        "/suppressions",
        {
            "entries": ["Ann@Acme.test", "ann@acme.test", "acme.test", "@Globex.test", "nope", "", "a@"],
            "reason": "asked us to stop",
        },
    )
    assert first == {"added": 3, "existing": 0, "invalid": 3, "invalidEntries": ["nope", "", "a@"]}
    second = await ok(http, ws, "POST", "/suppressions", {"entries": ["ACME.test", "new@initech.test"]})
    assert second == {"added": 1, "existing": 1, "invalid": 0, "invalidEntries": []}
    assert await suppressed_values(ws) == {
        "ann@acme.test": ("email", "asked us to stop"),
        "acme.test": ("domain", "asked us to stop"),
        "globex.test": ("domain", "asked us to stop"),
        "new@initech.test": ("email", None),
    }

    bad: dict[str, Any]
    for bad in (
        {"entries": []},
        {"entries": ["x.com"] * 10_001},
        {"entries": ["x.com"], "reason": "r" * 201},
        {},
    ):
        status, body = await call(http, ws, "POST", "/suppressions", bad)
        assert status == 422 and body["error"]["code"] == "invalid_input"


async def test_ten_thousand_entries_in_one_call(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    entries = [f"user{i}@bulk.test" for i in range(9_990)] + [f"d{i}.bulk.test" for i in range(10)]
    assert (await ok(http, ws, "POST", "/suppressions", {"entries": entries}))["added"] == 10_000
    again = await ok(http, ws, "POST", "/suppressions", {"entries": entries})
    assert again["added"] == 0 and again["existing"] == 10_000
    page = await ok(http, ws, "GET", "/suppressions", params={"pageSize": 10})
    assert page["total"] == 10_000
    assert (await ok(http, ws, "POST", "/suppressions/remove", {"entries": entries}))["removed"] == 10_000


async def test_list_newest_first_with_search_and_paging(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    for batch in (["old@acme.test"], ["mid@globex.test", "globex.test"], ["new@acme.test"]):
        await ok(http, ws, "POST", "/suppressions", {"entries": batch, "reason": batch[0]})
    page = await ok(http, ws, "GET", "/suppressions")
    assert page["total"] == 4 and page["page"] == 1 and page["pageSize"] == 50
    values = [s["value"] for s in page["suppressions"]]
    assert values[0] == "new@acme.test" and values[-1] == "old@acme.test"
    assert set(values[1:3]) == {"mid@globex.test", "globex.test"}
    item = page["suppressions"][0]
    assert set(item) == {"id", "value", "kind", "reason", "createdAt"}
    assert item["kind"] == "email" and item["reason"] == "new@acme.test" and item["id"].startswith("sup_")
    kinds = {s["value"]: s["kind"] for s in page["suppressions"]}
    assert kinds["globex.test"] == "domain"

    acme = await ok(http, ws, "GET", "/suppressions", params={"search": "ACME"})
    assert acme["total"] == 2 and [s["value"] for s in acme["suppressions"]] == [
        "new@acme.test",
        "old@acme.test",
    ]
    assert (await ok(http, ws, "GET", "/suppressions", params={"search": "%"}))["total"] == 0
    assert (await ok(http, ws, "GET", "/suppressions", params={"search": "_"}))["total"] == 0

    entries = [f"p{i:02}@page.test" for i in range(25)]
    await ok(http, ws, "POST", "/suppressions", {"entries": entries})
    second = await ok(
        http, ws, "GET", "/suppressions", params={"search": "page.test", "page": 2, "pageSize": 10}
    )
    assert second["total"] == 25 and second["page"] == 2 and len(second["suppressions"]) == 10
    third = await ok(
        http, ws, "GET", "/suppressions", params={"search": "page.test", "page": 3, "pageSize": 10}
    )
    assert len(third["suppressions"]) == 5
    beyond = await ok(http, ws, "GET", "/suppressions", params={"page": 100_000})
    assert beyond["suppressions"] == [] and beyond["total"] == 29

    for params in ({"page": 0}, {"pageSize": 9}, {"pageSize": 201}, {"search": "x" * 201}, {"sort": "value"}):
        assert (await call(http, ws, "GET", "/suppressions", params=params))[0] == 422, params


async def test_status_rules_on_add_and_remove(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    kinds = ("active", "replied", "interested", "won", "bounced", "unsubscribed")
    at_domain = [(await add_leads(ws, f"{s}@rules.test", status=s))[0] for s in kinds]
    elsewhere = (await add_leads(ws, "active@elsewhere.test"))[0]
    before = await lead_rows(ws, at_domain)

    await ok(http, ws, "POST", "/suppressions", {"entries": ["rules.test"]})
    assert await statuses(ws, at_domain) == ["suppressed"] * 3 + ["won", "bounced", "unsubscribed"]
    assert await statuses(ws, [elsewhere]) == ["active"]
    after = await lead_rows(ws, at_domain)
    assert all(after[i].updated_at is not None for i in at_domain[:3])
    assert all(after[i].updated_at == before[i].updated_at for i in at_domain[3:])

    # covered twice (address and domain): taking one entry off keeps the lead suppressed
    await ok(http, ws, "POST", "/suppressions", {"entries": ["active@rules.test"]})
    assert (
        await ok(http, ws, "POST", "/suppressions/remove", {"entries": ["@RULES.test", "nothing.test"]})
    ) == {"removed": 1}
    assert await statuses(ws, at_domain) == [
        "suppressed",
        "active",
        "active",
        "won",
        "bounced",
        "unsubscribed",
    ]
    assert (await ok(http, ws, "POST", "/suppressions/remove", {"entries": ["Active@Rules.test"]}))[
        "removed"
    ] == 1
    assert await statuses(ws, at_domain) == ["active", "active", "active", "won", "bounced", "unsubscribed"]
    assert (await ok(http, ws, "POST", "/suppressions/remove", {"entries": ["active@rules.test"]}))[
        "removed"
    ] == 0
    assert await suppressed_values(ws) == {}


async def test_suppress_leads_through_targets(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    acme = await add_leads(ws, "ann@acme.test", "bob@acme.test", company="Acme")
    won = (await add_leads(ws, "cy@globex.test", status="won"))[0]
    listed = (await add_leads(ws, "dee@initech.test"))[0]
    list_id = await new_list(http, ws, "L")
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [listed]}, "listId": list_id})

    async def suppress(target: dict[str, Any], reason: str | None = None) -> int:
        body: dict[str, Any] = {"target": target} | ({"reason": reason} if reason else {})
        return int((await ok(http, ws, "POST", "/leads/suppress", body))["suppressed"])

    assert await suppress({"ids": [acme[0], "lead_unknown"]}, "bounced twice") == 1
    assert await suppress({"filter": {"search": "acme"}}) == 1
    assert await suppress({"listId": list_id}) == 1
    assert await suppress({"filter": {"status": ["won"]}}) == 1
    assert await suppress({"all": True}) == 0
    assert await suppressed_values(ws) == {
        "ann@acme.test": ("email", "bounced twice"),
        "bob@acme.test": ("email", None),
        "dee@initech.test": ("email", None),
        "cy@globex.test": ("email", None),
    }
    assert await statuses(ws, [*acme, won, listed]) == ["suppressed", "suppressed", "won", "suppressed"]
    # the leads stay
    assert len(await lead_rows(ws, [*acme, won, listed])) == 4

    # a lead set back to active by hand is suppressed again when targeted again (its address is suppressed)
    await _set_status(ws, acme[0], "active")
    assert await suppress({"ids": [acme[0]]}) == 0
    assert await statuses(ws, [acme[0]]) == ["suppressed"]

    bad: dict[str, Any]
    for bad in ({"target": {}}, {"target": {"all": True}, "reason": "r" * 201}, {"reason": "x"}):
        assert (await call(http, ws, "POST", "/leads/suppress", bad))[0] == 422, bad


async def _set_status(ws: Any, lead_id: str, status: str) -> None:
    async def update(ctx: WorkspaceContext) -> None:
        t = scoped(ctx, leads)
        await ctx.conn.execute(t.update().where(leads.c.id == lead_id).values(status=status))

    await ws.runtime.execute(await ws.principal(), update)


async def test_suppressed_condition_and_suppressed_emails(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws, other = await make_workspace(), await make_workspace()
    ids = await add_leads(ws, "a@blocked.test", "b@fine.test", "c@fine.test")
    await ok(http, ws, "POST", "/suppressions", {"entries": ["blocked.test", "c@fine.test"]})
    await ok(http, other, "POST", "/suppressions", {"entries": ["fine.test"]})

    async def covered(ctx: WorkspaceContext) -> list[str]:
        t = scoped(ctx, leads)
        cond = suppressed_condition(ctx, leads.c.email, leads.c.domain)
        rows = await ctx.conn.execute(
            t.select(leads.c.email).where(leads.c.id.in_(ids), cond).order_by(leads.c.email)
        )
        return list(rows.scalars().all())

    principal = await ws.principal()
    assert await ws.runtime.read(principal, covered) == ["a@blocked.test", "c@fine.test"]

    pairs = [("a@blocked.test", "blocked.test"), ("b@fine.test", "fine.test"), ("c@fine.test", "fine.test")]
    pairs += [(f"x{i}@many.test", "many.test") for i in range(5_000)]
    assert await ws.runtime.read(principal, suppressed_emails, pairs) == {"a@blocked.test", "c@fine.test"}
    assert await ws.runtime.read(principal, suppressed_emails, []) == set()
    their_principal = await other.principal()
    assert await other.runtime.read(their_principal, suppressed_emails, pairs[:3]) == {
        "b@fine.test",
        "c@fine.test",
    }


@pytest.mark.parametrize("role", ["admin", "member"])
async def test_every_role_manages_suppressions(
    role: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    owner = await make_workspace()
    caller = await owner.add_member(role)
    lead = (await add_leads(owner, f"{role}@roles.test"))[0]
    assert (await ok(http, caller, "POST", "/suppressions", {"entries": ["roles.test"]}))["added"] == 1
    assert (await ok(http, caller, "GET", "/suppressions"))["total"] == 1
    assert (await ok(http, caller, "POST", "/leads/suppress", {"target": {"ids": [lead]}}))["suppressed"] == 1
    assert (await ok(http, caller, "POST", "/suppressions/remove", {"entries": ["roles.test"]}))[
        "removed"
    ] == 1
