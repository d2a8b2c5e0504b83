"""The served OpenAPI document as standard tooling sees it: `openapi-spec-validator` accepts it, and
`openapi-python-client` generates every model from it, and the generated client talks to the live server."""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import sys
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator

from tests.conftest import MakeWorkspace
from tests.real_objects import make_real_objects

GENERATOR = Path(sys.executable).with_name("openapi-python-client")
PACKAGE = "outreach_generated_client"


async def served_document(http: httpx.AsyncClient) -> dict[str, Any]:
    response = await http.get("/api/v1/openapi.json")
    assert response.status_code == 200
    doc: dict[str, Any] = response.json()
    return doc


async def test_served_document_passes_openapi_spec_validator(http: httpx.AsyncClient) -> None:
    doc = await served_document(http)
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in OpenAPIV31SpecValidator(doc).iter_errors()]
    assert problems == []


def _normalised(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


@dataclass
class Generated:
    """A client package generated from the served document, imported."""

    doc: dict[str, Any]
    package: Any
    models: Any

    def api(self, tag: str, operation: str) -> Any:
        return importlib.import_module(f"{PACKAGE}.api.{tag}.{operation}")


@pytest.fixture(scope="module")
async def generated(live_server: str, tmp_path_factory: pytest.TempPathFactory) -> Generated:
    async with httpx.AsyncClient(base_url=live_server, timeout=30) as http:
        doc = await served_document(http)
    tmp_path = tmp_path_factory.mktemp("generated")
    (tmp_path / "openapi.json").write_text(json.dumps(doc))
    # openapi-python-client reads only JSON, text/* and application/octet-stream responses; its documented
    # setting for any other binary type (our charts' image/png) is to treat it as octet-stream
    config = {
        "package_name_override": PACKAGE,
        "post_hooks": [],
        "content_type_overrides": {"image/png": "application/octet-stream"},
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    made = await asyncio.create_subprocess_exec(
        str(GENERATOR),
        "generate",
        "--path",
        str(tmp_path / "openapi.json"),
        "--config",
        str(tmp_path / "config.json"),
        "--meta",
        "none",
        "--output-path",
        str(tmp_path / PACKAGE),
        "--fail-on-warning",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    output = (await asyncio.wait_for(made.communicate(), timeout=300))[0].decode()
    assert made.returncode == 0, output
    assert "Warning" not in output, output

    sys.path.insert(0, str(tmp_path))
    try:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        package = importlib.import_module(PACKAGE)
        models = importlib.import_module(f"{PACKAGE}.models")
        for module in ("labels.create_label", "labels.list_labels", "leads.create_lead"):
            importlib.import_module(f"{PACKAGE}.api.{module}")
        for module in (
            "campaigns.update_campaign",
            "campaigns.add_leads_to_campaign",
            "campaigns.update_step",
            "mailboxes.update_mailbox",
            "webhooks.create_webhook",
        ):
            importlib.import_module(f"{PACKAGE}.api.{module}")
    finally:
        sys.path.remove(str(tmp_path))
    return Generated(doc, package, models)


async def test_generated_client_has_every_model_and_works_against_the_server(
    generated: Generated, make_workspace: MakeWorkspace
) -> None:
    doc, client_pkg, models = generated.doc, generated.package, generated.models
    labels_api: Any = importlib.import_module(f"{PACKAGE}.api.labels")
    leads_api: Any = importlib.import_module(f"{PACKAGE}.api.leads")

    # every component schema became a model class (none dropped for a clash of titles)
    classes = {_normalised(name) for name in models.__all__}
    missing = [
        name
        for name, schema in doc["components"]["schemas"].items()
        if _normalised(schema.get("title", name)) not in classes
    ]
    assert missing == []

    ws = await make_workspace()
    client = client_pkg.AuthenticatedClient(base_url=doc["servers"][0]["url"], token=ws.api_key)
    async with client:
        label = await labels_api.create_label.asyncio(
            client=client,
            body=models.CreateLabelIn(
                name="Hot lead", type_=models.CreateLabelInType.POSITIVE, color="#22AA44"
            ),
        )
        assert isinstance(label, models.Label), label
        assert (label.name, label.type_.value, label.color, label.leads) == (
            "Hot lead",
            "positive",
            "#22aa44",
            0,
        )
        assert label.triggers.suppress is False

        listed = await labels_api.list_labels.asyncio(client=client)
        assert isinstance(listed, models.Labels), listed
        assert [x.id for x in listed.labels][-1:] == [label.id]  # after the built-in labels

        lead = await leads_api.create_lead.asyncio(
            client=client, body=models.CreateLeadIn(email=" Ada@Example.COM ", first_name="Ada")
        )
        assert isinstance(lead, models.LeadDetail), lead
        assert (lead.email, lead.first_name, lead.status.value) == ("ada@example.com", "Ada", "active")

        refused = await leads_api.create_lead.asyncio(
            client=client, body=models.CreateLeadIn(email="ada@example.com")
        )
        assert isinstance(refused, models.Error) and refused.error.code == "conflict"


async def test_a_generated_client_builds_requests_the_api_accepts(
    generated: Generated, http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    """The operations whose requests the document used to allow and the API refuse (issue 25, item 4), and
    explicit nulls (item 3), as a client generated from the document sees them."""
    models = generated.models
    # Fields that refuse null are "unset or a value" in the client; fields where null clears are nullable.
    assert models.StepPatch.__annotations__["same_thread"] == "bool | Unset"
    assert models.VariantPatch.__annotations__["active"] == "bool | Unset"
    assert models.UpdateCampaignIn.__annotations__["window_start"] == "int | Unset"
    assert models.UpdateCampaignIn.__annotations__["daily_cap"] == "int | None | Unset"
    assert models.UpdateCampaignIn.__annotations__["start_on"] == "datetime.date | None | Unset"

    ws = await make_workspace()
    objects = await make_real_objects(http, ws)
    client = generated.package.AuthenticatedClient(
        base_url=generated.doc["servers"][0]["url"], token=ws.api_key
    )
    start = date.today() + timedelta(days=7)
    async with client:
        campaign = await generated.api("campaigns", "update_campaign").asyncio_detailed(
            id=objects["campaigns"],
            client=client,
            body=models.UpdateCampaignIn(
                timezone_fallback="America/Argentina/Buenos_Aires",
                window_start=480,
                window_end=1080,
                start_on=start,
                end_on=start + timedelta(days=30),
                daily_cap=None,
            ),
        )
        assert campaign.status_code == 200, campaign.content
        assert (campaign.parsed.timezone_fallback, campaign.parsed.start_on) == (
            "America/Argentina/Buenos_Aires",
            start.isoformat(),
        )

        step = await generated.api("campaigns", "update_step").asyncio_detailed(
            id=objects["campaigns"],
            step_id=objects["stepId"],
            client=client,
            body=models.StepPatch(wait_days=4),
        )
        assert step.status_code == 200, step.content

        lead = await generated.api("leads", "create_lead").asyncio_detailed(
            client=client, body=models.CreateLeadIn(email="Grace@Example.org", country="GB")
        )
        assert lead.status_code == 200, lead.content
        assert (lead.parsed.email, lead.parsed.country) == ("grace@example.org", "GB")

        added = await generated.api("campaigns", "add_leads_to_campaign").asyncio_detailed(
            id=objects["campaigns"], client=client, body=models.AddCampaignLeadsIn(lead_ids=[lead.parsed.id])
        )
        assert added.status_code == 200, added.content
        assert added.parsed.added == 1

        limits = models.LimitsIn(
            daily_limit=40, ramp_enabled=False, ramp_start=5, ramp_increment=5, min_gap_s=60, max_gap_s=300
        )
        mailbox = await generated.api("mailboxes", "update_mailbox").asyncio_detailed(
            id=objects["mailboxes"],
            client=client,
            body=models.UpdateMailboxIn(timezone="Asia/Kolkata", limits=limits),
        )
        assert mailbox.status_code == 200, mailbox.content
        assert mailbox.parsed.mailbox.timezone == "Asia/Kolkata"

        webhook = await generated.api("webhooks", "create_webhook").asyncio_detailed(
            client=client,
            body=models.CreateWebhookIn(
                url="https://hooks.example.io/outreach?source=generated",
                events=[models.CreateWebhookInEventsItem.LEAD_REPLIED],
            ),
        )
        assert webhook.status_code == 200, webhook.content
        assert webhook.parsed.webhook.url == "https://hooks.example.io/outreach?source=generated"
