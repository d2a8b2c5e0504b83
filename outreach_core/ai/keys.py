"""The workspace's own AI key (`ownAiKey`): stored encrypted like mailbox passwords (`crypto.py`, a purpose
of its own), never returned, and chosen over the server's AI endpoint for every AI use of the workspace:
reply labels, writing, offer drafts (DESIGN section 9)."""

from __future__ import annotations

from dataclasses import dataclass

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import UndecryptableSecret, decrypt, encrypt
from outreach_core.kernel.db.tables import workspaces
from outreach_core.kernel.ports import AiChat, Ports
from outreach_core.kernel.settings import Settings

AI_KEY = b"outreach workspace ai key v1"


@dataclass(frozen=True)
class OwnKey:
    provider: str
    key: str


def seal(settings: Settings, key: str) -> str:
    return encrypt(settings, key, AI_KEY)


async def own_key(ctx: WorkspaceContext) -> OwnKey | None:
    """The caller's workspace's own AI key, decrypted; None when it has none (or no configured secret key
    decrypts it any more: the server's AI is used, as without a key)."""
    row = (
        await ctx.conn.execute(
            scoped(ctx, workspaces).select(workspaces.c.own_ai_key, workspaces.c.ai_key_encrypted)
        )
    ).one()
    if row.own_ai_key is None or row.ai_key_encrypted is None:
        return None
    try:
        return OwnKey(row.own_ai_key, decrypt(ctx.settings, row.ai_key_encrypted, AI_KEY))
    except UndecryptableSecret:
        return None


@dataclass(frozen=True)
class AiChoice:
    """The AI a workspace uses now: its own key's client, else the server's; `chat` None when neither."""

    chat: AiChat | None
    own_key: bool


def choose_ai(ports: Ports, key: OwnKey | None) -> AiChoice:
    """The workspace's own key when it has one (and the server can make clients for it), else the server's
    AI endpoint."""
    if key is not None and ports.ai_keys is not None:
        return AiChoice(ports.ai_keys.client(key.provider, key.key), True)
    return AiChoice(ports.ai, False)
