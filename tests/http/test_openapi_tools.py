"""The served OpenAPI document as standard tooling sees it: `openapi-spec-validator` accepts it, and
`openapi-python-client` generates every model from it, and the generated client talks to the live server."""

from __future__ import annotations

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
from openapi_spec_validator import OpenAPIV31SpecValidator

from tests.conftest import MakeWorkspace

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


async def test_generated_client_has_every_model_and_works_against_the_server(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, tmp_path: Path
) -> None:
    doc = await served_document(http)
    (tmp_path / "openapi.json").write_text(json.dumps(doc))
    (tmp_path / "config.json").write_text(json.dumps({"package_name_override": PACKAGE, "post_hooks": []}))
    generated = subprocess.run(
        [
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
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    assert "Warning" not in generated.stdout, generated.stdout

    sys.path.insert(0, str(tmp_path))
    try:
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]
        client_pkg: Any = importlib.import_module(PACKAGE)
        models: Any = importlib.import_module(f"{PACKAGE}.models")
        labels_api: Any = importlib.import_module(f"{PACKAGE}.api.labels")
        leads_api: Any = importlib.import_module(f"{PACKAGE}.api.leads")
        importlib.import_module(f"{PACKAGE}.api.labels.create_label")
        importlib.import_module(f"{PACKAGE}.api.labels.list_labels")
        importlib.import_module(f"{PACKAGE}.api.leads.create_lead")
    finally:
        sys.path.remove(str(tmp_path))

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
