"""Listing leads over real HTTP: filters, search (and its indexes), sorts, paging and deep pages."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.db.tables import leads
from outreach_core.targets.schemas import LeadFilter
from tests.conftest import MakeWorkspace
from tests.leads.helpers import create, emails, four_people, import_chunk, listing, merge_imports


async def test_filters_and_search(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    people = await four_people(http, ws)
    assert await emails(http, ws, search="alpha") == ["bob@beta.io", "ann@alpha.io"]  # company and email
    assert await emails(http, ws, search="YOUNG") == ["bob@beta.io"]
    assert await emails(http, ws, search="xu") == ["cid@gamma.io"]  # short terms work too
    assert await emails(http, ws, search="nobody") == []
    assert await emails(http, ws, search="50%_") == []
    await http.patch(
        f"/api/v1/leads/{people['cid@gamma.io']['id']}", headers=ws.headers, json={"status": "replied"}
    )
    assert await emails(http, ws, status="replied") == ["cid@gamma.io"]
    assert sorted(await emails(http, ws, status=["replied", "active"])) == sorted(people)
    assert await emails(http, ws, verify="valid") == []
    assert len(await emails(http, ws, esp="unknown")) == 4
    assert len(await emails(http, ws, labelId="none")) == 4
    for params in (
        {"pageSize": 5},
        {"pageSize": 201},
        {"page": 0},
        {"page": 100_001},
        {"search": "x" * 201},
        {"sort": "title"},
        {"dir": "up"},
        {"status": "gone"},
        {"unknown": "1"},
    ):
        response = await http.get("/api/v1/leads", headers=ws.headers, params=params)
        assert response.status_code == 422, params


@pytest.mark.parametrize(
    ("sort", "ascending"),
    [
        ("email", ["ann@alpha.io", "bob@beta.io", "cid@gamma.io", "dee@delta.io"]),
        ("name", ["dee@delta.io", "ann@alpha.io", "bob@beta.io", "cid@gamma.io"]),
        ("company", None),
        ("createdAt", ["ann@alpha.io", "bob@beta.io", "cid@gamma.io", "dee@delta.io"]),
    ],
)
async def test_sorts_in_both_directions(
    sort: str, ascending: list[str] | None, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await four_people(http, ws)
    up = await emails(http, ws, sort=sort, dir="asc")
    down = await emails(http, ws, sort=sort, dir="desc")
    if ascending is not None:
        assert up == ascending
    else:  # NULL company sorts first or last depending on the engine; the named ones keep their order
        assert [e for e in up if e != "dee@delta.io"] == ["bob@beta.io", "cid@gamma.io", "ann@alpha.io"]
    assert down == list(reversed(up))


async def test_paging_and_total(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    for i in range(25):
        await create(http, ws, f"p{i:02d}@example.com")
    first = await listing(http, ws, pageSize=10, sort="email", dir="asc")
    third = await listing(http, ws, pageSize=10, page=3, sort="email", dir="asc")
    beyond = await listing(http, ws, pageSize=10, page=100_000)
    assert first["total"] == third["total"] == beyond["total"] == 25
    assert [lead["email"] for lead in first["leads"]] == [f"p{i:02d}@example.com" for i in range(10)]
    assert [lead["email"] for lead in third["leads"]] == [f"p{i:02d}@example.com" for i in range(20, 25)]
    assert beyond["leads"] == [] and first["page"] == 1 and first["pageSize"] == 10


async def test_a_search_counts_up_to_its_limit_and_pages_the_same_leads(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past `SEARCH_TOTAL_LIMIT` matches a search says so (`totalExact` false, `total` the limit) and pages
    by testing rows in sort order; those pages hold exactly the leads, in exactly the order, of an exactly
    counted search. Leads created alone are indexed at once; imported ones may still be pending."""
    from outreach_core.leads import operations

    ws = await make_workspace()
    await four_people(http, ws)  # alpha/beta/gamma/delta: one company or address says "alpha"
    rows = [
        {"email": f"m{i:02d}@alpha{i % 3}.io", "firstName": f"N{i % 4}", "company": f"C{i % 5}"}
        for i in range(12)
    ]
    await import_chunk(http, ws, rows=[*rows, {"email": "other@zeta.io", "company": "Zeta"}])
    await merge_imports(ws)
    exact = {}
    for sort in ("createdAt", "email", "name", "company"):
        for direction in ("asc", "desc"):
            page = await listing(http, ws, search="alpha", sort=sort, dir=direction, pageSize=10)
            rest = await listing(http, ws, search="alpha", sort=sort, dir=direction, pageSize=10, page=2)
            assert (page["total"], page["totalExact"]) == (14, True)
            exact[sort, direction] = [lead["email"] for lead in page["leads"] + rest["leads"]]
    monkeypatch.setattr(operations, "SEARCH_TOTAL_LIMIT", 5)
    for (sort, direction), expected in exact.items():
        page = await listing(http, ws, search="alpha", sort=sort, dir=direction, pageSize=10)
        rest = await listing(http, ws, search="alpha", sort=sort, dir=direction, pageSize=10, page=2)
        assert (page["total"], page["totalExact"]) == (5, False)
        assert [lead["email"] for lead in page["leads"] + rest["leads"]] == expected, (sort, direction)
    assert len(expected) == 14 and "other@zeta.io" not in expected
    # filters still apply on the frequent path; a search matching no more than the limit stays exact
    narrowed = await listing(http, ws, search="alpha", labelId="none", status="active", pageSize=10, page=2)
    assert len(narrowed["leads"]) == 4
    assert (await listing(http, ws, search="alpha0"))["totalExact"] is True
    assert (await listing(http, ws, search="alpha0"))["total"] == 4
    assert (await listing(http, ws))["totalExact"] is True  # no search: always exact


async def test_a_search_many_leads_hold_pages_from_the_sort_index_alone(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """A search that pages by walking the sort order reads each lead's text from the sort index itself
    (migration 0009), not from the table: with the planner kept off whole-table plans, every sort in both
    directions is an index-only walk of its own index."""
    from sqlalchemy import text

    from outreach_core.leads.operations import _SORT_COLUMNS
    from outreach_core.targets.selection import search_walk

    ws = await make_workspace()
    for i in range(3):
        await create(http, ws, f"hooli{i}@acme.io", firstName=f"Ann{i}", company=f"Hooli {i}")
    sqlite = ws.runtime.is_sqlite
    own_index = {
        "createdAt": "ix_leads_ws_created",
        "name": "ix_leads_ws_sort_name",
        "company": "ix_leads_ws_company",
        "email": "ix_leads_ws_email_search" if sqlite else "uq_leads_workspace_id_email",
    }

    async def plan(ctx: WorkspaceContext, sort: str, direction: str) -> str:
        sorted_by = (leads.c.email,) if sort == "email" else (_SORT_COLUMNS[sort], leads.c.id)
        walk = search_walk(ctx, LeadFilter(search="hooli"), sorted_by, direction, page_size=2, offset=0)
        sql = str(walk.compile(dialect=ctx.conn.dialect, compile_kwargs={"literal_binds": True}))
        if sqlite:
            return "\n".join(row[-1] for row in (await ctx.conn.execute(text("EXPLAIN QUERY PLAN " + sql))))
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            await ctx.conn.execute(text(f"SET LOCAL {setting} = off"))
        return "\n".join(row[0] for row in (await ctx.conn.execute(text("EXPLAIN " + sql))))

    for sort, index in own_index.items():
        for direction in ("asc", "desc"):
            steps = await ws.runtime.read(await ws.principal(), plan, sort, direction)
            walked = f"USING COVERING INDEX {index} " if sqlite else "Index Only Scan"
            assert walked in steps and index in steps, (sort, direction, steps)
    page = await listing(http, ws, search="hooli", sort="company", dir="desc", pageSize=10)
    assert [lead["company"] for lead in page["leads"]] == ["Hooli 2", "Hooli 1", "Hooli 0"]


async def test_a_lead_whose_text_is_too_long_for_the_index_is_stored_and_found(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names and company in a 4-byte script can make a lead's text longer than a PostgreSQL index entry may
    be: such a lead is still created, imported and updated, stays out of the search indexes (the
    search-index worker does not take it up again and again) and is found by testing rows, on every path."""
    from outreach_core.leads import operations
    from workers import search_index

    long_names = {"firstName": "Hooli" + _han(0, 195), "lastName": _han(200, 200)}
    ws = await make_workspace()
    created = await create(http, ws, "long1@acme.io", **long_names, company=_han(400, 300))
    await create(http, ws, "short@hooli.io", firstName="Bo", company="Hooli")
    await create(http, ws, "plain@acme.io", company="Acme")  # indexed, then made long by an import
    rows = [
        {"email": "long2@acme.io", **long_names, "company": "Initech " + _han(400, 290)},
        {
            "email": "plain@acme.io",
            "firstName": "Hooli",
            "lastName": _han(200, 200),
            "company": _han(400, 300),
        },
    ]
    response = await import_chunk(http, ws, rows=rows, existing="update")
    assert response.status_code == 200, response.text
    await merge_imports(ws)
    # the worker indexes what fits and then has nothing left to do (its queue is the server's: other tests'
    # leads waiting in the session database take turns first, hence the generous bound)
    for _ in range(500):
        if not await search_index.tick(ws.runtime):
            break
    else:
        pytest.fail("the search-index worker kept taking up leads too long for the index")
    everyone = {"long1@acme.io", "long2@acme.io", "plain@acme.io", "short@hooli.io"}
    assert set(await emails(http, ws, search="hooli")) == everyone
    assert set(await emails(http, ws, search=_han(400, 3))) == everyone - {"short@hooli.io"}
    assert await emails(http, ws, search="initech " + _han(400, 1)) == ["long2@acme.io"]
    indexed = [await emails(http, ws, search="hooli", sort="email", dir=d) for d in ("asc", "desc")]
    monkeypatch.setattr(operations, "SEARCH_TOTAL_LIMIT", 1)  # now pages by walking the sort order
    walked = [await emails(http, ws, search="hooli", sort="email", dir=d) for d in ("asc", "desc")]
    assert walked == indexed == [sorted(everyone), sorted(everyone, reverse=True)]
    edited = await http.patch(
        f"/api/v1/leads/{created['id']}", headers=ws.headers, json={"firstName": "Ann", "lastName": None}
    )
    assert edited.status_code == 200, edited.text
    assert "long1@acme.io" not in await emails(http, ws, search="hooli")


def _han(start: int, length: int) -> str:
    """`length` distinct Han characters (3 bytes each in UTF-8), in an order that does not compress."""
    return "".join(chr(0x4E00 + (i * 7919) % 20_000) for i in range(start, start + length))


async def test_an_edited_lead_is_found_by_what_it_kept_and_not_by_what_it_lost(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Editing a searchable field re-indexes the lead: the old text leaves the index and the new one enters,
    whatever the two share (on SQLite the trigger once dropped the shared trigrams with the old text)."""
    ws = await make_workspace()
    lead = await create(http, ws, "ann.lee@acme.io", firstName="Ann", company="Acme Widgets")
    await create(http, ws, "bob@other.io", company="Acme Gadgets")
    edited = await http.patch(
        f"/api/v1/leads/{lead['id']}", headers=ws.headers, json={"company": "Acme Tools"}
    )
    assert edited.status_code == 200
    assert await emails(http, ws, search="ann.lee@acme") == ["ann.lee@acme.io"]
    assert await emails(http, ws, search="acme tools") == ["ann.lee@acme.io"]
    assert await emails(http, ws, search="widgets") == []
    assert sorted(await emails(http, ws, search="acme")) == ["ann.lee@acme.io", "bob@other.io"]


async def test_an_indexed_search_is_counted_from_a_stream_of_its_matches(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """SQLite counts a search by reading the FTS5 matches as the outer loop (a LIMIT stops it), not by first
    collecting every match of every workspace; the count is the same: pending leads and filters included."""
    from sqlalchemy import text

    from outreach_core.targets.selection import matching_ids

    ws = await make_workspace()
    if not ws.runtime.is_sqlite:
        pytest.skip("PostgreSQL counts through a bitmap of the trigram index")
    for i in range(3):
        await create(http, ws, f"hooli{i}@acme.io")  # indexed at once
    await import_chunk(http, ws, rows=[{"email": "x@hooli.io"}, {"email": "y@other.io"}])  # pending
    await merge_imports(ws)
    lead = await listing(http, ws, search="hooli1@")
    await http.patch(
        f"/api/v1/leads/{lead['leads'][0]['id']}", headers=ws.headers, json={"status": "replied"}
    )

    async def plan(ctx: WorkspaceContext) -> list[str]:
        stmt = matching_ids(ctx, LeadFilter(search="hooli")).limit(10)
        sql = str(stmt.compile(dialect=ctx.conn.dialect, compile_kwargs={"literal_binds": True}))
        return [row[-1] for row in (await ctx.conn.execute(text("EXPLAIN QUERY PLAN " + sql))).all()]

    steps = await ws.runtime.read(await ws.principal(), plan)
    assert next(s for s in steps if "leads" in s).startswith("SCAN leads_fts"), steps
    assert not any("LIST SUBQUERY" in s for s in steps), steps
    assert (await listing(http, ws, search="hooli"))["total"] == 4
    assert (await listing(http, ws, search="hooli", status="active"))["total"] == 3


# Texts that end in a distinctive character or pair, hold characters the index or LIKE treat specially
# (quote, %, _, backslash, accents), and repeat pairs, for the short-term search below.
SHORT_TERM_PEOPLE = [
    ("ann@alpha.io", "Ann", None, "Buzz"),
    ("bob@beta.io", None, "Qi", 'Say "Hi"'),
    ("cid@gamma.io", "Zoë", None, "Café Ñu"),
    ("dee@delta.io", None, None, "50%_off\\x"),
    ("eve@zz.io", "Eve", None, None),
    ("fay@quux.io", "Fay", "O'Neil", "Quux & Co"),
]


async def test_one_and_two_character_terms_match_through_the_index_as_by_testing_rows(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 1-2 character term that is not common goes through the index (SQLite: trigrams that start with it,
    each text followed by two end marks; PostgreSQL: the index of characters and pairs). Every character
    and pair of every text, and some that occur nowhere, find exactly the leads whose text holds them:
    indexed leads, pending ones, an edited one and not a deleted one, and nothing of another workspace."""
    from outreach_core.leads import operations
    from workers import search_index

    ws, other = await make_workspace(), await make_workspace()
    await create(http, other, "zz@qq.io", company="Buzz Ñu")
    first, later = SHORT_TERM_PEOPLE[:3], SHORT_TERM_PEOPLE[3:]
    for email, first_name, last_name, company in first:
        await create(http, ws, email, firstName=first_name, lastName=last_name, company=company)
    rows = [{"email": e, "firstName": f, "lastName": la, "company": c} for e, f, la, c in later]
    await import_chunk(http, ws, rows=[*rows, {"email": "gone@yy.io", "company": "Yy"}])
    await merge_imports(ws)
    gone = await listing(http, ws, search="gone@")
    assert (
        await http.post(
            "/api/v1/leads/delete", headers=ws.headers, json={"target": {"ids": [gone["leads"][0]["id"]]}}
        )
    ).json() == {"deleted": 1}
    while await search_index.tick(ws.runtime):  # the imported leads are indexed now...
        pass
    await import_chunk(http, ws, rows=[{"email": "hal@kk.io", "company": "Jx"}])  # ...this one is pending
    await merge_imports(ws)
    bob = (await listing(http, ws, search="bob@"))["leads"][0]
    edited = await http.patch(f"/api/v1/leads/{bob['id']}", headers=ws.headers, json={"company": "Vw"})
    assert edited.status_code == 200
    texts = {
        e: " ".join(p for p in (e, f, la, c) if p).lower()
        for e, f, la, c in [*SHORT_TERM_PEOPLE, ("hal@kk.io", None, None, "Jx")]
    }
    texts["bob@beta.io"] = "bob@beta.io qi vw"
    terms = {t[i : i + n] for t in texts.values() for n in (1, 2) for i in range(len(t) - n + 1)}
    terms = {t for t in terms if t.strip() == t} | {"hi", "yy", "q", "zq", "%x", "\\", "ü"}

    async def found(term: str) -> set[str]:
        page = await listing(http, ws, search=term, pageSize=200)
        assert page["totalExact"] is True and page["total"] == len(page["leads"]), term
        return {lead["email"] for lead in page["leads"]}

    async def common(ctx: object, term: str) -> bool:
        return is_common

    monkeypatch.setattr(operations, "common_short_term", common)
    is_common = False  # the index answers
    by_index = {term: await found(term) for term in sorted(terms)}
    is_common = True  # rows are tested
    for term, emails_found in by_index.items():
        expected = {e for e, text in texts.items() if term in text}
        assert emails_found == expected, term
        assert await found(term) == expected, term
    assert by_index["zz"] == {"ann@alpha.io", "eve@zz.io"} and by_index["i"] >= {"bob@beta.io"}


@pytest.mark.parametrize("sort", ["createdAt", "email", "name", "company"])
async def test_deep_pages_continue_the_same_order(
    sort: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """Pages past offset 1,000 are read ids-first; they must continue exactly the order of the pages
    before them, ties (same name, same company, same import time) broken the same way."""
    ws = await make_workspace()
    rows = [
        {"email": f"d{i:04d}@acme.io", "firstName": ["Ann", "Bob", "Cid"][i % 3], "company": f"Co {i % 4}"}
        for i in range(1030)
    ]
    await import_chunk(http, ws, rows=rows)
    await merge_imports(ws)
    for direction in ("asc", "desc"):
        walked = []
        for page in range(1, 7):
            walked += await emails(http, ws, sort=sort, dir=direction, page=page)
        assert sorted(walked) == sorted(r["email"] for r in rows)  # every lead once
        deep = await listing(http, ws, sort=sort, dir=direction, page=101, pageSize=10)
        deeper = await listing(http, ws, sort=sort, dir=direction, page=103, pageSize=10)
        assert [lead["email"] for lead in deep["leads"]] == walked[1000:1010]
        assert [lead["email"] for lead in deeper["leads"]] == walked[1020:1030]
        assert deep["total"] == 1030 and deep["leads"][0]["firstName"] in ("Ann", "Bob", "Cid")


@pytest.mark.parametrize("window", [4, 100, 20_000])
@pytest.mark.parametrize("spread", [True, False])
async def test_a_lists_pages_are_the_workspaces_order_kept_to_its_members(
    window: int,
    spread: bool,
    monkeypatch: pytest.MonkeyPatch,
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
) -> None:
    """A list's page walks the workspace's sort order within a window and keeps the members, or sorts the
    members when the walk does not pay (window 4: never) or does not find the page within the window
    (window 100 of 120 leads, the members bunched at the far end of the order: the 25 first addresses,
    sorted by address descending). Either way each page is the workspace's own order kept to the list's
    members, and `total` counts the members."""
    from outreach_core.leads import operations

    monkeypatch.setattr(operations, "LIST_WALK_WINDOW", window)
    walked: list[bool] = []  # whether the walk found each page (a page with leads)
    walk = operations._list_walk

    async def watched(*args: Any, **kwargs: Any) -> list[str] | None:
        keys = await walk(*args, **kwargs)
        walked.append(bool(keys))
        return keys

    monkeypatch.setattr(operations, "_list_walk", watched)
    ws = await make_workspace()
    rows = [
        {"email": f"m{i:03d}@acme.io", "firstName": ["Ann", "Bob", "Cid"][i % 3], "company": f"Co {i % 5}"}
        for i in range(120)
    ]
    await import_chunk(http, ws, rows=rows)
    await merge_imports(ws)
    by_email = {lead["email"]: lead for lead in (await listing(http, ws, pageSize=200))["leads"]}
    members = {f"m{i:03d}@acme.io" for i in range(120) if (i < 5 or i % 7 == 0 if spread else i < 25)}
    made = await http.post("/api/v1/lists", headers=ws.headers, json={"name": "Some"})
    list_id = made.json()["id"]
    added = await http.post(
        "/api/v1/leads/lists/add",
        headers=ws.headers,
        json={"listId": list_id, "target": {"ids": [by_email[e]["id"] for e in sorted(members)]}},
    )
    assert added.json() == {"added": len(members)}
    replied = sorted(members)[::2]
    for email in replied:
        lead_id = by_email[email]["id"]
        await http.patch(f"/api/v1/leads/{lead_id}", headers=ws.headers, json={"status": "replied"})

    for sort in ("createdAt", "email", "name", "company"):
        for direction in ("asc", "desc"):
            for extra, kept in (({}, members), ({"status": "replied"}, set(replied))):
                order = await emails(http, ws, sort=sort, dir=direction, **extra)
                expected = [e for e in order if e in kept]
                pages = []
                for page in range(1, 5):
                    got = await listing(
                        http, ws, listId=list_id, sort=sort, dir=direction, page=page, pageSize=10, **extra
                    )
                    assert got["total"] == len(kept), (sort, direction, extra)
                    pages += [lead["email"] for lead in got["leads"]]
                assert pages == expected, (sort, direction, extra)
    # the walk found pages with a window of 100 and 20,000 leads; with 4, every page sorted the members
    assert any(walked) == (window > 4)
