"""The sender's door: settling a send whose outcome was lost (the rest of the sender is a worker)."""

from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.sending.recovery import describe_send, resolve_unknown_send
from outreach_core.sending.schemas import ResolvedSend, ResolveUnknownSendIn


async def _describe_resolve(
    ctx: WorkspaceContext, id: str, campaignLeadId: str, sendId: str, body: ResolveUnknownSendIn
) -> str:
    found = await describe_send(ctx, campaignLeadId, sendId)
    if body.delivered:
        return f"Record {found} as delivered (its outcome was lost) and continue the lead's sequence?"
    return (
        f"Send {found} again? The first hand-off's outcome was lost: if it did arrive after all, the lead "
        "gets it twice. Check the mailbox's Sent folder first."
    )


ENDPOINTS = (
    Endpoint(
        "POST",
        "/campaigns/{id}/leads/{campaignLeadId}/sends/{sendId}/resolve",
        resolve_unknown_send,
        ResolvedSend,
        body=ResolveUnknownSendIn,
        tag="campaigns",
        confirm=_describe_resolve,
        title="Settle an unknown send",
    ),
)
