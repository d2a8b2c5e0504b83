"""Every campaign tool through MCP with another workspace's ids: not found or nothing selected, and the other
workspace's campaign unchanged (the REST side is in test_campaigns_api.py)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.campaigns.helpers import add_lead, add_mailbox, new_campaign, ok
from tests.conftest import MakeWorkspace
from tests.doors import call_mcp
from tests.lists.helpers import new_list


async def test_every_campaign_tool_keeps_workspaces_apart(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_campaign = await new_campaign(http, theirs)
    their_lead = await add_lead(theirs, "lead@them.test")
    their_box = await add_mailbox(theirs, "box@them.test")
    their_list = await new_list(http, theirs, "Theirs")
    await ok(http, theirs, "POST", f"/campaigns/{their_campaign}/leads", {"leadIds": [their_lead]})
    snapshot = await ok(http, theirs, "GET", f"/campaigns/{their_campaign}")
    step = snapshot["steps"][0]
    variant = step["variants"][0]["id"]
    cl = (await ok(http, theirs, "GET", f"/campaigns/{their_campaign}/leads"))["leads"][0]["id"]
    mine_campaign = await new_campaign(http, mine)

    c = {"id": their_campaign}
    not_found = [
        ("get_campaign", c),
        ("update_campaign", {**c, "name": "x"}),
        ("duplicate_campaign", c),
        ("delete_campaign", {**c, "confirm": True}),
        ("add_step", c),
        ("update_step", {**c, "stepId": step["id"], "waitDays": 1}),
        ("delete_step", {**c, "stepId": step["id"]}),
        ("move_step", {**c, "stepId": step["id"], "to": 0}),
        ("add_variant", {**c, "stepId": step["id"]}),
        ("update_variant", {**c, "variantId": variant, "subject": "x"}),
        ("delete_variant", {**c, "variantId": variant}),
        ("set_sequence", {**c, "steps": [{"variants": [{"subject": "a", "body": "b"}]}]}),
        ("list_campaign_leads", c),
        ("add_leads_to_campaign", {**c, "allLeads": True}),
        ("remove_leads_from_campaign", {**c, "ids": [cl], "confirm": True}),
        ("list_campaign_lead_sends", {**c, "campaignLeadId": cl}),
        ("preview_campaign", c),
        ("get_launch_checklist", c),
        ("launch_campaign", {**c, "confirm": True}),
        ("pause_campaign", c),
        # my campaign, their things
        ("update_campaign", {"id": mine_campaign, "mailboxIds": [their_box]}),
        ("update_step", {"id": mine_campaign, "stepId": step["id"], "waitDays": 1}),
        ("update_variant", {"id": mine_campaign, "variantId": variant, "subject": "x"}),
        ("add_leads_to_campaign", {"id": mine_campaign, "listIds": [their_list]}),
        ("preview_campaign", {"id": mine_campaign, "leadId": their_lead}),
        ("list_campaign_lead_sends", {"id": mine_campaign, "campaignLeadId": cl}),
    ]
    async with mcp_session(mine.api_key) as client:
        for tool, args in not_found:
            is_error, body = await call_mcp(client, tool, args)
            assert is_error and body["error"]["code"] == "not_found", (tool, args, body)
        is_error, body = await call_mcp(
            client, "add_leads_to_campaign", {"id": mine_campaign, "leadIds": [their_lead]}
        )
        assert not is_error and body["matched"] == 0 and body["added"] == 0
        is_error, body = await call_mcp(
            client, "remove_leads_from_campaign", {"id": mine_campaign, "ids": [cl], "confirm": True}
        )
        assert not is_error and body == {"removed": 0}
        is_error, body = await call_mcp(client, "list_campaigns", {})
        assert not is_error and [x["id"] for x in body["campaigns"]] == [mine_campaign]
    assert await ok(http, theirs, "GET", f"/campaigns/{their_campaign}") == snapshot
