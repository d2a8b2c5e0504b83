"""Campaign leads over real HTTP: exact add counts, removal, listing, search, sends history."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from tests.campaigns.helpers import add_lead, call, campaign_lead_rows, new_campaign, ok, write_send
from tests.conftest import MakeWorkspace
from tests.lists.helpers import new_list


async def test_add_counts_every_lead_once_in_a_documented_order(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    fresh = [await add_lead(ws, f"fresh{i}@add.test") for i in range(3)]
    unsubscribed = await add_lead(ws, "unsub@add.test", status="unsubscribed")
    bounced = await add_lead(ws, "bounced@add.test", status="bounced")
    on_list = await add_lead(ws, "listed@add.test")
    domain_blocked = await add_lead(ws, "anyone@blocked-domain.test")
    invalid = await add_lead(ws, "invalid@add.test", verify="invalid")
    risky = await add_lead(ws, "risky@add.test", verify="risky")
    catch_all = await add_lead(ws, "catchall@add.test", verify="catch_all")
    await ok(http, ws, "POST", "/suppressions", {"entries": ["listed@add.test", "blocked-domain.test"]})
    # a suppressed address that is also invalid counts as suppressed (first matching bucket wins)
    both = await add_lead(ws, "both@blocked-domain.test", verify="invalid")

    everything = [*fresh, unsubscribed, bounced, on_list, domain_blocked, invalid, risky, catch_all, both]
    result = await ok(
        http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [*everything, fresh[0], "lead_nope"]}
    )
    assert result == {
        "matched": 11,
        "added": 5,  # 3 fresh + risky + catch-all (the campaign does not skip risky leads)
        "alreadyIn": 0,
        "suppressed": 5,
        "invalid": 1,
        "risky": 0,
    }
    again = await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"allLeads": True})
    assert again == {"matched": 11, "added": 0, "alreadyIn": 5, "suppressed": 5, "invalid": 1, "risky": 0}

    skipping = await new_campaign(http, ws, "Skips risky")
    await ok(http, ws, "PATCH", f"/campaigns/{skipping}", {"skipRisky": True})
    counted = await ok(http, ws, "POST", f"/campaigns/{skipping}/leads", {"allLeads": True})
    assert counted == {"matched": 11, "added": 3, "alreadyIn": 0, "suppressed": 5, "invalid": 1, "risky": 2}
    rows = await campaign_lead_rows(ws, skipping)
    assert sorted(r.lead_id for r in rows) == sorted(fresh)
    assert {(r.status, r.step) for r in rows} == {("not_contacted", 0)}

    campaign = await ok(http, ws, "GET", f"/campaigns/{cid}")
    assert campaign["leadCounts"]["total"] == 5 and campaign["leadCounts"]["not_contacted"] == 5


async def test_add_from_lists_and_ids_together_and_refuse_bad_input(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    a = [await add_lead(ws, f"a{i}@lists.test") for i in range(3)]
    b = [await add_lead(ws, f"b{i}@lists.test") for i in range(2)]
    list_a, list_b = await new_list(http, ws, "A"), await new_list(http, ws, "B")
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": a}, "listId": list_a})
    await ok(http, ws, "POST", "/leads/lists/add", {"target": {"ids": [a[0], b[0]]}, "listId": list_b})
    result = await ok(
        http, ws, "POST", f"/campaigns/{cid}/leads", {"listIds": [list_a, list_b], "leadIds": [b[1], a[1]]}
    )
    assert result["matched"] == 5 and result["added"] == 5

    for bad in ({}, {"listIds": []}, {"allLeads": False}, {"leadIds": "x"}, {"allLeads": "yes"}):
        status, body = await call(http, ws, "POST", f"/campaigns/{cid}/leads", bad)
        assert status == 422 and body["error"]["code"] == "invalid_input", bad
    status, body = await call(http, ws, "POST", f"/campaigns/{cid}/leads", {"listIds": [list_a, "list_nope"]})
    assert status == 404 and body["error"]["details"] == {"id": "list_nope"}
    other = await make_workspace()
    foreign_lead = await add_lead(other, "foreign@lists.test")
    foreign_list = await new_list(http, other, "Theirs")
    assert (await call(http, ws, "POST", f"/campaigns/{cid}/leads", {"listIds": [foreign_list]}))[0] == 404
    result = await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [foreign_lead]})
    assert result["matched"] == 0 and result["added"] == 0
    assert len(await campaign_lead_rows(ws, cid)) == 5


@pytest.mark.parametrize("common", [True, False])
async def test_a_short_search_finds_the_same_campaign_leads_by_index_or_by_testing_rows(
    common: bool, http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1-2 character term is matched through the index unless common in the workspace; both find the
    campaign's leads whose email, name or company hold it, at the end of the text too."""
    from outreach_core.campaigns import audience
    from workers import search_index

    async def judged(ctx: object, term: str) -> bool:
        return common

    monkeypatch.setattr(audience, "common_short_term", judged)
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    people = {"ann@a.test": "Fizz", "bob@b.test": "Jazz", "cid@c.test": "Acme", "dee@d.test": "Buzz"}
    ids = [await add_lead(ws, email, company=company) for email, company in people.items()]
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": ids[:3]})  # not dee
    while await search_index.tick(ws.runtime):
        pass

    async def found(term: str) -> list[str]:
        page = await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"search": term, "pageSize": 50})
        assert page["total"] == len(page["leads"])
        return sorted(x["email"] for x in page["leads"])

    assert await found("zz") == ["ann@a.test", "bob@b.test"]
    assert await found("z") == ["ann@a.test", "bob@b.test"]
    assert await found("me") == ["cid@c.test"]
    assert await found("q") == []


async def test_a_campaign_search_pages_the_same_leads_whichever_side_drives_it(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search of a campaign's leads walks a small campaign, testing each lead; a large one starts from the
    term's matches in the search index and, past the count limit, pages by walking the campaign. All three
    give the same leads in the same order (the order they were added), the count says whether it is exact,
    and leads of other campaigns, leads not indexed yet and a page past the end are handled alike."""
    from outreach_core.campaigns import audience
    from workers import search_index

    ws = await make_workspace()
    cid, other = await new_campaign(http, ws), await new_campaign(http, ws, "Other")
    ids = [
        await add_lead(
            ws,
            f"p{i:02d}@{'zest' if i % 5 == 0 else 'plain'}.test",
            company="Zest Co" if i % 3 == 0 else "Acme",
        )
        for i in range(30)
    ]
    while await search_index.tick(ws.runtime):
        pass
    pending = [await add_lead(ws, f"late{i}@zest.test") for i in range(2)]  # not in the search index yet
    # added in three batches, the later ids first, so the campaign's order is not the leads' order
    for batch in (ids[12:24], [*pending, *ids[:12]], ids[24:27]):
        await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": batch})
    await ok(http, ws, "POST", f"/campaigns/{other}/leads", {"leadIds": ids[27:]})  # zest, elsewhere

    async def pages(**params: object) -> tuple[list[str], int, bool]:
        found, totals = [], set()
        for page in (1, 2, 3):
            got = await ok(
                http,
                ws,
                "GET",
                f"/campaigns/{cid}/leads",
                params={"search": "zest", "pageSize": 10, "page": page, **params},
            )
            found += [x["email"] for x in got["leads"]]
            totals.add((got["total"], got["totalExact"]))
        assert len(totals) == 1, totals
        total, exact = totals.pop()
        return found, total, exact

    walked, total, exact = await pages()
    zest = {
        f"p{i:02d}@{'zest' if i % 5 == 0 else 'plain'}.test" for i in range(27) if i % 3 == 0 or i % 5 == 0
    }
    assert sorted(walked) == sorted(zest | {"late0@zest.test", "late1@zest.test"})
    assert (total, exact) == (len(walked), True) == (15, True)
    batches = [{e for e in zest if 12 <= int(e[1:3]) < 24}, {e for e in zest if int(e[1:3]) < 12}, set()]
    batches[1] |= {"late0@zest.test", "late1@zest.test"}
    batches[2] = set(walked) - batches[0] - batches[1]
    assert [len(b) for b in batches] == [5, 8, 2]
    assert [set(walked[:5]), set(walked[5:13]), set(walked[13:])] == batches  # in the order they were added
    assert await pages(status=["replied"]) == ([], 0, True)

    monkeypatch.setattr(audience, "SEARCH_TOTAL_LIMIT", 20)  # 29 campaign leads: from the index, 15 found
    assert await pages() == (walked, 15, True)
    beyond = await ok(
        http, ws, "GET", f"/campaigns/{cid}/leads", params={"search": "zest", "pageSize": 10, "page": 4}
    )
    assert (beyond["leads"], beyond["total"], beyond["totalExact"]) == ([], 15, True)
    assert await pages(status=["not_contacted"]) == (walked, 15, True)

    monkeypatch.setattr(audience, "SEARCH_TOTAL_LIMIT", 5)  # past the limit: the page walks the campaign
    assert await pages() == (walked, 5, False)


async def test_list_filter_search_page_and_remove(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    ids = [
        await add_lead(
            ws, f"person{i}@page.test", first_name=f"Name{i}", company="Acme" if i % 2 else "Globex"
        )
        for i in range(25)
    ]
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": ids})
    page1 = await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"pageSize": 10})
    assert page1["total"] == 25 and len(page1["leads"]) == 10 and page1["page"] == 1
    item = page1["leads"][0]
    assert item["id"].startswith("cl_") and item["leadId"] in ids
    assert item["status"] == "not_contacted" and item["step"] == 0 and item["addedAt"].endswith("Z")
    page3 = await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"pageSize": 10, "page": 3})
    assert len(page3["leads"]) == 5
    all_ids = {
        x["id"]
        for p in (1, 2, 3)
        for x in (await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"pageSize": 10, "page": p}))[
            "leads"
        ]
    }
    assert len(all_ids) == 25

    acme = await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"search": "acme", "pageSize": 50})
    assert acme["total"] == 12 and all(x["company"] == "Acme" for x in acme["leads"])
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}/leads", params={"status": ["contacted"]}))[
        "total"
    ] == 0
    waiting = await ok(
        http, ws, "GET", f"/campaigns/{cid}/leads", params={"status": ["not_contacted", "replied"]}
    )
    assert waiting["total"] == 25
    for bad in ({"status": "asleep"}, {"pageSize": 5}, {"page": 0}, {"search": "x" * 201}):
        assert (await call(http, ws, "GET", f"/campaigns/{cid}/leads", params=bad))[0] == 422

    remove = [x["id"] for x in acme["leads"][:3]] + ["cl_missing"]
    assert await ok(http, ws, "POST", f"/campaigns/{cid}/leads/remove", {"ids": remove}) == {"removed": 3}
    assert await ok(http, ws, "POST", f"/campaigns/{cid}/leads/remove", {"ids": remove}) == {"removed": 0}
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}"))["leadCounts"]["total"] == 22
    assert (await call(http, ws, "POST", f"/campaigns/{cid}/leads/remove", {"ids": []}))[0] == 422
    # the leads themselves stay
    assert (await ok(http, ws, "GET", "/leads", params={"search": "acme"}))["total"] == 12


async def test_sends_are_listed_per_campaign_lead_and_survive_removal(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    lead = await add_lead(ws, "sent@sends.test")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [lead]})
    cl = (await ok(http, ws, "GET", f"/campaigns/{cid}/leads"))["leads"][0]["id"]
    assert await ok(http, ws, "GET", f"/campaigns/{cid}/leads/{cl}/sends") == {"sends": []}
    await write_send(ws, cl, step=1, subject="Re: Hello", status="retry", error="451 try later", attempts=2)
    await write_send(ws, cl, step=0)
    listed = (await ok(http, ws, "GET", f"/campaigns/{cid}/leads/{cl}/sends"))["sends"]
    assert [(s["step"], s["subject"], s["status"], s["error"]) for s in listed] == [
        (0, "Hello", "sent", None),
        (1, "Re: Hello", "retry", "451 try later"),
    ]
    assert listed[0]["body"] == "<p>Hello</p>" and listed[0]["text"] == "Hello"
    assert listed[0]["messageId"].startswith("<snd_")
    assert (await call(http, ws, "GET", f"/campaigns/{cid}/leads/cl_missing/sends"))[0] == 404
    other = await new_campaign(http, ws)
    assert (await call(http, ws, "GET", f"/campaigns/{other}/leads/{cl}/sends"))[0] == 404


async def test_concurrent_adds_count_every_lead_once(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    for i in range(150):
        await add_lead(ws, f"race{i}@race.test")
    answers = await asyncio.gather(
        *(call(http, ws, "POST", f"/campaigns/{cid}/leads", {"allLeads": True}) for _ in range(3))
    )
    assert all(status == 200 for status, _ in answers), answers
    assert sum(body["added"] for _, body in answers) == 150
    for _, body in answers:
        assert body["matched"] == 150 and body["added"] + body["alreadyIn"] == 150
    assert len(await campaign_lead_rows(ws, cid)) == 150
    assert (await ok(http, ws, "GET", f"/campaigns/{cid}"))["leadCounts"]["total"] == 150
