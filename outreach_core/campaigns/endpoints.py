from __future__ import annotations

from typing import Any

from outreach_core.campaigns.audience import (
    add_leads_to_campaign,
    count_campaign_leads,
    list_campaign_lead_sends,
    list_campaign_leads,
    remove_leads_from_campaign,
)
from outreach_core.campaigns.lifecycle import WAITING, get_launch_checklist, launch_campaign, pause_campaign
from outreach_core.campaigns.next_send import describe_next_send, next_send
from outreach_core.campaigns.operations import (
    create_campaign,
    delete_campaign,
    duplicate_campaign,
    get_campaign,
    list_campaigns,
    update_campaign,
)
from outreach_core.campaigns.preview import preview_campaign
from outreach_core.campaigns.schemas import (
    AddCampaignLeadsIn,
    AddStepIn,
    AddVariantIn,
    Campaign,
    CampaignLeadPage,
    CampaignLeadsAdded,
    CampaignList,
    Checklist,
    CreateCampaignIn,
    CreatedId,
    Launched,
    ListCampaignLeadsQuery,
    ListCampaignsQuery,
    MoveStepIn,
    Preview,
    PreviewQuery,
    RemoveCampaignLeadsIn,
    SavedVariant,
    SendList,
    SequenceIn,
    StatusOut,
    StepPatch,
    UpdateCampaignIn,
    VariantPatch,
)
from outreach_core.campaigns.sequence import (
    add_step,
    add_variant,
    delete_step,
    delete_variant,
    move_step,
    set_sequence,
    update_step,
    update_variant,
)
from outreach_core.campaigns.store import campaign_row
from outreach_core.context import WorkspaceContext
from outreach_core.endpoint import Endpoint
from outreach_core.targets.schemas import Removed
from outreach_core.wire import Ok


def _leads(n: int) -> str:
    return f"{n:,} lead{'' if n == 1 else 's'}"


async def _describe_delete(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    found = await get_campaign(ctx, str(args.get("id")))
    return (
        f"Delete the {found.status} campaign “{found.name}” with its sequence and the progress and send "
        f"history of its {_leads(found.lead_counts['total'])}? The leads stay in the workspace."
    )


async def _describe_remove(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    found = await get_campaign(ctx, str(args.get("id")))
    ids = [str(i) for i in args.get("ids") or []]
    n = await count_campaign_leads(ctx, found.id, ids)
    return (
        f"Take {_leads(n)} out of the campaign “{found.name}”? They get no more of its emails; they stay in "
        "the workspace and what was already sent stays in the history."
    )


async def _describe_launch(ctx: WorkspaceContext, args: dict[str, Any]) -> str:
    found = await get_campaign(ctx, str(args.get("id")))
    waiting = sum(found.lead_counts[s] for s in WAITING)
    row = await campaign_row(ctx, found.id)
    when = describe_next_send(await next_send(ctx, row), row)
    verb = "Resume" if found.status == "paused" else "Launch"
    return (
        f"{verb} the campaign “{found.name}”: {_leads(waiting)} to contact from "
        f"{found.active_mailboxes} active mailbox{'es' if found.active_mailboxes != 1 else ''}? {when}"
    )


def _ep(method: Any, path: str, op: Any, response: Any, **kw: Any) -> Endpoint:
    return Endpoint(method, path, op, response, tag="campaigns", **kw)


ENDPOINTS = [
    _ep("GET", "/campaigns", list_campaigns, CampaignList, query=ListCampaignsQuery, read_only=True),
    _ep("POST", "/campaigns", create_campaign, CreatedId, body=CreateCampaignIn),
    _ep("GET", "/campaigns/{id}", get_campaign, Campaign, read_only=True),
    _ep("PATCH", "/campaigns/{id}", update_campaign, Campaign, body=UpdateCampaignIn),
    _ep("POST", "/campaigns/{id}/duplicate", duplicate_campaign, CreatedId),
    _ep("DELETE", "/campaigns/{id}", delete_campaign, Ok, destructive=True, confirm=_describe_delete),
    _ep("POST", "/campaigns/{id}/steps", add_step, Campaign, body=AddStepIn),
    _ep("PATCH", "/campaigns/{id}/steps/{stepId}", update_step, Ok, body=StepPatch),
    _ep("DELETE", "/campaigns/{id}/steps/{stepId}", delete_step, Campaign, destructive=True),
    _ep("POST", "/campaigns/{id}/steps/{stepId}/move", move_step, Campaign, body=MoveStepIn),
    _ep("POST", "/campaigns/{id}/steps/{stepId}/variants", add_variant, Campaign, body=AddVariantIn),
    _ep("PATCH", "/campaigns/{id}/variants/{variantId}", update_variant, SavedVariant, body=VariantPatch),
    _ep("DELETE", "/campaigns/{id}/variants/{variantId}", delete_variant, Campaign, destructive=True),
    _ep("PUT", "/campaigns/{id}/sequence", set_sequence, Campaign, body=SequenceIn),
    _ep(
        "GET",
        "/campaigns/{id}/leads",
        list_campaign_leads,
        CampaignLeadPage,
        query=ListCampaignLeadsQuery,
        read_only=True,
    ),
    _ep("POST", "/campaigns/{id}/leads", add_leads_to_campaign, CampaignLeadsAdded, body=AddCampaignLeadsIn),
    _ep(
        "POST",
        "/campaigns/{id}/leads/remove",
        remove_leads_from_campaign,
        Removed,
        body=RemoveCampaignLeadsIn,
        destructive=True,
        confirm=_describe_remove,
    ),
    _ep(
        "GET",
        "/campaigns/{id}/leads/{campaignLeadId}/sends",
        list_campaign_lead_sends,
        SendList,
        read_only=True,
    ),
    _ep("GET", "/campaigns/{id}/preview", preview_campaign, Preview, query=PreviewQuery, read_only=True),
    _ep("GET", "/campaigns/{id}/checklist", get_launch_checklist, Checklist, read_only=True),
    _ep("POST", "/campaigns/{id}/launch", launch_campaign, Launched, confirm=_describe_launch),
    _ep("POST", "/campaigns/{id}/pause", pause_campaign, StatusOut),
]
