from __future__ import annotations

from outreach_core.api_keys.operations import create_api_key, list_api_keys, revoke_api_key
from outreach_core.api_keys.schemas import ApiKeyItem, CreateApiKeyIn, CreatedApiKey, RevokeApiKeyIn
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import api_keys
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok


async def _describe_revoke(ctx: WorkspaceContext, body: RevokeApiKeyIn) -> str:
    k = scoped(ctx, api_keys)
    row = (await ctx.conn.execute(k.select(k.c.name, k.c.start).where(k.c.id == body.id))).one_or_none()
    label = f"“{row.name}” ({row.start}…)" if row else body.id
    return f"Revoke API key {label}? Every client using it stops working immediately."


ENDPOINTS = (
    Endpoint(
        "GET",
        "/api-keys",
        list_api_keys,
        list[ApiKeyItem],
        read_only=True,
        tag="api-keys",
    ),
    Endpoint(
        "POST",
        "/apiKeys/create",
        create_api_key,
        CreatedApiKey,
        body=CreateApiKeyIn,
        tag="api-keys",
    ),
    Endpoint(
        "POST",
        "/apiKeys/revoke",
        revoke_api_key,
        Ok,
        body=RevokeApiKeyIn,
        destructive=True,
        confirm=_describe_revoke,
        tag="api-keys",
        idempotent=True,
    ),
)
