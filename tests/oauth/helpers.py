"""Helpers shared by the OAuth tests (not fixtures: the fixtures live in tests/conftest.py)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import uuid
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, TypeVar

from mcp import Client

from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.oauth import server as core
from outreach_core.oauth.schemas import IssuedTokens

T = TypeVar("T")
McpSession = Callable[..., AbstractAsyncContextManager[Client]]
"""The `mcp_session` fixture: `async with mcp_session(token) as client: ...`."""
REDIRECT_URI = "http://127.0.0.1:9/callback"


def pkce_pair() -> tuple[str, str]:
    """A random PKCE verifier and its S256 challenge."""
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def client_info(name: str | None = "Test App", **extra: Any) -> dict[str, Any]:
    """Client information as the SDK's registration handler would store it (a public client)."""
    info: dict[str, Any] = {
        "client_id": str(uuid.uuid4()),
        "redirect_uris": [REDIRECT_URI],
        "token_endpoint_auth_method": "none",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        **extra,
    }
    if name is not None:
        info["client_name"] = name
    return info


async def register(runtime: Runtime, name: str | None = "Test App", **extra: Any) -> str:
    info = client_info(name, **extra)
    await runtime.system(core.register_client, info)
    return str(info["client_id"])


async def issue_code(runtime: Runtime, api_key: str, client_id: str, challenge: str | None = None) -> str:
    return await runtime.system(
        core.issue_authorization_code,
        api_key=api_key,
        client_id=client_id,
        redirect_uri=REDIRECT_URI,
        redirect_uri_explicit=True,
        code_challenge=challenge or pkce_pair()[1],
        scopes=[],
        resource=runtime.settings.mcp_resource_url,
    )


async def connect(runtime: Runtime, api_key: str, client_id: str) -> IssuedTokens:
    """Consent with `api_key` and spend the code: a fresh token pair for `client_id`."""
    code = await issue_code(runtime, api_key, client_id)
    return await runtime.system(core.exchange_authorization_code, client_id, code)


async def run_at(
    runtime: Runtime, when: datetime, fn: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any
) -> T:
    """Run a system function in its own transaction as if the time were `when` (same database)."""
    shifted = Runtime(runtime.settings, engine=runtime.engine, ports=Ports(clock=FixedClock(when)))
    return await shifted.system(fn, *args, **kwargs)
