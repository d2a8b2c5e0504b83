"""Onboarding as a new user goes through it: a workspace of their own, the onboarding answers, and the
offer drafted from their website (a local website server: a good page, a redirect to a private address, a
5 MB page, not HTML, slow, noindex) with AI or without it, and the offer profile itself."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import select

from outreach_app.adapters.dns import DnspythonResolver
from outreach_app.adapters.web import WebPageFetcher
from outreach_app.outgoing import AddressGuard
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.ports import WebFetchError
from tests.billing.conftest import AI_TIMEOUT_S, Served
from tests.billing.servers import FakeAi, Slow, Website
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.dns_server import DnsServer

DRAFT = {
    "company": "Acme Analytics",
    "product": "Board-ready SaaS dashboards from Stripe data.",
    "audience": "SaaS founders",
    "problem": "Investor updates take days.",
    "proof": "Used by 300 SaaS founders",
    "cta": "Open to a 15-minute call?",
    "tone": "friendly",
    "avoid": "",
}


async def _profile(api: httpx.AsyncClient, ws: WorkspaceHandle) -> dict[str, Any]:
    return (await api.get("/api/v1/offer-profile", headers=ws.headers)).json()  # type: ignore[no-any-return]


async def test_create_workspace_makes_the_caller_owner_with_a_key_of_it(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace(plan=None)
    slug = f"{ws.slug}-new"
    body = {
        "name": "Acme Outbound",
        "slug": slug,
        "audience": "clients",
        "sendingDomain": "https://www.Acme.io/x",
    }
    created = await api.post("/api/v1/onboarding/createWorkspace", headers=ws.headers, json=body)
    assert created.status_code == 200, created.text
    got = created.json()
    assert got["slug"] == slug and got["apiKey"].startswith("osk_")
    me = (await api.get("/api/v1/me", headers={"Authorization": f"Bearer {got['apiKey']}"})).json()
    assert me["workspace"] == {"id": got["workspaceId"], "name": "Acme Outbound", "slug": slug}
    assert me["role"] == "owner" and me["user"]["id"] == ws.user_id and me["billing"]["plan"] is None
    # the calling key stays in its own workspace
    assert (await api.get("/api/v1/me", headers=ws.headers)).json()["workspace"]["id"] == ws.workspace_id
    async with ws.runtime.engine.connect() as conn:
        row = (
            await conn.execute(
                select(workspaces.c.audience, workspaces.c.sending_domain).where(
                    workspaces.c.id == got["workspaceId"]
                )
            )
        ).one()
    assert (row.audience, row.sending_domain) == ("clients", "www.acme.io")
    again = await api.post("/api/v1/onboarding/createWorkspace", headers=ws.headers, json=body)
    assert again.status_code == 409 and again.json()["error"]["code"] == "conflict"
    for bad, field in (
        ({**body, "slug": "Not A Slug"}, "slug"),
        ({**body, "slug": f"{slug}-2", "name": ""}, "name"),
        ({**body, "slug": f"{slug}-3", "audience": "everyone"}, "audience"),
        ({**body, "slug": f"{slug}-4", "sendingDomain": "not a domain"}, "sendingDomain"),
    ):
        refused = await api.post("/api/v1/onboarding/createWorkspace", headers=ws.headers, json=bad)
        assert refused.status_code == 422, bad
        assert [f["path"] for f in refused.json()["error"]["details"]["fields"]] == [field]


async def test_save_onboarding_keeps_the_answers_owners_and_admins_only(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    saved = await api.post(
        "/api/v1/onboarding/save",
        headers=ws.headers,
        json={"sendingDomain": "me@Mail.Acme.io", "expectedVolume": 12000},
    )
    assert saved.status_code == 200 and saved.json() == {"ok": True}
    kept = await api.post("/api/v1/onboarding/save", headers=ws.headers, json={"expectedVolume": 0})
    assert kept.status_code == 200
    async with ws.runtime.engine.connect() as conn:
        row = (
            await conn.execute(
                select(workspaces.c.sending_domain, workspaces.c.expected_volume).where(
                    workspaces.c.id == ws.workspace_id
                )
            )
        ).one()
    assert (row.sending_domain, row.expected_volume) == ("mail.acme.io", 0)
    # the answer's domain is a sending domain, graded before any mailbox is connected (issue 27)
    domains = (await api.get("/api/v1/domains", headers=ws.headers)).json()
    assert [d["domain"] for d in domains] == ["mail.acme.io"], domains
    local = await api.post(
        "/api/v1/onboarding/save",
        headers=ws.headers,
        json={"sendingDomain": "acme.test", "expectedVolume": 1},
    )
    assert local.status_code == 200  # kept with the answers; no public suffix, so no sending domain
    domains = (await api.get("/api/v1/domains", headers=ws.headers)).json()
    assert [d["domain"] for d in domains] == ["mail.acme.io"], domains
    for bad in (
        {"expectedVolume": -1},
        {"expectedVolume": 100_000_001},
        {"sendingDomain": "x" * 301, "expectedVolume": 1},
    ):
        assert (await api.post("/api/v1/onboarding/save", headers=ws.headers, json=bad)).status_code == 422
    member = await ws.add_member("member")
    refused = await api.post("/api/v1/onboarding/save", headers=member.headers, json={"expectedVolume": 5})
    assert refused.status_code == 403


async def test_draft_offer_with_ai_saves_the_first_profile(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi, website: Website
) -> None:
    ws = await make_workspace()
    assert (await _profile(api, ws))["saved"] is False
    ai_server.reset(DRAFT)
    got = await api.post(
        "/api/v1/onboarding/draftOffer", headers=ws.headers, json={"url": f"{website.url}/to-good"}
    )
    assert got.status_code == 200, got.text
    draft = got.json()
    assert draft["drafted"] == "ai" and draft["saved"] is True and draft["profile"] == DRAFT
    assert draft["url"] == f"{website.url}/good"  # after the redirect
    page = ai_server.requests[0]["messages"][1]["content"]
    assert "Used by 300 SaaS founders" in page and "Board-ready SaaS metrics" in page
    assert "Home" not in page.split("Text of the page:")[1]  # navigation is not the page's text
    stored = await _profile(api, ws)
    assert stored["saved"] is True and stored["sourceUrl"] == f"{website.url}/good"
    assert {k: stored[k] for k in DRAFT} == DRAFT
    billing = (await api.get("/api/v1/billing", headers=ws.headers)).json()
    assert billing["aiDrafts"]["used"] == 1
    # a second draft never replaces a saved profile
    ai_server.reset({**DRAFT, "company": "Other"})
    second = (
        await api.post(
            "/api/v1/onboarding/draftOffer", headers=ws.headers, json={"url": f"{website.url}/good"}
        )
    ).json()
    assert second["saved"] is False and second["profile"]["company"] == "Other"
    assert (await _profile(api, ws))["company"] == "Acme Analytics"


async def test_without_a_plan_or_ai_the_draft_comes_from_the_page_and_says_so(
    api: httpx.AsyncClient,
    no_ai_app: Served,
    make_workspace: MakeWorkspace,
    ai_server: FakeAi,
    website: Website,
) -> None:
    no_plan = await make_workspace(plan=None)
    got = (
        await api.post(
            "/api/v1/onboarding/draftOffer", headers=no_plan.headers, json={"url": f"{website.url}/good"}
        )
    ).json()
    assert got["drafted"] == "page" and "AI drafts come with a plan" in got["message"]
    assert got["profile"]["company"] == "Acme Analytics"
    assert got["profile"]["product"].startswith(
        "Acme turns your Stripe data into board-ready SaaS dashboards"
    )
    assert got["profile"]["proof"] == "" and got["saved"] is True
    assert ai_server.requests == []
    with_plan = await make_workspace()
    async with no_ai_app.client() as other:
        body = {"url": f"{website.url}/good"}
        got = (await other.post("/api/v1/onboarding/draftOffer", headers=with_plan.headers, json=body)).json()
    assert got["drafted"] == "page" and "no AI endpoint" in got["message"]
    assert (await api.get("/api/v1/billing", headers=with_plan.headers)).json()["aiDrafts"]["used"] == 0


async def test_ai_answers_that_cannot_be_used_fall_back_to_the_page(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi, website: Website
) -> None:
    ws = await make_workspace()
    ai_server.reset({**DRAFT, "company": "x" * 121}, Slow(AI_TIMEOUT_S + 0.5, DRAFT))
    got = (
        await api.post(
            "/api/v1/onboarding/draftOffer", headers=ws.headers, json={"url": f"{website.url}/good"}
        )
    ).json()
    assert got["drafted"] == "page" and len(got["problems"]) == 2
    assert "company is 121 characters long; at most 120" in got["problems"][0]
    assert "no answer" in got["problems"][1]
    assert (await api.get("/api/v1/billing", headers=ws.headers)).json()["aiDrafts"]["used"] == 0


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/image", "not an HTML page (image/png)"),
        ("/big", "larger than"),
        ("/big-declared", "larger than"),
        ("/slow", "did not answer within 2 seconds"),
        ("/noindex", "noindex"),
        ("/script-only", "no readable text"),
        ("/missing", "HTTP 404"),
    ],
)
async def test_websites_that_cannot_be_used_say_why_and_save_nothing(
    path: str,
    says: str,
    api: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    ai_server: FakeAi,
    website: Website,
) -> None:
    ws = await make_workspace()
    ai_server.reset(DRAFT)
    got = await api.post(
        "/api/v1/onboarding/draftOffer", headers=ws.headers, json={"url": f"{website.url}{path}"}
    )
    assert got.status_code == 422, got.text
    error = got.json()["error"]
    assert error["code"] == "invalid_input" and error["details"]["fields"][0]["path"] == "url"
    assert says in error["message"], error["message"]
    assert ai_server.requests == [] and (await _profile(api, ws))["saved"] is False
    assert (await api.get("/api/v1/billing", headers=ws.headers)).json()["aiDrafts"]["used"] == 0


async def test_private_addresses_are_refused_by_the_session_server(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, website: Website
) -> None:
    """The session app keeps OUTREACH_ALLOW_PRIVATE_URLS off: loopback and private addresses are refused
    before any connection."""
    ws = await make_workspace()
    hits = len(website.hits)
    for url in (f"{website.url}/good", "http://10.0.0.1/", "localhost/x", "ftp://example.com/"):
        got = await http.post("/api/v1/onboarding/draftOffer", headers=ws.headers, json={"url": url})
        assert got.status_code == 422 and got.json()["error"]["details"]["fields"][0]["path"] == "url", url
        assert got.json()["error"]["message"].count("OUTREACH_ALLOW_PRIVATE_URLS") <= 1, url  # said once
    assert len(website.hits) == hits


class _SiteIsPublic(AddressGuard):
    """The outgoing guard as it is, except that the test website's own address counts as a public host (the
    network here has loopback only): every other address is judged by the real rules."""

    async def addresses(self, host: str, port: int) -> list[str]:
        if host == "site.example.com":
            return ["127.0.0.1"]
        return await super().addresses(host, port)

    def check_connect(self, address: str) -> None:
        if address != "127.0.0.1":  # the site's own address, reached only through its name above
            super().check_connect(address)


async def test_a_redirect_to_a_private_address_is_never_followed(
    site_dns: DnsServer, website: Website
) -> None:
    fetcher = WebPageFetcher(
        timeout_s=2, max_bytes=2 * 1024 * 1024, dns=DnspythonResolver(site_dns.nameservers, timeout_s=1.0)
    )
    fetcher._guard = _SiteIsPublic(False, DnspythonResolver(site_dns.nameservers, timeout_s=1.0))
    try:
        page = await fetcher.fetch_page(f"http://site.example.com:{website.port}/to-good")
        assert page.url.endswith("/good") and "Board-ready" in page.html
        hits = len(website.hits)
        with pytest.raises(WebFetchError, match=r"127\.0\.0\.2 is a loopback address") as refused:
            await fetcher.fetch_page(f"http://site.example.com:{website.port}/to-private")
        assert str(refused.value).count("OUTREACH_ALLOW_PRIVATE_URLS") == 1  # the hint is said once
        with pytest.raises(
            WebFetchError, match=r"inside\.site\.example\.com resolves to 127\.0\.0\.2, a loopback address"
        ):
            await fetcher.fetch_page(f"http://site.example.com:{website.port}/to-named")
        assert website.hits[hits:] == ["/to-private", "/to-named"]  # the redirects' targets never reached
    finally:
        await fetcher.aclose()


async def test_offer_profile_limits_defaults_and_whole_replacement(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    empty = await _profile(api, ws)
    blank = dict.fromkeys(("company", "product", "audience", "problem", "proof", "cta", "avoid"), "")
    assert empty == {**blank, "tone": "plain", "saved": False, "sourceUrl": None, "updatedAt": None}
    full = {"company": "c" * 120, "product": "p" * 1000, "audience": "a" * 1000, "problem": "q" * 1000,
            "proof": "line\n" * 400, "cta": "t" * 300, "tone": "formal", "avoid": "v" * 1000}  # fmt: skip
    saved = await api.put("/api/v1/offer-profile", headers=ws.headers, json=full)
    assert saved.status_code == 200 and saved.json()["saved"] is True and saved.json()["tone"] == "formal"
    for field, limit in (("company", 120), ("product", 1000), ("proof", 2000), ("cta", 300), ("avoid", 1000)):
        refused = await api.put("/api/v1/offer-profile", headers=ws.headers, json={field: "x" * (limit + 1)})
        assert refused.status_code == 422 and refused.json()["error"]["details"]["fields"][0]["path"] == field
    assert (
        await api.put("/api/v1/offer-profile", headers=ws.headers, json={"tone": "shouty"})
    ).status_code == 422
    assert (
        await api.put("/api/v1/offer-profile", headers=ws.headers, json={"company": "a\nb"})
    ).status_code == 422
    assert (await _profile(api, ws))["company"] == "c" * 120  # refusals changed nothing
    replaced = (await api.put("/api/v1/offer-profile", headers=ws.headers, json={"company": "Acme"})).json()
    assert replaced["company"] == "Acme" and replaced["product"] == "" and replaced["tone"] == "plain"
    member = await ws.add_member("member")
    assert (
        await api.put("/api/v1/offer-profile", headers=member.headers, json={"company": "M"})
    ).status_code == 200
