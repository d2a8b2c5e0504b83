"""REST/MCP parity cases of campaigns: the campaign, its sequence, its leads, preview and launch."""

from __future__ import annotations

import itertools
from typing import Any

import httpx

from tests.campaigns.helpers import add_lead, add_mailbox, write_send
from tests.conftest import WorkspaceHandle
from tests.parity.common import Foreign, Prepare, new_list, nothing_named

API = "/api/v1"
_unique = itertools.count()
Args = list[dict[str, Any]]


async def _post(http: httpx.AsyncClient, ws: WorkspaceHandle, path: str, body: Any = None) -> Any:
    response = await http.post(API + path, headers=ws.headers, json=body)
    assert response.status_code == 200, response.text
    return response.json()


async def parity_campaign(http: httpx.AsyncClient, ws: WorkspaceHandle, *, leads: int = 0) -> dict[str, Any]:
    cid = (await _post(http, ws, "/campaigns", {"name": "Parity"}))["id"]
    box = await _shared_mailbox(ws)
    await http.patch(f"{API}/campaigns/{cid}", headers=ws.headers, json={"mailboxIds": [box]})
    sequence = {
        "steps": [
            {"variants": [{"subject": "Hi {{first_name|there}}", "body": "A note. {{unsubscribe}}"}]},
            {"waitDays": 2, "variants": [{"subject": "", "body": "Bump"}]},
        ]
    }
    response = await http.put(f"{API}/campaigns/{cid}/sequence", headers=ws.headers, json=sequence)
    ids = (await _shared_leads(ws, 3))[:leads]
    if ids:
        await _post(http, ws, f"/campaigns/{cid}/leads", {"leadIds": ids})
    return response.json()  # type: ignore[no-any-return]


_LEADS: dict[str, list[str]] = {}
_MAILBOXES: dict[str, str] = {}


async def _shared_mailbox(ws: WorkspaceHandle) -> str:
    if ws.workspace_id not in _MAILBOXES:
        _MAILBOXES[ws.workspace_id] = await add_mailbox(ws, "box@parity-campaign.test", display_name="Parity")
    return _MAILBOXES[ws.workspace_id]


async def _shared_leads(ws: WorkspaceHandle, count: int) -> list[str]:
    """The same leads for the REST and the MCP call, so their listings compare equal."""
    if ws.workspace_id not in _LEADS:
        _LEADS[ws.workspace_id] = [
            await add_lead(ws, f"lead{i}@parity-campaign.test", first_name="Ada") for i in range(count)
        ]
    return _LEADS[ws.workspace_id]


async def campaign_lead(http: httpx.AsyncClient, ws: WorkspaceHandle, cid: str) -> str:
    page = (await http.get(f"{API}/campaigns/{cid}/leads", headers=ws.headers)).json()
    return str(page["leads"][0]["id"])


async def list_campaigns_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await parity_campaign(http, ws, leads=1)
    return [{}, {"status": ["draft"]}, {"status": ["nope"]}]


async def get_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": (await parity_campaign(http, ws, leads=2))["id"]}, {"id": "cmp_missing"}]


async def create_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"name": "Parity"}, {}, {"name": ""}]


async def update_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws))["id"]
    return [
        {"id": cid, "name": "Renamed", "windowStart": 480, "days": 127, "timezoneFallback": "Europe/Berlin"},
        {"id": cid, "windowStart": 1200},
        {"id": cid, "mailboxIds": ["mbx_missing"]},
        {"id": "cmp_missing", "name": "x"},
    ]


async def duplicate_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": (await parity_campaign(http, ws))["id"]}, {"id": "cmp_missing"}]


async def delete_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"id": (await parity_campaign(http, ws))["id"], "confirm": True},
        {"id": "cmp_missing", "confirm": True},
    ]


async def add_step_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws))["id"]
    return [{"id": cid, "waitDays": 5, "sameThread": False}, {"id": cid, "waitDays": -1}]


async def update_step_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    step = campaign["steps"][1]["id"]
    return [
        {"id": campaign["id"], "stepId": step, "waitDays": 9},
        {"id": campaign["id"], "stepId": step, "waitDays": None, "sameThread": False},  # null refused
        {"id": campaign["id"], "stepId": "stp_missing", "waitDays": 1},
    ]


async def delete_step_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    step = campaign["steps"][1]["id"]
    return [
        {"id": campaign["id"], "stepId": step},
        {"id": campaign["id"], "stepId": campaign["steps"][0]["id"]},
    ]


async def move_step_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    step = campaign["steps"][1]["id"]
    return [{"id": campaign["id"], "stepId": step, "to": 0}, {"id": campaign["id"], "stepId": step, "to": 5}]


async def add_variant_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    step = campaign["steps"][0]
    return [
        {"id": campaign["id"], "stepId": step["id"], "copyFrom": step["variants"][0]["id"]},
        {"id": campaign["id"], "stepId": step["id"]},
        {"id": campaign["id"], "stepId": step["id"], "copyFrom": "var_missing"},
    ]


async def update_variant_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    variant = campaign["steps"][0]["variants"][0]["id"]
    return [
        {
            "id": campaign["id"],
            "variantId": variant,
            "subject": "New",
            "body": "<b>Bold</b><script>x</script>",
        },
        {"id": campaign["id"], "variantId": variant, "active": False},
        {"id": campaign["id"], "variantId": variant, "weight": 0},
        {"id": campaign["id"], "variantId": variant, "active": None, "weight": None},  # null refused
    ]


async def delete_variant_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    campaign = await parity_campaign(http, ws)
    step = campaign["steps"][0]
    added = await _post(http, ws, f"/campaigns/{campaign['id']}/steps/{step['id']}/variants", {})
    extra = added["steps"][0]["variants"][1]["id"]
    return [
        {"id": campaign["id"], "variantId": extra},
        {"id": campaign["id"], "variantId": step["variants"][0]["id"]},
    ]


async def set_sequence_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws))["id"]
    return [
        {"id": cid, "steps": [{"variants": [{"subject": "One", "body": "Hello\n\nthere"}]}]},
        {"id": cid, "steps": []},
    ]


async def list_campaign_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws, leads=3))["id"]
    return [
        {"id": cid},
        {"id": cid, "status": ["not_contacted"], "search": "parity", "pageSize": 10},
        {"id": cid, "page": 0},
    ]


async def add_leads_to_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws))["id"]
    n = next(_unique)
    lead = await add_lead(ws, f"add{n}@parity-campaign.test")
    return [{"id": cid, "leadIds": [lead]}, {"id": cid, "allLeads": True}, {"id": cid}]


async def remove_leads_from_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws, leads=2))["id"]
    cl = await campaign_lead(http, ws, cid)
    return [{"id": cid, "ids": [cl], "confirm": True}, {"id": cid, "ids": [], "confirm": True}]


async def list_campaign_lead_sends_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws, leads=1))["id"]
    cl = await campaign_lead(http, ws, cid)
    await write_send(ws, cl)
    return [{"id": cid, "campaignLeadId": cl}, {"id": cid, "campaignLeadId": "cl_missing"}]


async def preview_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    # the unsubscribe link names the campaign: the reply line is the same for both calls
    await http.patch(f"{API}/settings/sending", headers=ws.headers, json={"unsubscribeMode": "reply_text"})
    cid = (await parity_campaign(http, ws, leads=2))["id"]
    return [{"id": cid}, {"id": cid, "leadId": "lead_missing"}]


async def get_launch_checklist_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": (await parity_campaign(http, ws, leads=1))["id"]}, {"id": "cmp_missing"}]


async def launch_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    ready = (await parity_campaign(http, ws, leads=1))["id"]
    empty = (await parity_campaign(http, ws))["id"]
    return [{"id": ready, "confirm": True}, {"id": empty, "confirm": True}, {"id": ready, "confirm": True}]


async def pause_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    cid = (await parity_campaign(http, ws, leads=1))["id"]
    await _post(http, ws, f"/campaigns/{cid}/launch")
    return [{"id": cid}, {"id": cid}, {"id": "cmp_missing"}]


CASES: dict[str, Prepare] = {
    "list_campaigns": list_campaigns_args,
    "get_campaign": get_campaign_args,
    "create_campaign": create_campaign_args,
    "update_campaign": update_campaign_args,
    "duplicate_campaign": duplicate_campaign_args,
    "delete_campaign": delete_campaign_args,
    "add_step": add_step_args,
    "update_step": update_step_args,
    "delete_step": delete_step_args,
    "move_step": move_step_args,
    "add_variant": add_variant_args,
    "update_variant": update_variant_args,
    "delete_variant": delete_variant_args,
    "set_sequence": set_sequence_args,
    "list_campaign_leads": list_campaign_leads_args,
    "add_leads_to_campaign": add_leads_to_campaign_args,
    "remove_leads_from_campaign": remove_leads_from_campaign_args,
    "list_campaign_lead_sends": list_campaign_lead_sends_args,
    "preview_campaign": preview_campaign_args,
    "get_launch_checklist": get_launch_checklist_args,
    "launch_campaign": launch_campaign_args,
    "pause_campaign": pause_campaign_args,
}


async def _theirs(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> dict[str, Any]:
    """Their campaign with its sequence and one lead: ids of the campaign, a step, a variant, the campaign
    lead and the lead."""
    campaign = await parity_campaign(http, theirs, leads=1)
    page = (await http.get(f"{API}/campaigns/{campaign['id']}/leads", headers=theirs.headers)).json()
    return {
        "id": campaign["id"],
        "step": campaign["steps"][0]["id"],
        "variant": campaign["steps"][0]["variants"][0]["id"],
        "campaign_lead": page["leads"][0]["id"],
        "lead": page["leads"][0]["leadId"],
    }


def _foreign(build: Any) -> Foreign:
    """A foreign case from `build(theirs_ids, my_campaign_id)`: the argument sets naming their things."""

    async def case(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
        return build(await _theirs(http, theirs), (await parity_campaign(http, mine))["id"])  # type: ignore[no-any-return]

    return case


async def their_campaign_listed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    await _theirs(http, theirs)
    return [{}]


async def their_campaign_updated(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their campaign; my campaign sending from their mailbox."""
    them = await _theirs(http, theirs)
    box = await _shared_mailbox(theirs)
    mine_id = (await parity_campaign(http, mine))["id"]
    return [{"id": them["id"], "name": "Hijacked"}, {"id": mine_id, "mailboxIds": [box]}]


async def their_leads_added(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their campaign; their list and lead into my campaign."""
    them = await _theirs(http, theirs)
    mine_id = (await parity_campaign(http, mine))["id"]
    return [
        {"id": them["id"], "allLeads": True},
        {"id": mine_id, "listIds": [await new_list(http, theirs)]},
        {"id": mine_id, "leadIds": [them["lead"]]},
    ]


async def their_sequence(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their campaign's sequence; my sequence keeping their step's and variant's ids."""
    them = await _theirs(http, theirs)
    mine_id = (await parity_campaign(http, mine))["id"]
    variant = {"subject": "a", "body": "b"}
    return [
        {"id": them["id"], "steps": [{"variants": [variant]}]},
        {"id": mine_id, "steps": [{"id": them["step"], "variants": [{**variant, "id": them["variant"]}]}]},
    ]


FOREIGN: dict[str, Foreign] = {
    "list_campaigns": their_campaign_listed,
    "get_campaign": _foreign(lambda t, m: [{"id": t["id"]}]),
    "create_campaign": nothing_named,
    "update_campaign": their_campaign_updated,
    "duplicate_campaign": _foreign(lambda t, m: [{"id": t["id"]}]),
    "delete_campaign": _foreign(lambda t, m: [{"id": t["id"]}]),
    "add_step": _foreign(lambda t, m: [{"id": t["id"], "waitDays": 2}]),
    "update_step": _foreign(
        lambda t, m: [
            {"id": t["id"], "stepId": t["step"], "waitDays": 9},
            {"id": m, "stepId": t["step"], "waitDays": 9},
        ]
    ),
    "delete_step": _foreign(
        lambda t, m: [{"id": t["id"], "stepId": t["step"]}, {"id": m, "stepId": t["step"]}]
    ),
    "move_step": _foreign(
        lambda t, m: [{"id": t["id"], "stepId": t["step"], "to": 1}, {"id": m, "stepId": t["step"], "to": 1}]
    ),
    "add_variant": _foreign(
        lambda t, m: [
            {"id": t["id"], "stepId": t["step"]},
            {"id": m, "stepId": t["step"]},
            {"id": t["id"], "stepId": t["step"], "copyFrom": t["variant"]},
        ]
    ),
    "update_variant": _foreign(
        lambda t, m: [
            {"id": t["id"], "variantId": t["variant"], "subject": "Hijacked"},
            {"id": m, "variantId": t["variant"], "subject": "Hijacked"},
        ]
    ),
    "delete_variant": _foreign(
        lambda t, m: [{"id": t["id"], "variantId": t["variant"]}, {"id": m, "variantId": t["variant"]}]
    ),
    "set_sequence": their_sequence,
    "list_campaign_leads": _foreign(lambda t, m: [{"id": t["id"]}]),
    "add_leads_to_campaign": their_leads_added,
    "remove_leads_from_campaign": _foreign(
        lambda t, m: [{"id": t["id"], "ids": [t["campaign_lead"]]}, {"id": m, "ids": [t["campaign_lead"]]}]
    ),
    "list_campaign_lead_sends": _foreign(
        lambda t, m: [
            {"id": t["id"], "campaignLeadId": t["campaign_lead"]},
            {"id": m, "campaignLeadId": t["campaign_lead"]},
        ]
    ),
    "preview_campaign": _foreign(lambda t, m: [{"id": t["id"]}, {"id": m, "leadId": t["lead"]}]),
    "get_launch_checklist": _foreign(lambda t, m: [{"id": t["id"]}]),
    "launch_campaign": _foreign(lambda t, m: [{"id": t["id"]}]),
    "pause_campaign": _foreign(lambda t, m: [{"id": t["id"]}]),
}


# --- the send forecast (issue 28, item 7) ------------------------------------------------------------------


async def forecast_campaign_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    ready = (await parity_campaign(http, ws, leads=3))["id"]
    empty = (await parity_campaign(http, ws))["id"]
    return [{"id": ready}, {"id": empty}, {"id": "cmp_missing"}]


CASES["forecast_campaign"] = forecast_campaign_args
FOREIGN["forecast_campaign"] = _foreign(lambda t, m: [{"id": t["id"]}])
