from __future__ import annotations

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.labels.operations import (
    create_label,
    delete_label,
    label_leads,
    list_labels,
    unlabel_leads,
    update_label,
)
from outreach_core.labels.schemas import CreateLabelIn, Label, Labels, UpdateLabelIn
from outreach_core.labels.store import get_label, labels_applying
from outreach_core.targets.schemas import Labeled, LabelTargetIn, Removed


async def _describe_delete(ctx: WorkspaceContext, id: str) -> str:
    label = await get_label(ctx, id)
    carried = f"{label.leads:,} lead{'' if label.leads == 1 else 's'}"
    text = (
        f"Delete the label “{label.name}”? {carried} carry it; it comes off them (the leads stay) and its "
        "pending timers are dropped."
    )
    appliers = await labels_applying(ctx, label.id)
    if appliers:
        names = ", ".join(f"“{other.name}”" for other in appliers)
        text += f" The apply-label trigger of {names} is switched off."
    return text


ENDPOINTS = (
    Endpoint("GET", "/labels", list_labels, Labels, read_only=True, tag="labels"),
    Endpoint("POST", "/labels", create_label, Label, body=CreateLabelIn, tag="labels"),
    Endpoint(
        "PATCH",
        "/labels/{id}",
        update_label,
        Label,
        body=UpdateLabelIn,
        tag="labels",
        destructive=True,
        idempotent=True,
    ),
    Endpoint(
        "DELETE",
        "/labels/{id}",
        delete_label,
        Ok,
        destructive=True,
        confirm=_describe_delete,
        tag="labels",
        idempotent=True,
    ),
    Endpoint(
        "POST", "/leads/labels/add", label_leads, Labeled, body=LabelTargetIn, tag="leads", idempotent=True
    ),
    Endpoint(
        "POST",
        "/leads/labels/remove",
        unlabel_leads,
        Removed,
        body=LabelTargetIn,
        destructive=True,
        tag="leads",
        idempotent=True,
    ),
)
