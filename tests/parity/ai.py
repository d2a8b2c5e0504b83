"""REST/MCP parity cases of the workspace's own AI key (the session server has no provider to check the
key with: it is saved as given)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Prepare


async def set_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [
        {"provider": "openai", "key": "sk-parity-0123456789"},
        {"provider": "google", "key": "g-parity-0123456789"},
        {"provider": "other", "key": "sk-parity-0123456789"},
        {"provider": "openai", "key": "short"},
    ]


async def delete_args(http: httpx.AsyncClient, ws: WorkspaceHandle) -> Args:
    return [{}, {}]


CASES: dict[str, Prepare] = {"set_ai_key": set_args, "delete_ai_key": delete_args}
