"""One of everything a path can name, made through the API (and, for what only a worker or a login makes,
written as the service writes it), so that tests built from the OpenAPI document can call every operation
on real objects instead of ids that only ever answer 404.

`path_values(path, objects)` fills a path template of the document (`/campaigns/{id}/steps/{stepId}`) with
the ids of these objects; a template whose object is not made here keeps no values (the caller's own).
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.conftest import WorkspaceHandle

API = "/api/v1"
_unique = itertools.count(1)


@dataclass
class RealObjects:
    """Ids of real objects of one workspace, by the first path segment that names them."""

    ids: dict[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> str:
        return self.ids[name]


async def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, f"{response.request.method} {response.request.url}: {response.text}"
    return response.json()


async def make_real_objects(http: httpx.AsyncClient, ws: WorkspaceHandle) -> RealObjects:
    """A lead in a list with a label, a campaign (two steps, two variants, the lead in it), a mailbox, a reply
    thread, a webhook, a member, an invitation and a finished import, all in `ws`."""
    from tests.inbox.thread_seed import seed_thread
    from tests.mailboxes.helpers import seed_mailbox

    h = ws.headers
    n = next(_unique)
    tag = f"{os.getpid()}-{n}"
    ids: dict[str, str] = {}

    async def post(path: str, body: Any) -> Any:
        return await _ok(await http.post(API + path, headers=h, json=body))

    ids["lists"] = (await post("/lists", {"name": f"List {tag}"}))["id"]
    ids["labels"] = (await post("/labels", {"name": f"Label {tag}"}))["id"]
    lead = await post(
        "/leads", {"email": f"ada-{tag}@example.com", "firstName": "Ada", "listId": ids["lists"]}
    )
    ids["leads"] = lead["id"]
    await post("/leads/labels/add", {"labelId": ids["labels"], "target": {"ids": [ids["leads"]]}})
    imported = await post("/leads/import", {"rows": [{"email": f"bob-{tag}@example.com"}], "final": True})
    ids["imports"] = imported["id"]

    campaign = (await post("/campaigns", {"name": f"Campaign {tag}"}))["id"]
    ids["campaigns"] = campaign
    await post(f"/campaigns/{campaign}/steps", {"waitDays": 2})
    detail = await _ok(await http.get(f"{API}/campaigns/{campaign}", headers=h))
    first = detail["steps"][0]
    await post(f"/campaigns/{campaign}/steps/{first['id']}/variants", {})
    ids["stepId"] = first["id"]
    ids["variantId"] = first["variants"][0]["id"]
    await post(f"/campaigns/{campaign}/leads", {"leadIds": [ids["leads"]]})
    members = await _ok(await http.get(f"{API}/campaigns/{campaign}/leads", headers=h))
    ids["campaignLeadId"] = members["leads"][0]["id"]

    ids["mailboxes"] = await seed_mailbox(ws, f"box-{tag}@example.com")
    ids["threads"] = await seed_thread(ws, ids["leads"], ids["mailboxes"], campaign_id=campaign)
    webhook = await post(
        "/webhooks", {"url": f"https://hooks-{n}.example.com/outreach", "events": ["lead.replied"]}
    )
    ids["webhooks"] = webhook["webhook"]["id"]
    member = await ws.add_member("member")
    listed = await _ok(await http.get(f"{API}/members", headers=h))
    ids["members"] = next(m["id"] for m in listed["members"] if m["userId"] == member.user_id)
    ids["invitations"] = (await post("/invitations", {"email": f"eve-{tag}@example.com"}))["id"]
    return RealObjects(ids)


def path_values(path: str, objects: RealObjects) -> dict[str, str]:
    """Values for the parameters of `path` that name one of `objects` (the others are left out)."""
    segments = path.strip("/").split("/")
    owner = segments[0]
    if segments[:2] == ["leads", "imports"]:
        owner = "imports"
    if segments[:2] == ["webhooks", "deliveries"]:
        owner = "deliveries"
    values: dict[str, str] = {}
    for segment in segments:
        if not (segment.startswith("{") and segment.endswith("}")):
            continue
        name = segment[1:-1]
        key = owner if name == "id" else name
        if key in objects.ids:
            values[name] = objects.ids[key]
    return values
