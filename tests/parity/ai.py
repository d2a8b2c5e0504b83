"""REST/MCP parity cases and foreign cases of the workspace's own AI key (the session server has no
provider to check the key with: it is saved as given)."""

from __future__ import annotations

import httpx

from tests.conftest import WorkspaceHandle
from tests.parity.common import Args, Foreign, Prepare


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


async def _their_key(http: httpx.AsyncClient, theirs: WorkspaceHandle) -> None:
    key = {"provider": "google", "key": "g-their-0123456789"}
    saved = await http.put("/api/v1/settings/ai-key", headers=theirs.headers, json=key)
    assert saved.status_code == 200, saved.text


async def their_key_replaced(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Setting my workspace's key leaves theirs as it is."""
    await _their_key(http, theirs)
    return [{"provider": "openai", "key": "sk-mine-0123456789"}]


async def their_key_removed(http: httpx.AsyncClient, mine: WorkspaceHandle, theirs: WorkspaceHandle) -> Args:
    """Removing my workspace's key removes only mine: theirs keeps its key."""
    await _their_key(http, theirs)
    return [{}]


FOREIGN: dict[str, Foreign] = {"set_ai_key": their_key_replaced, "delete_ai_key": their_key_removed}
