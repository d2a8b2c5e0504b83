"""write_sequence against a local Chat Completions server with scripted, invalid and slow answers: drafts
land as new variants (never overwriting), full steps go to `skipped`, every email runs the content
checklist, unusable answers are retried once and then reported with nothing saved."""

from __future__ import annotations

from typing import Any

import httpx

from tests.billing.conftest import AI_TIMEOUT_S, Served
from tests.billing.servers import FakeAi, Slow
from tests.conftest import MakeWorkspace, WorkspaceHandle

PROFILE = {
    "company": "Acme Analytics",
    "product": "Board-ready SaaS dashboards built from Stripe data in five minutes.",
    "audience": "Founders of SaaS companies between seed and series B.",
    "problem": "Investor updates take days of spreadsheet work.",
    "proof": "Used by 300 SaaS founders\nMRR, churn and cohorts always current",
    "cta": "Open to a 15-minute call next week?",
    "tone": "friendly",
    "avoid": "guarantee",
}

FIRST = {
    "subject": "Investor updates, {{company|your team}}",
    "body": "Hi {{first_name|there}},\n\nInvestor updates take days of spreadsheet work. Acme builds "
    "board-ready dashboards from Stripe data in five minutes; 300 SaaS founders use it.\n\n"
    "Open to a 15-minute call next week?\n\n{{unsubscribe}}",
    "waitDays": 0,
}


def follow_up(n: int) -> dict[str, Any]:
    return {
        "subject": "",
        "body": f"Hi {{{{first_name|there}}}}, a short follow-up ({n}): worth a call?",
        "waitDays": 3,
    }


def sequence_answer(steps: int) -> dict[str, Any]:
    return {"emails": [FIRST, *[follow_up(n) for n in range(2, steps + 1)]][:steps]}


async def campaign_with_profile(api: httpx.AsyncClient, ws: WorkspaceHandle, **profile: Any) -> str:
    saved = await api.put("/api/v1/offer-profile", headers=ws.headers, json={**PROFILE, **profile})
    assert saved.status_code == 200, saved.text
    created = await api.post("/api/v1/campaigns", headers=ws.headers, json={"name": "AI"})
    return str(created.json()["id"])


async def _write(api: httpx.AsyncClient, ws: WorkspaceHandle, campaign: str, **body: Any) -> httpx.Response:
    return await api.post(f"/api/v1/campaigns/{campaign}/write", headers=ws.headers, json=body)


async def _used(api: httpx.AsyncClient, ws: WorkspaceHandle) -> int:
    return int((await api.get("/api/v1/billing", headers=ws.headers)).json()["aiDrafts"]["used"])


async def test_a_sequence_fills_an_empty_campaign_from_the_profile_only(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset(sequence_answer(3))
    answer = await _write(api, ws, campaign, mode="sequence", steps=3)
    assert answer.status_code == 200, answer.text
    got = answer.json()
    steps = got["campaign"]["steps"]
    assert len(steps) == 3 and [len(s["variants"]) for s in steps] == [1, 1, 1]
    assert steps[0]["variants"][0]["subject"] == FIRST["subject"]
    assert "{{unsubscribe}}" in steps[0]["variants"][0]["body"] and "<p>" in steps[0]["variants"][0]["body"]
    assert [c["variantId"] for c in got["created"]] == [s["variants"][0]["id"] for s in steps]
    assert got["skipped"] == [] and got["problems"] == []
    assert got["created"][0]["problems"] == []  # the first email passes the whole checklist
    # the prompt: only the profile's facts and the lead's fields; the profile itself is in it
    system, user = ai_server.requests[0]["messages"]
    assert (
        "Use only facts from the offer profile" in system["content"] and "{{first_name}}" in system["content"]
    )
    assert "Used by 300 SaaS founders" in user["content"] and "exactly 3 emails" in user["content"]
    assert await _used(api, ws) == 1


async def test_a_sequence_adds_variants_never_overwrites_and_skips_full_steps(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    mine = {"subject": "Mine", "body": "My own words.\n\n{{unsubscribe}}"}
    full = [{"subject": f"V{n}", "body": f"Variant {n}"} for n in range(5)]
    seq = {"steps": [{"variants": [mine]}, {"waitDays": 2, "variants": full}]}
    assert (
        await api.put(f"/api/v1/campaigns/{campaign}/sequence", headers=ws.headers, json=seq)
    ).status_code == 200
    ai_server.reset(sequence_answer(3))
    got = (await _write(api, ws, campaign, mode="sequence", steps=3)).json()
    steps = got["campaign"]["steps"]
    assert steps[0]["variants"][0]["subject"] == "Mine" and "My own words." in steps[0]["variants"][0]["body"]
    assert [v["subject"] for v in steps[0]["variants"]] == ["Mine", FIRST["subject"]]
    assert len(steps[1]["variants"]) == 5 and [v["subject"] for v in steps[1]["variants"]] == [
        f"V{n}" for n in range(5)
    ]
    assert len(steps) == 3 and steps[2]["waitDays"] == 3  # a new step at the end
    assert got["skipped"] == ["Email 2: step 2 already has 5 variants"]
    assert [c["step"] for c in got["created"]] == [0, 2] and [c["label"] for c in got["created"]] == [
        "B",
        "A",
    ]


async def test_rewrite_shorter_and_angle_add_a_variant_to_the_same_step(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset(sequence_answer(2))
    first = (await _write(api, ws, campaign, mode="sequence", steps=2)).json()["created"][1]
    for mode, extra, words in (
        ("rewrite", {}, "Rewrite it"),
        ("shorter", {}, "much shorter"),
        ("angle", {"angle": "churn surprises", "persona": "a CFO"}, "churn surprises"),
    ):
        ai_server.reset({"emails": [follow_up(9)]})
        got = await _write(api, ws, campaign, mode=mode, variantId=first["variantId"], **extra)
        assert got.status_code == 200, got.text
        assert [c["step"] for c in got.json()["created"]] == [1]
        assert words in ai_server.requests[0]["messages"][1]["content"]
        assert "short follow-up (2)" in ai_server.requests[0]["messages"][1]["content"]  # the variant's text
    steps = got.json()["campaign"]["steps"]
    assert len(steps[1]["variants"]) == 4 and len(steps[0]["variants"]) == 1


async def test_bad_input_is_refused_before_any_ai_call(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    missing = await _write(api, ws, campaign, mode="rewrite")
    assert missing.status_code == 422 and missing.json()["error"]["code"] == "invalid_input"
    assert (await _write(api, ws, campaign, mode="sequence", steps=11)).status_code == 422
    assert (await _write(api, ws, campaign, mode="poem")).status_code == 422
    unknown = await _write(api, ws, campaign, mode="rewrite", variantId="var_missing")
    assert unknown.status_code == 404
    assert (await _write(api, ws, "cmp_missing", mode="sequence")).status_code == 404
    no_profile = await make_workspace()
    other = (await api.post("/api/v1/campaigns", headers=no_profile.headers, json={"name": "x"})).json()["id"]
    refused = await _write(api, no_profile, other, mode="sequence")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "offer_profile_required"
    no_plan = await make_workspace(plan=None)
    theirs = await campaign_with_profile(api, no_plan)
    assert (await _write(api, no_plan, theirs, mode="sequence")).json()["error"]["code"] == "plan_required"
    assert ai_server.requests == []


async def test_without_any_ai_it_is_409_ai_unavailable(
    no_ai_app: Served, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    async with no_ai_app.client() as api:
        campaign = await campaign_with_profile(api, ws)
        refused = await _write(api, ws, campaign, mode="sequence")
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "ai_unavailable"


async def test_an_invalid_answer_is_retried_once(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset("Sure! Here are your emails: ...", sequence_answer(1))
    got = (await _write(api, ws, campaign, mode="sequence", steps=1)).json()
    assert len(got["created"]) == 1 and got["problems"] == []
    assert len(ai_server.requests) == 2
    retry = ai_server.requests[1]["messages"]
    assert retry[-1]["role"] == "user" and "not valid JSON" in retry[-1]["content"]


async def test_unusable_answers_twice_save_nothing_and_count_nothing(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    before = (await api.get(f"/api/v1/campaigns/{campaign}", headers=ws.headers)).json()["steps"]
    unknown_var = {"emails": [{**FIRST, "body": FIRST["body"] + " {{favourite_colour}}"}]}
    too_long = {"emails": [{**FIRST, "body": "word " * 2000}]}
    for first, second, says in (
        ("not json", "{still not", "not valid JSON"),
        (unknown_var, unknown_var, "{{favourite_colour}} does not exist"),
        (too_long, {"emails": []}, "too long"),
        (Slow(AI_TIMEOUT_S + 0.5, sequence_answer(1)), 503, "no answer"),
    ):
        ai_server.reset(first, second)
        got = await _write(api, ws, campaign, mode="sequence", steps=1)
        assert got.status_code == 200, got.text
        body = got.json()
        assert body["created"] == [] and len(body["problems"]) == 2, body["problems"]
        assert says in body["problems"][0]
        assert body["campaign"]["steps"] == before
    assert await _used(api, ws) == 0


async def test_the_checklist_flags_claims_the_profile_does_not_make(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    claims = {
        "subject": "Guaranteed 37% less churn, act now",
        "body": "Hi {{first_name|there}},\n\nAnalysts at Gartner call Acme the leading tool; we cut churn "
        "37% for 300 founders. See https://acme.test/a and https://acme.test/b. Free trial? Call today?\n\n",
    }
    ai_server.reset({"emails": [claims]})
    [email] = (await _write(api, ws, campaign, mode="sequence", steps=1)).json()["created"]
    problems = "\n".join(email["problems"])
    for expected in (
        "the number 37% is not in the offer profile",
        "the name Gartner is not in the offer profile",
        "the claim 'leading' is not in the offer profile",
        "the claim 'Guaranteed' is not in the offer profile",
        "spam-trigger words",
        "2 links",
        "no {{unsubscribe}}",
        "2 questions",
    ):
        assert expected in problems, (expected, email["problems"])
    assert "300" not in problems and "Acme" not in problems  # the profile states these


async def test_variants_added_to_a_running_campaign_wait_inactive(
    billing_app: Served, api: httpx.AsyncClient, make_workspace: MakeWorkspace, ai_server: FakeAi
) -> None:
    from tests.sending.helpers import update_rows

    ws = await make_workspace()
    campaign = await campaign_with_profile(api, ws)
    ai_server.reset(sequence_answer(1))
    first = (await _write(api, ws, campaign, mode="sequence", steps=1)).json()["created"][0]
    await update_rows(ws, "campaigns", {"status": "running"}, id=campaign)
    ai_server.reset({"emails": [FIRST]}, sequence_answer(2))
    rewritten = (await _write(api, ws, campaign, mode="rewrite", variantId=first["variantId"])).json()
    assert rewritten["created"][0]["active"] is False
    added = (await _write(api, ws, campaign, mode="sequence", steps=2)).json()
    assert added["skipped"] == [
        "Email 2: the campaign is running; new steps are added only while it is a draft or paused"
    ]
    assert [v["active"] for v in added["campaign"]["steps"][0]["variants"]] == [True, False, False]
