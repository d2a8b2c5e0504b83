"""The API reference for people: `GET /api/v1/docs` loads, as a browser would, only from this server (every
URL in the page and its start script relative or same-origin, each answered 200 with its type, a policy
that forbids other origins, no online validator); the document it shows says `openapi: 3.1.1`, describes
every parameter, gives every request body an example its model accepts, and sums each operation up in
one whole short sentence."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urljoin, urlsplit

import httpx

from http_api.app import api_endpoints
from outreach_core.catalog import all_files
from outreach_core.kernel.endpoint import SUMMARY_MAX, describe_path_params


class _Links(HTMLParser):
    """Every URL the page makes a browser fetch: scripts, stylesheets, icons, images, frames."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0
        self._in_script_without_src = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        for name in ("src", "href", "data", "poster"):
            if values.get(name):
                self.urls.append(str(values[name]))
        self._in_script_without_src = tag == "script" and not values.get("src")

    def handle_data(self, data: str) -> None:
        if self._in_script_without_src and data.strip():
            self.inline_scripts += 1

    def handle_endtag(self, tag: str) -> None:
        self._in_script_without_src = False


async def test_the_docs_page_makes_no_outside_request(http: httpx.AsyncClient, live_server: str) -> None:
    page = await http.get("/api/v1/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    links = _Links()
    links.feed(page.text)
    assert links.inline_scripts == 0  # the policy would block them; everything comes from files
    assert len(links.urls) >= 4
    page_url = str(page.url)
    fetched: dict[str, httpx.Response] = {}
    for url in links.urls:
        assert not urlsplit(url).scheme and not url.startswith("//"), url  # relative: this origin only
        absolute = urljoin(page_url, url)
        assert absolute.startswith(live_server + "/api/v1/docs/assets/"), absolute
        fetched[url] = await http.get(absolute)
        assert fetched[url].status_code == 200, url
    types = {url.rsplit(".", 1)[-1]: r.headers["content-type"] for url, r in fetched.items()}
    assert types["css"].startswith("text/css") and types["js"].startswith("text/javascript")
    assert types["png"] == "image/png"
    assert b"SwaggerUIBundle" in fetched["docs/assets/swagger-ui-bundle.js"].content
    # the CSS loads nothing from elsewhere (its images are data: URLs)
    css = fetched["docs/assets/swagger-ui.css"].text
    assert all(u.strip("'\" ").startswith("data:") for u in re.findall(r"url\(([^)]*)\)", css))
    # the start script: the document by a relative URL, the online validator off
    start = fetched["docs/assets/start.js"].text
    document = re.search(r'url: "([^"]+)"', start)
    assert document is not None and not urlsplit(document.group(1)).scheme
    served = await http.get(urljoin(page_url, document.group(1)))
    assert served.status_code == 200 and served.json()["openapi"] == "3.1.1"
    assert "validatorUrl: null" in start
    missing = await http.get("/api/v1/docs/assets/index.html")  # only the files the page uses
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


async def test_the_document_describes_every_parameter_and_shows_every_body(http: httpx.AsyncClient) -> None:
    doc: dict[str, Any] = (await http.get("/api/v1/openapi.json")).json()
    assert doc["openapi"] == "3.1.1"
    models = {e.name: e for e in api_endpoints()}
    files = {f.name: f for f in all_files()}
    bodies = 0
    for operations in doc["paths"].values():
        for op in operations.values():
            name = op["operationId"]
            summary = op["summary"]
            assert summary.endswith((".", "?")) and len(summary) <= SUMMARY_MAX and "\n" not in summary, name
            assert summary[0].isupper(), (name, summary)
            for parameter in op.get("parameters", []):
                assert parameter.get("description"), (name, parameter["name"])
                if parameter["in"] == "path":
                    described = (
                        describe_path_params(files[name].path)
                        if name in files
                        else models[name].path_descriptions
                    )
                    assert parameter["description"] == described[parameter["name"]], name
            if "requestBody" in op:
                bodies += 1
                example = op["requestBody"]["content"]["application/json"]["example"]
                body_model = models[name].body
                assert body_model is not None
                body_model.model_validate(example)  # the example is a request the API accepts
    assert bodies >= 40


async def test_the_files_are_in_the_document_with_their_media_types(http: httpx.AsyncClient) -> None:
    """The charts and CSV exports are documented like the JSON routes: their source's parameters (the
    query of the JSON route they render, the campaign of the export), the roles, the errors, and a success
    of their media type."""
    doc: dict[str, Any] = (await http.get("/api/v1/openapi.json")).json()
    expected = {
        "/analytics/overview.png": ("image/png", "/analytics/overview", {"days"}),
        "/campaigns/stats.png": ("image/png", "/campaigns/stats", {"days", "campaignId"}),
        "/analytics/overview.csv": ("text/csv", "/analytics/overview", {"days"}),
        "/campaigns/{id}/leads.csv": ("text/csv", None, {"id"}),
    }
    for path, (media_type, json_route, parameters) in expected.items():
        op = doc["paths"][path]["get"]
        names = {p["name"] for p in op.get("parameters", [])}
        assert parameters <= names, path
        if json_route is not None:  # the query of the JSON route it renders, described the same
            assert op["parameters"] == doc["paths"][json_route]["get"]["parameters"], path
        assert list(op["responses"]["200"]["content"]) == [media_type], path
        assert op["responses"]["200"]["content"][media_type]["schema"]["type"] == "string"
        assert {"401", "403", "422", "404"} <= op["responses"].keys(), path
        assert op["x-role"] == "member"
    days = next(
        p for p in doc["paths"]["/analytics/overview.png"]["get"]["parameters"] if p["name"] == "days"
    )
    assert days["schema"]["enum"] == [7, 30, 90] or "enum" in str(days["schema"]), days
