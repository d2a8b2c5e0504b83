"""Every MCP tool returns the same JSON as its REST route, and no workspace can see or change another's
data through either door."""

from __future__ import annotations

import itertools
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest

from tests.campaigns.parity import CAMPAIGN_PARITY_CASES
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.doors import ENDPOINTS, call_mcp, call_rest, normalize
from tests.mail_servers import closed_port
from tests.webhooks.parity import WEBHOOK_PARITY_CASES

_unique = itertools.count()
Prepare = Callable[[httpx.AsyncClient, WorkspaceHandle], Awaitable[list[dict[str, Any]]]]


async def _new_key(http: httpx.AsyncClient, ws: WorkspaceHandle, name: str = "k") -> dict[str, Any]:
    return (await http.post("/api/v1/apiKeys/create", headers=ws.headers, json={"name": name})).json()  # type: ignore[no-any-return]


async def _member_id(http: httpx.AsyncClient, ws: WorkspaceHandle, user_id: str) -> str:
    members = (await http.get("/api/v1/members", headers=ws.headers)).json()["members"]
    return str(next(m["id"] for m in members if m["userId"] == user_id))


async def _invitation(http: httpx.AsyncClient, ws: WorkspaceHandle, email: str) -> str:
    created = await http.post("/api/v1/invitations", headers=ws.headers, json={"email": email})
    return str(created.json()["id"])


async def no_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{}]


async def create_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"name": "parity", "expiresInDays": 30}, {"name": ""}, {"name": "n", "expiresInDays": 400}]


async def revoke_key_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": (await _new_key(http, ws))["id"], "confirm": True}, {"id": "key_missing", "confirm": True}]


async def settings_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"unsubscribeMode": "reply_text"}, {"aiLabels": False}, {}, {"unsubscribeMode": "smoke"}]


async def invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": "parity@example.com", "role": "admin"}, {"email": "not-an-email"}]


async def delete_invitation_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    email = f"gone-{next(_unique)}@example.com"
    return [{"id": await _invitation(http, ws, email)}, {"id": "inv_missing"}]


async def update_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await _member_id(http, ws, member.user_id), "role": "admin"},
        {"id": "mem_missing", "role": "admin"},
    ]


async def remove_member_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    member = await ws.add_member("member")
    return [
        {"id": await _member_id(http, ws, member.user_id), "confirm": True},
        {"id": "mem_missing", "confirm": True},
    ]


async def disconnect_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": "grant_missing", "confirm": True}]


async def _lead(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    body = {"email": f"p{next(_unique)}@parity.test", "company": "Parity"}
    return str((await http.post("/api/v1/leads", headers=ws.headers, json=body)).json()["id"])


async def list_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    await _lead(http, ws)
    return [{}, {"search": "parity", "sort": "email", "dir": "asc"}, {"pageSize": 5}, {"status": ["won"]}]


async def lead_stats_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{}, {"listId": "list_missing"}]


async def get_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _lead(http, ws)}, {"id": "lead_missing"}]


async def create_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": f"p{next(_unique)}@parity.test", "custom": {"k": 1}}, {"email": "bad"}]


async def update_lead_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _lead(http, ws), "title": "CEO", "status": "interested"}, {"id": "lead_missing"}]


async def mark_won_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _lead(http, ws), "value": 99.5}, {"id": "lead_missing"}]


async def delete_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"target": {"ids": [await _lead(http, ws)]}, "confirm": True}, {"target": {}, "confirm": True}]


async def import_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    rows = [{"email": f"p{next(_unique)}@parity.test"}, {"email": "bad"}]
    return [
        {"fileName": "parity.csv", "rows": rows, "confirm": True},
        {"importId": "imp_missing", "rows": [], "confirm": True},
    ]


async def get_import_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    body = {"rows": [{"email": f"p{next(_unique)}@parity.test"}], "final": True}
    imported = (await http.post("/api/v1/leads/import", headers=ws.headers, json=body)).json()
    return [{"id": imported["id"]}, {"id": "imp_missing"}]


async def verify_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    from tests.verification.helpers import add_leads

    [lead] = await add_leads(ws, [f"p{next(_unique)}@parity.test"], verify_status="unknown")
    return [
        {"target": {"ids": [lead, "lead_missing"]}},
        {"target": {"filter": {"verify": ["verifying"]}}},
        {"target": {"all": True}},
        {"target": {}},
    ]


# --- lists, labels, suppressions -------------------------------------------------------------------------


async def _row_lead(ws: WorkspaceHandle) -> str:
    from tests.lists.helpers import add_leads

    return (await add_leads(ws, f"p{next(_unique)}@parity.test"))[0]


def _parity_name() -> str:
    return f"parity-{next(_unique)}"


async def _list(http: httpx.AsyncClient, ws: WorkspaceHandle) -> str:
    created = await http.post("/api/v1/lists", headers=ws.headers, json={"name": _parity_name()})
    return str(created.json()["id"])


async def _label(http: httpx.AsyncClient, ws: WorkspaceHandle, **fields: Any) -> str:
    body = {"name": _parity_name(), **fields}
    return str((await http.post("/api/v1/labels", headers=ws.headers, json=body)).json()["id"])


async def list_lists_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id = await _list(http, ws)
    body = {"target": {"ids": [await _row_lead(ws)]}, "listId": list_id}
    await http.post("/api/v1/leads/lists/add", headers=ws.headers, json=body)
    return [{}]


async def create_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"name": _parity_name()}, {"name": ""}, {"name": "x" * 121}]


async def update_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _list(http, ws), "name": _parity_name()}, {"id": "list_missing", "name": "x"}]


async def delete_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _list(http, ws), "confirm": True}, {"id": "list_missing", "confirm": True}]


async def add_to_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id, lead = await _list(http, ws), await _row_lead(ws)
    return [
        {"target": {"ids": [lead, "lead_missing"]}, "listId": list_id},
        {"target": {"all": True}, "listId": "list_missing"},
        {"target": {}, "listId": list_id},
    ]


async def remove_from_list_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    list_id, lead = await _list(http, ws), await _row_lead(ws)
    body = {"target": {"ids": [lead]}, "listId": list_id}
    await http.post("/api/v1/leads/lists/add", headers=ws.headers, json=body)
    return [body, {"target": {"all": True}, "listId": "list_missing"}]


async def list_labels_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await _label(http, ws, type="positive", triggers={"removeAfterDays": 3})
    body = {"target": {"ids": [await _row_lead(ws)]}, "labelId": label}
    await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)
    return [{}]


async def create_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        {"name": _parity_name(), "type": "warning", "color": "#ABCDEF", "triggers": {"suppress": True}},
        {"name": _parity_name(), "triggers": {"moveToListId": await _list(http, ws), "removeAfterDays": 9}},
        {"name": "x", "color": "red"},
        {"name": "y", "triggers": {"moveToListId": "list_missing"}},
    ]


async def update_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await _label(http, ws, color="#000000")
    return [
        {"id": label, "name": _parity_name(), "color": None, "triggers": {"suppress": True}},
        {"id": label, "triggers": {"applyLabel": {"labelId": label, "afterDays": 2}}},
        {"id": "lbl_missing", "type": "negative"},
    ]


async def delete_label_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _label(http, ws), "confirm": True}, {"id": "lbl_missing", "confirm": True}]


async def label_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await _label(http, ws, triggers={"suppress": True})
    return [
        {"target": {"ids": [await _row_lead(ws)]}, "labelId": label},
        {"target": {"all": True}, "labelId": "lbl_missing"},
        {"target": {"ids": []}, "labelId": label},
    ]


async def unlabel_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    label = await _label(http, ws)
    body = {"target": {"ids": [await _row_lead(ws)]}, "labelId": label}
    await http.post("/api/v1/leads/labels/add", headers=ws.headers, json=body)
    return [body, {"target": {"all": True}, "labelId": "lbl_missing"}]


async def list_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    body = {"entries": [f"p{next(_unique)}@parity.test"], "reason": "parity"}
    await http.post("/api/v1/suppressions", headers=ws.headers, json=body)
    return [{}, {"search": "parity", "pageSize": 10}, {"page": 0}]


async def add_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    n = next(_unique)
    return [
        {"entries": [f"p{n}@parity.test", f"parity-{n}.test", "not valid"], "reason": "parity"},
        {"entries": []},
    ]


async def remove_suppressions_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    entry = f"parity-{next(_unique)}.test"
    await http.post("/api/v1/suppressions", headers=ws.headers, json={"entries": [entry]})
    return [{"entries": [entry, "nothing.test"]}, {"entries": []}]


async def suppress_leads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"target": {"ids": [await _row_lead(ws)]}, "reason": "parity"}, {"target": {}}]


# --- mailboxes: logins against a closed port fail the same way through both doors ---------------------------

_CLOSED_PORT = closed_port()


def _refused_servers(email: str) -> dict[str, Any]:
    server = {"host": "127.0.0.1", "port": _CLOSED_PORT, "security": "tls", "user": email}
    return {"smtp": server, "imap": {**server, "security": "starttls"}}


def _mailbox_body(**extra: Any) -> dict[str, Any]:
    email = f"p{next(_unique)}@parity.test"
    return {"provider": "smtp", "email": email, "password": "pw", **_refused_servers(email), **extra}


async def _mailbox(ws: WorkspaceHandle) -> str:
    from tests.mailboxes.helpers import seed_mailbox

    return await seed_mailbox(
        ws, f"p{next(_unique)}@parity.test", smtp_port=_CLOSED_PORT, imap_port=_CLOSED_PORT
    )


async def list_mailboxes_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    await _mailbox(ws)
    return [{}]


async def get_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _mailbox(ws)}, {"id": "mbx_missing"}]


async def create_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [
        _mailbox_body(displayName="P", dailyLimit=40),
        {"provider": "smtp", "email": "bad", "password": ""},
    ]


async def try_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    google_with_servers = {"provider": "google_app", "email": "p1@parity.test", "password": "x"}
    return [_mailbox_body(), {**google_with_servers, **_refused_servers("p1@parity.test")}]


async def import_mailboxes_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    row = _mailbox_body()
    del row["provider"]
    return [{"rows": [row, row]}, {"rows": []}]


async def update_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    mailbox_id = await _mailbox(ws)
    limits = {"dailyLimit": 50, "rampEnabled": False, "rampStart": 3, "rampIncrement": 1}
    return [
        {
            "id": mailbox_id,
            "displayName": "P",
            "status": "paused",
            "limits": {**limits, "minGapS": 40, "maxGapS": 50},
        },
        {"id": mailbox_id, "credentials": {"password": "new"}},
        {"id": mailbox_id, "limits": {**limits, "minGapS": 60, "maxGapS": 50}},
        {"id": "mbx_missing", "timezone": "UTC"},
    ]


async def delete_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _mailbox(ws)}, {"id": "mbx_missing"}]


async def retest_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _mailbox(ws)}, {"id": "mbx_missing"}]


async def detect_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": "p1@gmail.com"}, {"email": "p1@no-mail-server.parity.test"}, {"email": "bad"}]


PARITY_CASES: dict[str, Prepare] = {
    "get_me": no_args,
    "list_members": no_args,
    "get_sending_settings": no_args,
    "update_sending_settings": settings_args,
    "create_invitation": invitation_args,
    "delete_invitation": delete_invitation_args,
    "update_member": update_member_args,
    "remove_member": remove_member_args,
    "list_api_keys": no_args,
    "create_api_key": create_key_args,
    "revoke_api_key": revoke_key_args,
    "list_connected_apps": no_args,
    "disconnect_app": disconnect_args,
    "list_leads": list_leads_args,
    "get_lead_stats": lead_stats_args,
    "get_lead": get_lead_args,
    "create_lead": create_lead_args,
    "update_lead": update_lead_args,
    "mark_won": mark_won_args,
    "delete_leads": delete_leads_args,
    "import_leads": import_args,
    "get_import": get_import_args,
    "list_imports": no_args,
    "verify_leads": verify_leads_args,
    "list_lists": list_lists_args,
    "create_list": create_list_args,
    "update_list": update_list_args,
    "delete_list": delete_list_args,
    "add_leads_to_list": add_to_list_args,
    "remove_leads_from_list": remove_from_list_args,
    "list_labels": list_labels_args,
    "create_label": create_label_args,
    "update_label": update_label_args,
    "delete_label": delete_label_args,
    "label_leads": label_leads_args,
    "unlabel_leads": unlabel_leads_args,
    "list_suppressions": list_suppressions_args,
    "add_suppressions": add_suppressions_args,
    "remove_suppressions": remove_suppressions_args,
    "suppress_leads": suppress_leads_args,
    **CAMPAIGN_PARITY_CASES,
    "list_mailboxes": list_mailboxes_args,
    "get_mailbox": get_mailbox_args,
    "create_mailbox": create_mailbox_args,
    "test_mailbox": try_mailbox_args,
    "import_mailboxes": import_mailboxes_args,
    "update_mailbox": update_mailbox_args,
    "delete_mailbox": delete_mailbox_args,
    "retest_mailbox": retest_mailbox_args,
    "detect_mailbox": detect_mailbox_args,
    **WEBHOOK_PARITY_CASES,
}


def test_every_tool_has_a_parity_case() -> None:
    assert set(ENDPOINTS) == set(PARITY_CASES)


def _strip_volatile(value: Any) -> Any:
    """lastUsedAt changes with every authenticated call, and `ms` (how long a request took) with every
    request, so only their presence is compared."""
    if isinstance(value, dict):
        return {
            k: ("<set>" if k in ("lastUsedAt", "ms") and v is not None else _strip_volatile(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_strip_volatile(v) for v in value]
    return value


@pytest.mark.parametrize("tool", sorted(PARITY_CASES))
async def test_mcp_returns_what_rest_returns(
    tool: str, http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    ws = await make_workspace()
    prepare = PARITY_CASES[tool]
    rest_args, mcp_args = await prepare(http, ws), await prepare(http, ws)
    async with mcp_session(ws.api_key) as client:
        for rest_input, mcp_input in zip(rest_args, mcp_args, strict=True):
            status, rest_body = await call_rest(http, ws.headers, tool, rest_input)
            is_error, mcp_body = await call_mcp(client, tool, mcp_input)
            assert is_error == (status >= 400), (tool, rest_input, rest_body, mcp_body)
            assert normalize(_strip_volatile(mcp_body)) == normalize(_strip_volatile(rest_body)), (
                tool,
                rest_input,
            )


async def test_workspaces_cannot_reach_each_other(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, mcp_session: Any
) -> None:
    mine, theirs = await make_workspace(), await make_workspace()
    their_member = await theirs.add_member("member")
    their_key = await _new_key(http, theirs, "theirs")
    their_invite = await _invitation(http, theirs, "their-invite@example.com")
    their_member_id = await _member_id(http, theirs, their_member.user_id)
    their_list, their_label = await _list(http, theirs), await _label(http, theirs)
    attempts = [
        ("revoke_api_key", {"id": their_key["id"], "confirm": True}),
        ("delete_invitation", {"id": their_invite}),
        ("update_member", {"id": their_member_id, "role": "owner"}),
        ("remove_member", {"id": their_member_id, "confirm": True}),
        ("update_list", {"id": their_list, "name": "hijacked"}),
        ("delete_list", {"id": their_list, "confirm": True}),
        ("add_leads_to_list", {"target": {"all": True}, "listId": their_list}),
        ("remove_leads_from_list", {"target": {"all": True}, "listId": their_list}),
        ("update_label", {"id": their_label, "name": "hijacked"}),
        ("delete_label", {"id": their_label, "confirm": True}),
        ("label_leads", {"target": {"all": True}, "labelId": their_label}),
        ("unlabel_leads", {"target": {"all": True}, "labelId": their_label}),
    ]
    async with mcp_session(mine.api_key) as client:
        for tool, args in attempts:
            status, body = await call_rest(http, mine.headers, tool, args)
            assert status == 404 and body["error"]["code"] == "not_found", (tool, body)
            is_error, mcp_body = await call_mcp(client, tool, args)
            assert is_error and mcp_body["error"]["code"] == "not_found", (tool, mcp_body)

        for tool in ("list_api_keys", "list_members", "list_lists", "list_labels"):
            _, rest_view = await call_rest(http, mine.headers, tool, {})
            _, mcp_view = await call_mcp(client, tool, {})
            text = str(rest_view) + str(mcp_view)
            assert (
                their_key["id"] not in text
                and their_member.user_id not in text
                and theirs.user_id not in text
                and their_list not in text
                and their_label not in text
            )

    # their things are untouched
    assert (
        await http.get("/api/v1/me", headers={"Authorization": f"Bearer {their_key['key']}"})
    ).status_code == 200
    assert (await http.get("/api/v1/me", headers=their_member.headers)).json()["role"] == "member"
    invites = (await http.get("/api/v1/members", headers=theirs.headers)).json()["invitations"]
    assert [i["id"] for i in invites] == [their_invite]
    their_lists = (await http.get("/api/v1/lists", headers=theirs.headers)).json()["lists"]
    their_labels = (await http.get("/api/v1/labels", headers=theirs.headers)).json()["labels"]
    assert [x["id"] for x in their_lists] == [their_list] and their_lists[0]["name"] != "hijacked"
    assert [x["id"] for x in their_labels] == [their_label] and their_labels[0]["name"] != "hijacked"
