"""Schemathesis runs every operation of the served OpenAPI document, with positive and negative data, and
finds no 500 and no response that contradicts the document."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, assume, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import positive_data_acceptance

from outreach_app.adapters import MailLoginClient
from outreach_app.asgi import build_app
from outreach_core.ports import Ports
from outreach_core.runtime import Runtime
from outreach_core.settings import Settings
from outreach_core.workspace.setup import init_workspace
from tests.conftest import free_port, served_ports
from tests.dns_server import DnsServer


def _owner_key(test_settings: Settings) -> str:
    async def make() -> str:
        rt = Runtime(test_settings)
        try:
            result = await rt.system(
                init_workspace,
                email="fuzz@example.com",
                name="Fuzz",
                workspace="Fuzz",
                slug="fuzz",
                plan="growth",
            )
            return result.apiKey
        finally:
            await rt.dispose()

    return asyncio.run(make())


def _ports(settings: Settings, dns_server: DnsServer) -> Ports:
    """Real adapters as in production: mail logins refuse loopback and private hosts (generated hosts such
    as "0" or "localhost" must not reach the test machine's own ports), with a short timeout."""
    return served_ports(settings, dns_server, mail=MailLoginClient(timeout_s=2.0, allow_private=False))


@pytest.fixture(scope="module")
def fuzz_target(settings: Settings, runtime: Any, dns_server: DnsServer) -> Iterator[tuple[str, str]]:
    """The whole composed app behind a real uvicorn server, in its own thread and event loop (the fuzzer's
    HTTP calls are blocking, so it cannot share the test loop)."""
    key = _owner_key(settings)
    port = free_port()
    app_settings = settings.model_copy(update={"public_url": f"http://127.0.0.1:{port}"})
    server = uvicorn.Server(
        uvicorn.Config(
            build_app(Runtime(app_settings, ports=_ports(app_settings, dns_server))),
            host="127.0.0.1",
            port=port,
            log_config=None,
            access_log=False,
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    yield app_settings.public_url, key
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def fuzz_schema(fuzz_target: tuple[str, str]) -> Any:
    url, _ = fuzz_target
    return schemathesis.openapi.from_url(f"{url}/api/v1/openapi.json")


SEMANTIC_VALIDATION = {
    "POST /leads",
    "PATCH /leads/{id}",
    "PATCH /campaigns/{id}",
    "PUT /campaigns/{id}/sequence",
    "POST /campaigns/{id}/leads",
    "PATCH /mailboxes/{id}",
    "POST /webhooks",
    "PATCH /webhooks/{id}",
    "POST /onboarding/createWorkspace",
    "POST /onboarding/save",
    "POST /onboarding/draftOffer",
    "POST /campaigns/{id}/write",
}
"""Operations that refuse some schema-valid input by meaning, with 422: an address that is not a usable
email (the schema cannot express the normaliser's rules), a country that is not recognised, a time zone
that is not an IANA name, a date that is not on the calendar, a window that ends before it starts, a step
without an active variant, an add-leads request that names no leads, mailbox limits with minGapS above
maxGapS (JSON Schema cannot compare two fields), a webhook URL that is not https or points at a private
address (which depends on the server's OUTREACH_ALLOW_PRIVATE_URLS), a sending domain that is no domain name,
a website URL that is private or not http(s), a write mode without the variantId or angle it needs. Every
other check still applies."""


def _cases() -> list[Any]:
    """Every operation with positive data, and with negative data where it takes any input."""
    from http_api.app import api_endpoints

    cases = []
    for e in api_endpoints():
        label = f"{e.method} {e.path}"
        cases.append(pytest.param(label, GenerationMode.POSITIVE, id=f"positive {label}"))
        if e.path_params or e.query or e.body:
            cases.append(pytest.param(label, GenerationMode.NEGATIVE, id=f"negative {label}"))
    return cases


@pytest.mark.parametrize(("label", "mode"), _cases())
def test_operation_honours_the_document(
    label: str, mode: GenerationMode, fuzz_schema: Any, fuzz_target: tuple[str, str]
) -> None:
    _, key = fuzz_target
    operation = fuzz_schema.find_operation_by_label(label)
    assert operation is not None, f"{label} is missing from the OpenAPI document"

    excluded = [positive_data_acceptance] if label in SEMANTIC_VALIDATION else []

    @given(operation.as_strategy(generation_mode=mode))
    @settings(max_examples=25, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    def run(case: schemathesis.Case) -> None:
        # An empty list is sent as no parameter at all: such a "negative" case cannot be sent as generated.
        assume(all(value != [] for value in (case.query or {}).values()))
        case.call_and_validate(headers={"Authorization": f"Bearer {key}"}, excluded_checks=excluded)

    run()
