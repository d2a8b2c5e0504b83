"""What a person gets through the doors: PNG charts (REST and the MCP image content, decoded with Pillow),
CSV exports a spreadsheet opens (UTF-8 with BOM, header row, streamed), and the documented refusals."""

from __future__ import annotations

import base64
import csv
import io
from typing import Any

import httpx
from PIL import Image

from tests.conftest import MakeWorkspace
from tests.parity.analytics import seeded

API = "/api/v1"


def png_size(data: bytes) -> tuple[int, int]:
    image = Image.open(io.BytesIO(data))
    image.load()  # decodes every pixel: a broken PNG fails here
    assert image.format == "PNG"
    return image.size


async def test_rest_charts_are_real_pngs(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    campaign = await seeded(ws)
    overview = await http.get(f"{API}/analytics/overview.png", params={"days": 7}, headers=ws.headers)
    assert overview.status_code == 200 and overview.headers["content-type"] == "image/png"
    assert png_size(overview.content) == (800, 800)
    stats = await http.get(f"{API}/campaigns/stats.png", params={"campaignId": campaign}, headers=ws.headers)
    assert stats.status_code == 200 and png_size(stats.content) == (800, 400)
    # the same refusals as the JSON routes, as JSON
    bad = await http.get(f"{API}/campaigns/stats.png", params={"days": 14}, headers=ws.headers)
    assert bad.status_code == 422 and bad.json()["error"]["code"] == "invalid_input"
    other = await make_workspace()
    theirs = await http.get(
        f"{API}/campaigns/stats.png", params={"campaignId": campaign}, headers=other.headers
    )
    assert theirs.status_code == 404 and theirs.json()["error"]["code"] == "not_found"
    nobody = await http.get(f"{API}/analytics/overview.png")
    assert nobody.status_code == 401


async def test_mcp_chart_adds_a_png_image(make_workspace: MakeWorkspace, mcp_session: Any) -> None:
    ws = await make_workspace()
    campaign = await seeded(ws)
    async with mcp_session(ws.api_key) as client:
        plain = await client.call_tool("get_campaign_stats", {"days": 7})
        assert [c.type for c in plain.content] == ["text"]
        for tool, args, size in (
            ("get_campaign_stats", {"days": 7, "chart": True}, (800, 400)),
            ("get_analytics_overview", {"chart": True}, (800, 800)),
            ("get_campaign_analytics", {"chart": True}, (800, 400)),
            ("get_campaign_breakdown", {"id": campaign, "chart": True}, (800, 400)),
        ):
            result = await client.call_tool(tool, args)
            assert not result.is_error, result
            image = [c for c in result.content if c.type == "image"]
            assert len(image) == 1 and image[0].mime_type == "image/png"
            assert png_size(base64.b64decode(image[0].data)) == size
            assert result.structured_content is not None


def read_csv(response: httpx.Response) -> list[list[str]]:
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/csv")
    assert response.content.startswith(b"\xef\xbb\xbf")  # UTF-8 BOM: spreadsheets read UTF-8
    return list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))


async def test_overview_csv(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    await seeded(ws)
    rows = read_csv(await http.get(f"{API}/analytics/overview.csv", params={"days": 7}, headers=ws.headers))
    assert rows[0] == ["date", "sent", "replied", "positive", "bounced", "opened"]
    assert len(rows) == 8
    json_days = (await http.get(f"{API}/analytics/overview", params={"days": 7}, headers=ws.headers)).json()
    assert [[d["date"], str(d["sent"])] for d in json_days["series"]] == [r[:2] for r in rows[1:]]
    assert sum(int(r[1]) for r in rows[1:]) == 6


async def test_campaign_leads_csv_streams_every_lead(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    campaign = await seeded(ws)
    async with http.stream("GET", f"{API}/campaigns/{campaign}/leads.csv", headers=ws.headers) as response:
        await response.aread()
    rows = read_csv(response)
    assert rows[0][:3] == ["email", "first_name", "last_name"]
    assert len(rows) == 7 and all(r[0].endswith("@lead.example") for r in rows[1:])
    assert response.headers["content-disposition"] == 'attachment; filename="leads.csv"'
    other = await make_workspace()
    theirs = await http.get(f"{API}/campaigns/{campaign}/leads.csv", headers=other.headers)
    assert theirs.status_code == 404


async def test_bad_input(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    for path, params in (
        ("/analytics/overview", {"days": 14}),
        ("/analytics/overview", {"days": "week"}),
        ("/campaigns/stats", {"days": 0}),
        ("/campaigns/analytics", {"days": 365}),
    ):
        answer = await http.get(API + path, params=params, headers=ws.headers)
        assert answer.status_code == 422, (path, params, answer.text)
        assert answer.json()["error"]["code"] == "invalid_input"
    missing = await http.get(f"{API}/campaigns/cmp_01nothing/breakdown", headers=ws.headers)
    assert missing.status_code == 404
    empty = (await http.get(f"{API}/analytics/overview", headers=ws.headers)).json()
    assert empty["sending"] is False and empty["totals"]["sent"] == 0 and len(empty["series"]) == 30


async def test_the_workspace_time_zone(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    got = await http.get(f"{API}/settings/workspace", headers=ws.headers)
    assert got.status_code == 200 and got.json()["timezone"] == "UTC"
    for bad in ("Mars/Olympus_Mons", "", "Europe/Berlin\n", "+02:00"):
        refused = await http.patch(f"{API}/settings/workspace", headers=ws.headers, json={"timezone": bad})
        assert refused.status_code == 422, (bad, refused.text)
        assert refused.json()["error"]["code"] == "invalid_input"
    changed = await http.patch(
        f"{API}/settings/workspace", headers=ws.headers, json={"timezone": "Asia/Tokyo"}
    )
    assert changed.status_code == 200 and changed.json()["timezone"] == "Asia/Tokyo"
    overview = (await http.get(f"{API}/analytics/overview", headers=ws.headers)).json()
    assert overview["timezone"] == "Asia/Tokyo"
    member = await ws.add_member("member")
    assert (await http.get(f"{API}/settings/workspace", headers=member.headers)).status_code == 200
    denied = await http.patch(f"{API}/settings/workspace", headers=member.headers, json={"timezone": "UTC"})
    assert denied.status_code == 403
