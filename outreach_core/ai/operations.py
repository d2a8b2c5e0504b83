"""Setting and removing the workspace's own AI key (owners and admins; DESIGN section 10)."""

from __future__ import annotations

from outreach_core.ai.keys import seal
from outreach_core.ai.schemas import AiKey, SetAiKeyIn
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import workspaces


async def set_ai_key(ctx: WorkspaceContext, body: SetAiKeyIn, prepared: None) -> AiKey:
    """Use the workspace's own OpenAI or Google AI key instead of the server's, for reply labels, writing
    and website drafts.

    The key is checked with one small request to the provider first and refused (422) when the provider
    rejects it; it is stored encrypted and never shown again (`ownAiKey` names only the provider). Drafts
    made with it do not count against the plan's AI draft allowance. Replaces any key set before. Owners
    and admins only."""
    await ctx.conn.execute(
        scoped(ctx, workspaces)
        .update()
        .values(own_ai_key=body.provider, ai_key_encrypted=seal(ctx.settings, body.key))
    )
    return AiKey(own_ai_key=body.provider)


async def delete_ai_key(ctx: WorkspaceContext) -> AiKey:
    """Remove the workspace's own AI key: the server's AI (if it has one) is used again, and drafts count
    against the plan's allowance. Owners and admins only."""
    await ctx.conn.execute(scoped(ctx, workspaces).update().values(own_ai_key=None, ai_key_encrypted=None))
    return AiKey(own_ai_key=None)
