"""REST/MCP parity cases of labels."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import (
    Args,
    Foreign,
    Prepare,
    foreign_targets,
    new_label,
    new_list,
    nothing_named,
    parity_name,
    row_lead,
)


async def list_labels_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await new_label(http, ws, type="positive", triggers={"removeAfterDays": 3})
    body = {"target": {"ids": [await row_lead(ws)]}, "labelId": label}
    await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)
    return [{}]


async def create_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        {"name": parity_name(), "type": "warning", "color": "#ABCDEF", "triggers": {"suppress": True}},
        {"name": parity_name(), "triggers": {"moveToListId": await new_list(http, ws), "removeAfterDays": 9}},
        {"name": "x", "color": "red"},
        {"name": "y", "triggers": {"moveToListId": "list_missing"}},
    ]


async def update_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await new_label(http, ws, color="#000000")
    return [
        {"id": label, "name": parity_name(), "color": None, "triggers": {"suppress": True}},
        {"id": label, "triggers": {"applyLabel": {"labelId": label, "afterDays": 2}}},
        {"id": "lbl_missing", "type": "negative"},
    ]


async def delete_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await new_label(http, ws), "confirm": True}, {"id": "lbl_missing", "confirm": True}]


async def label_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await new_label(http, ws, triggers={"suppress": True})
    return [
        {"target": {"ids": [await row_lead(ws)]}, "labelId": label},
        {"target": {"all": True}, "labelId": "lbl_missing"},
        {"target": {"ids": []}, "labelId": label},
    ]


async def unlabel_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await new_label(http, ws)
    body = {"target": {"ids": [await row_lead(ws)]}, "labelId": label}
    await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)
    return [body, {"target": {"all": True}, "labelId": "lbl_missing"}]


CASES: dict[str, Prepare] = {
    "list_labels": list_labels_args,
    "create_label": create_label_args,
    "update_label": update_label_args,
    "delete_label": delete_label_args,
    "label_leads": label_leads_args,
    "unlabel_leads": unlabel_leads_args,
}


async def their_trigger_targets(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """A new label of mine whose triggers name their list or their label."""
    their_list, their_label = await new_list(http, theirs), await new_label(http, theirs)
    return [
        {"name": parity_name(), "triggers": {"moveToListId": their_list}},
        {"name": parity_name(), "triggers": {"applyLabel": {"labelId": their_label, "afterDays": 1}}},
    ]


async def their_label_changed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their label; my label pointed at their list or label."""
    mine_label = await new_label(http, mine)
    triggers = await their_trigger_targets(http, mine, theirs)
    return [
        {"id": await new_label(http, theirs), "name": parity_name(), "triggers": {"suppress": True}},
        *({"id": mine_label, "triggers": t["triggers"]} for t in triggers),
    ]


async def their_label(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": await new_label(http, theirs)}]


async def their_leads_or_label(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their leads labelled (or unlabelled) with my label, and all my leads with their label."""
    mine_label = await new_label(http, mine, triggers={"suppress": True})
    await row_lead(mine)
    sets = [{"target": target, "labelId": mine_label} for target in await foreign_targets(http, theirs)]
    return [*sets, {"target": {"all": True}, "labelId": await new_label(http, theirs)}]


FOREIGN: dict[str, Foreign] = {
    "list_labels": nothing_named,
    "create_label": their_trigger_targets,
    "update_label": their_label_changed,
    "delete_label": their_label,
    "label_leads": their_leads_or_label,
    "unlabel_leads": their_leads_or_label,
}
