"""The preview over real HTTP: exactly what a lead will get, by the same code the sender uses."""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from outreach_core.campaigns.compose import compose
from outreach_core.campaigns.schemas import Step
from outreach_core.mail.links import read_unsubscribe_token
from outreach_core.mail.message import reply_subject
from outreach_core.mail.rendering import Sender, Unsubscribe
from tests.campaigns.helpers import add_lead, add_mailbox, call, new_campaign, ok
from tests.conftest import MakeWorkspace


async def test_preview_renders_each_email_for_the_first_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    cid = await new_campaign(http, ws)
    box = await add_mailbox(ws, "sam@seller.test", display_name="Sam Seller", signature="Sam\nSeller Inc")
    await ok(http, ws, "PATCH", f"/campaigns/{cid}", {"mailboxIds": [box]})
    sequence = {
        "steps": [
            {
                "variants": [
                    {
                        "subject": "Idea for {{company|your team}}",
                        "body": "Hi {{first_name|there}},\n\n"
                        "A note for {{company}} in {{city|your city}}.\n\n{{unsubscribe}}",
                    }
                ]
            },
            {"waitDays": 2, "variants": [{"subject": "ignored in a thread", "body": "Bump, {{firstName}}?"}]},
            {
                "waitDays": 4,
                "sameThread": False,
                "variants": [{"subject": "New thread", "body": "Last one."}],
            },
        ]
    }
    await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", sequence)
    ada = await add_lead(ws, "ada@acme.test", first_name="Ada", company="A&B Co", custom={"city": "Paris"})
    bob = await add_lead(ws, "bob@acme.test")
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [ada]})
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": [bob]})

    preview = await ok(http, ws, "GET", f"/campaigns/{cid}/preview")
    assert preview["lead"]["id"] == ada and preview["lead"]["email"] == "ada@acme.test"
    assert preview["sender"] == {"mailboxId": box, "email": "sam@seller.test", "name": "Sam Seller"}
    assert [p["id"] for p in preview["picker"]] == [ada, bob] and preview["pickerTotal"] == 2
    link = preview["unsubscribe"]
    assert link.startswith(ws.runtime.settings.public_url + "/u/")
    token = urlsplit(link).path.removeprefix("/u/")
    payload = read_unsubscribe_token(ws.runtime.settings, token, ws.runtime.ports.clock.now())
    assert payload == {"w": ws.workspace_id, "l": ada, "c": cid}

    first, second, third = preview["emails"]
    assert first["subject"] == "Idea for A&B Co"
    assert first["body"] == (
        f'<p>Hi Ada,</p><p>A note for A&amp;B Co in Paris.</p><p><a href="{link}">unsubscribe</a></p>'
        "<br><div>Sam<br>Seller Inc</div>"
    )
    assert (
        first["text"] == f"Hi Ada,\n\nA note for A&B Co in Paris.\n\nunsubscribe: {link}\n\nSam\nSeller Inc"
    )
    assert first["unknownVariables"] == [] and first["variantLabel"] == "A" and first["position"] == 0
    assert second["subject"] == "Re: Idea for A&B Co" and second["sameThread"] is True
    assert second["body"].startswith("<p>Bump, Ada?</p>")
    assert third["subject"] == "New thread" and third["waitDays"] == 4

    bob_view = await ok(http, ws, "GET", f"/campaigns/{cid}/preview", params={"leadId": bob})
    assert bob_view["lead"]["id"] == bob
    assert bob_view["emails"][0]["subject"] == "Idea for your team"
    assert bob_view["emails"][0]["body"].startswith("<p>Hi there,</p><p>A note for  in your city.</p>")
    assert (await call(http, ws, "GET", f"/campaigns/{cid}/preview", params={"leadId": "lead_nope"}))[
        0
    ] == 404


async def test_preview_is_what_the_sender_composes_and_variants_follow_weights(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    await ok(http, ws, "PATCH", "/settings/sending", {"unsubscribeMode": "reply_text"})
    cid = await new_campaign(http, ws)
    sequence = {
        "steps": [
            {
                "variants": [
                    {
                        "subject": "{Hi|Hello|Hey} {{first_name}}",
                        "body": "{Quick|Short} {question|note}. {{unsubscribe}}",
                        "weight": 3,
                    },
                    {"subject": "B {{first_name}}", "body": "Variant B {{unknown_thing}}", "weight": 1},
                    {"subject": "C", "body": "never sent", "active": False},
                ]
            }
        ]
    }
    campaign = await ok(http, ws, "PUT", f"/campaigns/{cid}/sequence", sequence)
    steps = [Step.model_validate(s) for s in campaign["steps"]]
    lead_ids = [await add_lead(ws, f"w{i}@weights.test", first_name=f"P{i}") for i in range(40)]
    await ok(http, ws, "POST", f"/campaigns/{cid}/leads", {"leadIds": lead_ids})

    seen_labels = []
    for lead_id in lead_ids:
        view = await ok(http, ws, "GET", f"/campaigns/{cid}/preview", params={"leadId": lead_id})
        assert view["unsubscribe"] == 'Reply "stop" to unsubscribe.'
        email = view["emails"][0]
        n = lead_ids.index(lead_id)
        composed = compose(
            steps,
            0,
            lead_id=lead_id,
            lead={"email": f"w{n}@weights.test", "first_name": f"P{n}", "custom": {}},
            sender=None,
            unsubscribe=Unsubscribe(mode="reply_text", url=None),
        )
        assert composed is not None
        assert (email["variantId"], email["subject"], email["body"], email["text"]) == (
            composed.variant.id,
            composed.subject,
            composed.rendered.html,
            composed.rendered.text,
        )
        again = await ok(http, ws, "GET", f"/campaigns/{cid}/preview", params={"leadId": lead_id})
        assert again["emails"] == view["emails"]
        seen_labels.append(email["variantLabel"])
        if email["variantLabel"] == "B":
            assert email["unknownVariables"] == ["unknown_thing"] and "{{" not in email["body"]
        else:
            assert "{" not in email["subject"] and "{" not in email["body"]
    assert "C" not in seen_labels
    assert seen_labels.count("A") > seen_labels.count("B") > 0
    assert view["sender"] is None


def test_reply_subjects_do_not_stack() -> None:
    assert reply_subject("Hello") == "Re: Hello"
    assert reply_subject("Re: Hello") == "Re: Hello"
    assert reply_subject("RE: Hello") == "RE: Hello"


def test_compose_picks_the_same_variant_for_a_lead_every_time() -> None:
    step = Step.model_validate(
        {
            "id": "stp_1",
            "position": 0,
            "waitDays": 0,
            "sameThread": True,
            "variants": [
                {
                    "id": f"var_{i}",
                    "label": "ABC"[i],
                    "subject": "s",
                    "body": "b",
                    "weight": 1,
                    "active": True,
                }
                for i in range(3)
            ],
        }
    )
    sender = Sender(name=None, email="s@x.test", signature=None)
    unsubscribe = Unsubscribe(mode="link", url="https://x.test/u/t")
    picks = {
        lead: {
            compose([step], 0, lead_id=lead, lead={}, sender=sender, unsubscribe=unsubscribe).variant.id  # type: ignore[union-attr]
            for _ in range(3)
        }
        for lead in (f"lead_{i}" for i in range(60))
    }
    assert all(len(p) == 1 for p in picks.values())
    assert {next(iter(p)) for p in picks.values()} == {"var_0", "var_1", "var_2"}
