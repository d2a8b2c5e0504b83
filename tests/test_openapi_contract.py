"""Schemathesis fuzzes every operation of the served OpenAPI document, with positive and negative data, on
real objects and on ids that do not exist, and finds no 500, no status the document does not list and no
response that contradicts the document; and the API accepts the requests the document calls valid.

This is a test of the suite rather than a separate step of `.ci/run`: it needs what the suite's fixtures
start (the migrated database of the engine under test, the DNS server, a served app with the rate limit
raised), so it runs on SQLite and on PostgreSQL with the rest, and `make test` runs it locally as CI does.

The server is the whole composed app behind a real uvicorn on loopback, as `outreach serve` runs it, fed
the document it serves itself (`/api/v1/openapi.json`), with a real API key of a workspace that has one of
everything a path can name (`tests/real_objects.py`): most cases call the operation on those objects, the
rest on the ids schemathesis generates. Generation is seeded (`derandomize`): the same cases on every run;
`OUTREACH_FUZZ_SEED=<n>` explores others, `OUTREACH_FUZZ_EXAMPLES=<n>` changes how many per operation.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, seed, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from outreach_app.adapters import MailLoginClient
from outreach_app.asgi import build_app
from outreach_core.kernel.runtime import Runtime
from outreach_core.workspace.setup import init_workspace
from tests.conftest import WorkspaceHandle, free_port, served_ports, serving
from tests.dns_server import DnsServer
from tests.real_objects import RealObjects, make_real_objects, path_values

EXAMPLES = int(os.environ.get("OUTREACH_FUZZ_EXAMPLES", "25"))
SEED = os.environ.get("OUTREACH_FUZZ_SEED")
CHECKS = [not_a_server_error, status_code_conformance, response_schema_conformance]

COMPARISONS = {
    "PATCH /campaigns/{id}": {"windowEnd": "windowStart", "endOn": "startOn"},
    "PATCH /mailboxes/{id}": {"limits": "maxGapS"},
    "POST /leads/import/csv": {"csv": "map", "map": "csv"},
}
"""The only rules JSON Schema cannot state: one field compared with another (a window that ends before it
starts, an end date before the start date, minGapS above maxGapS), often with the stored value of the other,
and a file's text read against the columns `map` names (a CSV file needs a header row naming the email
column, and `map` may name only columns the header has). The document describes each (the field's
description names the other); a schema-valid request refused for one of these, and for nothing else, is
answered 422 naming the field, as the description says."""


@schemathesis.check
def accepts_valid_data(ctx: Any, response: Any, case: schemathesis.Case) -> bool | None:
    """`positive_data_acceptance`, except a 422 for a comparison of two fields (`COMPARISONS`) only."""
    if response.status_code == 422:
        error = response.json()["error"]
        fields = {f["path"] for f in error["details"].get("fields", [])}
        if fields and fields <= COMPARISONS.get(case.operation.label, {}).keys():
            return None
    return positive_data_acceptance(ctx, response, case)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
async def fuzz_server(runtime: Runtime, dns_server: DnsServer) -> AsyncIterator[str]:
    """The app on its own port, sharing the session's database. Its mail logins refuse loopback and private
    hosts (generated hosts such as "0" or "localhost" must not reach this machine's ports), with a short
    timeout; the rate limit is the session's, raised far above what the fuzzer sends."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    app_settings = runtime.settings.model_copy(update={"public_url": base})
    assert app_settings.rate_limit_per_minute >= 1_000_000 and app_settings.rate_limit_burst >= 1_000_000
    ports = served_ports(app_settings, dns_server, mail=MailLoginClient(timeout_s=2.0, allow_private=False))
    app = build_app(Runtime(app_settings, engine=runtime.engine, ports=ports), flush_usage=False)
    async with serving(app, port) as url:
        yield url


@pytest.fixture(scope="module")
async def fuzz_schema(fuzz_server: str) -> Any:
    # schemathesis fetches with a blocking client: from a thread, so that this loop keeps serving it
    return await asyncio.to_thread(schemathesis.openapi.from_url, f"{fuzz_server}/api/v1/openapi.json")


@dataclass
class Fixture:
    """A workspace with one of everything, and its owner's API key."""

    api_key: str
    objects: RealObjects


_workspaces = itertools.count(1)


async def _fixture(fuzz_server: str, runtime: Runtime) -> Fixture:
    n = next(_workspaces)
    email = f"fuzz{n}-{os.getpid()}@example.com"
    made = await runtime.system(
        init_workspace,
        email=email,
        name="Fuzz",
        workspace=f"Fuzz {n}",
        slug=f"fuzz-{os.getpid()}-{n}",
        plan="growth",
    )
    ws = WorkspaceHandle(runtime, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", email)
    async with httpx.AsyncClient(base_url=fuzz_server, timeout=30) as http:
        return Fixture(ws.api_key, await make_real_objects(http, ws))


@pytest.fixture(scope="module")
async def shared_fixture(fuzz_server: str, runtime: Runtime) -> Fixture:
    return await _fixture(fuzz_server, runtime)


def _cases() -> list[Any]:
    """Every operation with positive data, and with negative data where it takes any input; whether its
    calls may remove or replace the objects they name (those get a workspace of their own, the others share
    one)."""
    from http_api.app import api_endpoints
    from outreach_core.catalog import all_files

    cases = []
    for e in api_endpoints():
        label = f"{e.method} {e.path}"
        own = e.destructive or e.method in ("DELETE", "PUT")
        cases.append(pytest.param(label, GenerationMode.POSITIVE, own, id=f"positive {label}"))
        if e.path_params or e.query or e.body:
            cases.append(pytest.param(label, GenerationMode.NEGATIVE, own, id=f"negative {label}"))
    for f in all_files():  # the charts and CSV exports (read-only)
        label = f"GET {f.path}"
        cases.append(pytest.param(label, GenerationMode.POSITIVE, False, id=f"positive {label}"))
        if f.source.path_params or f.source.query:
            cases.append(pytest.param(label, GenerationMode.NEGATIVE, False, id=f"negative {label}"))
    return cases


@pytest.mark.parametrize(("label", "mode", "own_workspace"), _cases())
async def test_operation_honours_the_document(
    label: str,
    mode: GenerationMode,
    own_workspace: bool,
    fuzz_server: str,
    fuzz_schema: Any,
    shared_fixture: Fixture,
    runtime: Runtime,
) -> None:
    operation = fuzz_schema.find_operation_by_label(label)
    assert operation is not None, f"{label} is missing from the OpenAPI document"
    fixture = await _fixture(fuzz_server, runtime) if own_workspace else shared_fixture
    real = path_values(operation.path, fixture.objects)
    checks = CHECKS + ([accepts_valid_data] if mode is GenerationMode.POSITIVE else [])
    headers = {"Authorization": f"Bearer {fixture.api_key}"}

    @given(case=operation.as_strategy(generation_mode=mode), on_real_objects=st.booleans())
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=SEED is None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case, on_real_objects: bool) -> None:
        # An empty list is sent as no parameter at all: such a "negative" case cannot be sent as generated.
        assume(all(value != [] for value in (case.query or {}).values()))
        if on_real_objects and real:
            case.path_parameters = {**case.path_parameters, **real}
        case.call_and_validate(base_url=f"{fuzz_server}/api/v1", headers=headers, checks=checks)

    if SEED is not None:
        run = seed(int(SEED))(run)
    await asyncio.to_thread(run)


async def test_the_comparisons_are_described_in_the_document(fuzz_schema: Any) -> None:
    """Each rule `COMPARISONS` lets through is stated where a reader of the document looks: the field's (or
    its object's) description names the field it is compared with."""
    raw = fuzz_schema.raw_schema
    schemas = raw["components"]["schemas"]

    def described(node: Any) -> str:
        while "$ref" in node:
            node = schemas[node["$ref"].rsplit("/", 1)[-1]]
        text = node.get("description", "")
        return text + " ".join(described(p) for p in node.get("properties", {}).values())

    for label, rules in COMPARISONS.items():
        method, path = label.split(" ")
        body = raw["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]["schema"]
        properties = schemas[body["$ref"].rsplit("/", 1)[-1]]["properties"]
        for field, other in rules.items():
            assert other in described(properties[field]), (label, field)
