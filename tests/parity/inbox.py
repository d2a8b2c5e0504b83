"""REST/MCP parity cases of the reply threads. Threads are seeded as the inbox pipeline writes them; the
reply goes to a mailbox whose SMTP port refuses connections (one port for both doors), so both doors give
the same `delivery_failed` without a mail server."""

from __future__ import annotations

import httpx

from tests.campaigns.helpers import add_lead
from tests.conftest import WorkspaceHandle
from tests.inbox.thread_seed import T0, minutes, seed_message, seed_thread
from tests.mail_servers import closed_port
from tests.parity.campaigns import parity_campaign
from tests.parity.common import Args, Foreign, Prepare, new_label, unique

_CLOSED_PORT = closed_port()


async def _thread(ws: WorkspaceHandle, **fields: object) -> str:
    from tests.mailboxes.helpers import seed_mailbox

    n = next(unique)
    box = await seed_mailbox(ws, f"box{n}@parity.test", smtp_port=_CLOSED_PORT, imap_port=_CLOSED_PORT)
    lead = await add_lead(ws, f"p{n}@parity.test", first_name="Pat")
    thread = await seed_thread(ws, lead, box, subject="Parity", **fields)  # type: ignore[arg-type]
    await seed_message(ws, thread, box, at=T0 + minutes(1), from_email=f"p{n}@parity.test")
    return thread


async def list_threads_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    await _thread(ws)
    await _thread(ws, kind="bounce", at=T0 + minutes(5), unread=False)
    return [
        {},
        {"kind": ["bounce"]},
        {"labelId": "none", "unread": True},
        {"search": "parity", "pageSize": 10, "page": 1},
        {"pageSize": 5},
        {"kind": ["spam"]},
    ]


async def get_thread_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{"id": await _thread(ws)}, {"id": "thr_missing"}]


async def update_thread_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    thread, label = await _thread(ws), await new_label(http, ws, type="positive")
    return [
        {"id": thread, "labelId": label},
        {"id": thread, "unread": False},
        {"id": thread, "labelId": None},
        {"id": thread, "labelId": "lbl_missing"},
        {"id": thread, "unread": "no"},
        {"id": "thr_missing", "unread": True},
    ]


async def reply_to_thread_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    thread = await _thread(ws)
    return [
        {"id": thread, "body": "Thanks, talk soon.", "confirm": True},
        {"id": thread, "body": "", "confirm": True},
        {"id": "thr_missing", "body": "Hello", "confirm": True},
    ]


CASES: dict[str, Prepare] = {
    "list_threads": list_threads_args,
    "get_thread": get_thread_args,
    "update_thread": update_thread_args,
    "reply_to_thread": reply_to_thread_args,
}


async def _their_thread(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> dict[str, str]:
    """Their thread (of their lead, mailbox and campaign), its message saying something confidential."""
    from tests.mailboxes.helpers import seed_mailbox

    n = next(unique)
    box = await seed_mailbox(theirs, f"box{n}@parity.test", smtp_port=_CLOSED_PORT, imap_port=_CLOSED_PORT)
    lead = await add_lead(theirs, f"p{n}@parity.test", first_name="Their")
    campaign = (await parity_campaign(http, theirs))["id"]
    thread = await seed_thread(theirs, lead, box, subject="Secret plans", campaign_id=campaign)
    await seed_message(theirs, thread, box, at=T0 + minutes(1), from_email=f"p{n}@parity.test", text="secret")
    return {"thread": thread, "lead": lead, "mailbox": box, "campaign": campaign}


async def their_threads_filtered(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    them = await _their_thread(http, theirs)
    label = await new_label(http, theirs)
    return [
        {},
        {"search": "secret"},
        {"leadId": them["lead"]},
        {"mailboxId": them["mailbox"]},
        {"campaignId": them["campaign"]},
        {"labelId": label},
    ]


async def their_thread(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    return [{"id": (await _their_thread(http, theirs))["thread"]}]


async def their_thread_or_label(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    """Their thread; my thread with their label."""
    return [
        {"id": (await _their_thread(http, theirs))["thread"], "unread": False},
        {"id": await _thread(mine), "labelId": await new_label(http, theirs)},
    ]


async def their_thread_answered(
    http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle
) -> Args:
    return [{"id": (await _their_thread(http, theirs))["thread"], "body": "Hijacked"}]


FOREIGN: dict[str, Foreign] = {
    "list_threads": their_threads_filtered,
    "get_thread": their_thread,
    "update_thread": their_thread_or_label,
    "reply_to_thread": their_thread_answered,
}
