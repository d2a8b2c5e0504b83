"""Explicit nulls, as a client sends them: every field of every PATCH body of the served OpenAPI document,
sent alone as `null` to a real object. Where the document says the field cannot be null (a standard
validator's verdict), the answer is 422 `invalid_input` naming the field, and nothing changes; where it
says null is allowed, the value is cleared (200). Never a 500 (docs/api.md, "Absent and null")."""

from __future__ import annotations

from typing import Any

import httpx
import jsonschema

from tests.conftest import MakeWorkspace
from tests.http.test_openapi_tools import served_document
from tests.real_objects import make_real_objects, path_values


def admits_null(doc: dict[str, Any], schema: dict[str, Any]) -> bool:
    """A standard JSON Schema 2020-12 validator's verdict on `null` for a property of the document."""
    root = {**schema, "components": doc["components"]}  # the document's `#/components/...` refs resolve
    return bool(jsonschema.Draft202012Validator(root).is_valid(None))


def body_properties(doc: dict[str, Any], operation: dict[str, Any]) -> dict[str, Any]:
    schema = operation["requestBody"]["content"]["application/json"]["schema"]
    target = schema
    while "$ref" in target:
        ref = target["$ref"]
        target = doc
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
    return dict(target.get("properties", {}))


def cleared(answer: Any, name: str) -> bool | None:
    """Whether the changed object in a PATCH answer (the answer itself, or one object inside it, such as
    `mailbox`) shows `name` empty; None when the answer does not show that field."""
    for candidate in [answer, *(v for v in answer.values() if isinstance(v, dict))]:
        if name in candidate:
            return candidate[name] in (None, {}, [])
    return None


def fill(path: str, values: dict[str, str]) -> str:
    for name, value in values.items():
        path = path.replace("{" + name + "}", value)
    assert "{" not in path, path
    return path


async def test_every_patch_field_sent_as_null_is_refused_or_applied_as_the_document_says(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    doc = await served_document(http)
    ws = await make_workspace()
    objects = await make_real_objects(http, ws)
    probed: list[str] = []
    problems: list[str] = []
    for template, item in doc["paths"].items():
        operation = item.get("patch")
        if operation is None:
            continue
        url = "/api/v1" + fill(template, path_values(template, objects))
        for name, schema in body_properties(doc, operation).items():
            probed.append(f"PATCH {template} {name}")
            response = await http.patch(url, headers=ws.headers, json={name: None})
            where = f"PATCH {template} {{{name!r}: null}}"
            if response.status_code >= 500:
                problems.append(f"{where}: {response.status_code} {response.text}")
                continue
            if admits_null(doc, schema):
                if response.status_code != 200:
                    problems.append(f"{where}: the document allows null, got {response.text}")
                elif cleared(response.json(), name) is False:
                    problems.append(f"{where}: null is allowed, so it clears the value; got {response.text}")
                continue
            body = response.json()
            paths = [f["path"] for f in body.get("error", {}).get("details", {}).get("fields", [])]
            if response.status_code != 422 or body["error"]["code"] != "invalid_input" or name not in paths:
                problems.append(f"{where}: the document refuses null, got {response.status_code} {paths}")
    assert len(probed) > 50, probed  # every PATCH route of the API, each with its fields
    assert problems == []


async def test_a_refused_null_changes_nothing(http: httpx.AsyncClient, make_workspace: MakeWorkspace) -> None:
    ws = await make_workspace()
    objects = await make_real_objects(http, ws)
    campaign = f"/api/v1/campaigns/{objects['campaigns']}"
    before = (await http.get(campaign, headers=ws.headers)).json()

    step = await http.patch(
        f"{campaign}/steps/{objects['stepId']}", headers=ws.headers, json={"waitDays": 5, "sameThread": None}
    )
    variant = await http.patch(
        f"{campaign}/variants/{objects['variantId']}",
        headers=ws.headers,
        json={"subject": "Changed", "active": None, "weight": None},
    )

    assert step.status_code == 422
    assert [f["path"] for f in step.json()["error"]["details"]["fields"]] == ["sameThread"]
    assert variant.status_code == 422
    assert sorted(f["path"] for f in variant.json()["error"]["details"]["fields"]) == ["active", "weight"]
    assert (await http.get(campaign, headers=ws.headers)).json()["steps"] == before["steps"]
