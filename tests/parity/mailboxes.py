"""REST/MCP parity cases of mailboxes: logins against a closed port fail the same way through both doors."""

from __future__ import annotations

from typing import Any

import httpx

from tests.conftest import WorkspaceHandle
from tests.mail_servers import closed_port
from tests.parity.common import Args, Foreign, Prepare, unique

_CLOSED_PORT = closed_port()


def _refused_servers(email: str) -> dict[str, Any]:
    server = {"host": "127.0.0.1", "port": _CLOSED_PORT, "security": "tls", "user": email}
    return {"smtp": server, "imap": {**server, "security": "starttls"}}


def _mailbox_body(**extra: Any) -> dict[str, Any]:
    email = f"p{next(unique)}@parity.test"
    return {"provider": "smtp", "email": email, "password": "pw", **_refused_servers(email), **extra}


async def _mailbox(ws: WorkspaceHandle) -> str:
    from tests.mailboxes.helpers import seed_mailbox

    return await seed_mailbox(
        ws, f"p{next(unique)}@parity.test", smtp_port=_CLOSED_PORT, imap_port=_CLOSED_PORT
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
        # warmup (issue 32 item 1)
        {"id": mailbox_id, "warmup": {"enabled": True, "target": 12, "replyRate": 50}},
        {"id": mailbox_id, "warmup": {"target": 0}},
        {"id": "mbx_missing", "timezone": "UTC"},
    ]


async def delete_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _mailbox(ws)}, {"id": "mbx_missing"}]


async def retest_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"id": await _mailbox(ws)}, {"id": "mbx_missing"}]


async def detect_mailbox_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    return [{"email": "p1@gmail.com"}, {"email": "p1@no-mail-server.parity.test"}, {"email": "bad"}]


async def start_mailbox_oauth_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> list[dict[str, Any]]:
    """Google is configured for the session's server, Microsoft is not (409)."""
    return [{"provider": "google_oauth"}, {"provider": "microsoft"}, {"provider": "smtp"}]


CASES: dict[str, Prepare] = {
    "list_mailboxes": list_mailboxes_args,
    "get_mailbox": get_mailbox_args,
    "create_mailbox": create_mailbox_args,
    "test_mailbox": try_mailbox_args,
    "import_mailboxes": import_mailboxes_args,
    "update_mailbox": update_mailbox_args,
    "delete_mailbox": delete_mailbox_args,
    "retest_mailbox": retest_mailbox_args,
    "detect_mailbox": detect_mailbox_args,
    "start_mailbox_oauth": start_mailbox_oauth_args,
}


async def _their_mailbox(theirs: WorkspaceHandle) -> tuple[str, str]:
    from tests.mailboxes.helpers import seed_mailbox

    email = f"p{next(unique)}@parity.test"
    return await seed_mailbox(theirs, email, smtp_port=_CLOSED_PORT, imap_port=_CLOSED_PORT), email


async def their_mailbox(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": (await _their_mailbox(theirs))[0]}]


async def their_mailbox_listed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    await _their_mailbox(theirs)
    return [{}]


async def their_mailbox_changed(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    box = (await _their_mailbox(theirs))[0]
    return [
        {"id": box, "displayName": "Hijacked", "status": "paused"},
        {"id": box, "credentials": {"password": "x"}},
        {"id": box, "warmup": {"enabled": True}},
    ]


async def their_address(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Their mailbox's address, connected here: mailboxes are per workspace (the login test fails on the
    closed port, as it would for any address)."""
    email = (await _their_mailbox(theirs))[1]
    return [{"provider": "smtp", "email": email, "password": "pw", **_refused_servers(email)}]


async def their_address_imported(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    email = (await _their_mailbox(theirs))[1]
    return [{"rows": [{"email": email, "password": "pw", **_refused_servers(email)}]}]


async def their_address_detected(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"email": (await _their_mailbox(theirs))[1]}]


async def their_oauth_start(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """A sign-in started here names nothing of theirs (its state is bound to this workspace)."""
    await _their_mailbox(theirs)
    return [{"provider": "google_oauth"}]


FOREIGN: dict[str, Foreign] = {
    "list_mailboxes": their_mailbox_listed,
    "get_mailbox": their_mailbox,
    "create_mailbox": their_address,
    "test_mailbox": their_address,
    "import_mailboxes": their_address_imported,
    "update_mailbox": their_mailbox_changed,
    "delete_mailbox": their_mailbox,
    "retest_mailbox": their_mailbox,
    "detect_mailbox": their_address_detected,
    "start_mailbox_oauth": their_oauth_start,
}
