from __future__ import annotations

from outreach_core.campaigns.audience import (
    add_leads_to_campaign,
    count_campaign_leads,
    list_campaign_lead_sends,
    list_campaign_leads,
    remove_leads_from_campaign,
)
from outreach_core.campaigns.forecast import forecast_campaign, prepare_launch_campaign
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
    Forecast,
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
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.targets.schemas import Removed


def _leads(n: int) -> str:
    return f"{n:,} lead{'' if n == 1 else 's'}"


async def _describe_delete(ctx: WorkspaceContext, id: str) -> str:
    found = await get_campaign(ctx, id)
    return (
        f"Delete the {found.status} campaign “{found.name}” with its sequence and the progress and send "
        f"history of its {_leads(found.lead_counts['total'])}? The leads stay in the workspace."
    )


async def _describe_remove(ctx: WorkspaceContext, id: str, body: RemoveCampaignLeadsIn) -> str:
    found = await get_campaign(ctx, id)
    n = await count_campaign_leads(ctx, found.id, body.ids)
    return (
        f"Take {_leads(n)} out of the campaign “{found.name}”? They get no more of its emails; they stay in "
        "the workspace and what was already sent stays in the history."
    )


async def _describe_launch(ctx: WorkspaceContext, id: str) -> str:
    found = await get_campaign(ctx, id)
    waiting = sum(found.lead_counts[s] for s in WAITING)
    row = await campaign_row(ctx, found.id)
    when = describe_next_send(await next_send(ctx, row), row)
    verb = "Resume" if found.status == "paused" else "Launch"
    ahead = await forecast_campaign(ctx, found.id)
    return (
        f"{verb} the campaign “{found.name}”: {_leads(waiting)} to contact from "
        f"{found.active_mailboxes} active mailbox{'es' if found.active_mailboxes != 1 else ''}? {when} "
        f"{ahead.message}"
    )


TAG = "campaigns"

ENDPOINTS = (
    Endpoint(
        "GET", "/campaigns", list_campaigns, CampaignList, query=ListCampaignsQuery, read_only=True, tag=TAG
    ),
    Endpoint("POST", "/campaigns", create_campaign, CreatedId, body=CreateCampaignIn, tag=TAG),
    Endpoint("GET", "/campaigns/{id}", get_campaign, Campaign, read_only=True, tag=TAG),
    Endpoint(
        "PATCH",
        "/campaigns/{id}",
        update_campaign,
        Campaign,
        body=UpdateCampaignIn,
        tag=TAG,
        destructive=True,
        idempotent=True,
    ),
    Endpoint("POST", "/campaigns/{id}/duplicate", duplicate_campaign, CreatedId, tag=TAG),
    Endpoint(
        "DELETE",
        "/campaigns/{id}",
        delete_campaign,
        Ok,
        destructive=True,
        confirm=_describe_delete,
        tag=TAG,
        idempotent=True,
    ),
    Endpoint("POST", "/campaigns/{id}/steps", add_step, Campaign, body=AddStepIn, tag=TAG),
    Endpoint(
        "PATCH",
        "/campaigns/{id}/steps/{stepId}",
        update_step,
        Ok,
        body=StepPatch,
        tag=TAG,
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/campaigns/{id}/steps/{stepId}",
        delete_step,
        Campaign,
        destructive=True,
        tag=TAG,
        idempotent=True,
    ),
    Endpoint("POST", "/campaigns/{id}/steps/{stepId}/move", move_step, Campaign, body=MoveStepIn, tag=TAG),
    Endpoint(
        "POST", "/campaigns/{id}/steps/{stepId}/variants", add_variant, Campaign, body=AddVariantIn, tag=TAG
    ),
    Endpoint(
        "PATCH",
        "/campaigns/{id}/variants/{variantId}",
        update_variant,
        SavedVariant,
        body=VariantPatch,
        tag=TAG,
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/campaigns/{id}/variants/{variantId}",
        delete_variant,
        Campaign,
        destructive=True,
        tag=TAG,
        idempotent=True,
    ),
    Endpoint(
        "PUT",
        "/campaigns/{id}/sequence",
        set_sequence,
        Campaign,
        body=SequenceIn,
        tag=TAG,
        destructive=True,
        title="Replace sequence",
    ),
    Endpoint(
        "GET",
        "/campaigns/{id}/leads",
        list_campaign_leads,
        CampaignLeadPage,
        query=ListCampaignLeadsQuery,
        read_only=True,
        tag=TAG,
    ),
    Endpoint(
        "POST",
        "/campaigns/{id}/leads",
        add_leads_to_campaign,
        CampaignLeadsAdded,
        body=AddCampaignLeadsIn,
        tag=TAG,
    ),
    Endpoint(
        "POST",
        "/campaigns/{id}/leads/remove",
        remove_leads_from_campaign,
        Removed,
        body=RemoveCampaignLeadsIn,
        destructive=True,
        confirm=_describe_remove,
        tag=TAG,
        idempotent=True,
    ),
    Endpoint(
        "GET",
        "/campaigns/{id}/leads/{campaignLeadId}/sends",
        list_campaign_lead_sends,
        SendList,
        read_only=True,
        tag=TAG,
        title="List a campaign lead's emails",
    ),
    Endpoint(
        "GET",
        "/campaigns/{id}/preview",
        preview_campaign,
        Preview,
        query=PreviewQuery,
        read_only=True,
        tag=TAG,
    ),
    Endpoint("GET", "/campaigns/{id}/checklist", get_launch_checklist, Checklist, read_only=True, tag=TAG),
    Endpoint(
        "POST",
        "/campaigns/{id}/launch",
        launch_campaign,
        Launched,
        confirm=_describe_launch,
        prepare=prepare_launch_campaign,
        tag=TAG,
        open_world=True,
    ),
    Endpoint("GET", "/campaigns/{id}/forecast", forecast_campaign, Forecast, read_only=True, tag=TAG),
    Endpoint("POST", "/campaigns/{id}/pause", pause_campaign, StatusOut, tag=TAG, idempotent=True),
)
