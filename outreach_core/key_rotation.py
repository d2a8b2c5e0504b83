"""Key rotation: every stored secret moved to the current key (`outreach keys reencrypt`, docs/mailboxes.md
"Passwords at rest").

After the operator sets a new `OUTREACH_SECRET_KEY` and lists the old one in `OUTREACH_SECRET_KEY_PREVIOUS`,
stored values keep decrypting; this sweep re-encrypts each one written under a previous key so that the old
key can then be removed. It covers every encrypted column: mailbox passwords, the OAuth tokens of Google and
Microsoft mailboxes, the sending IPs' proxy URLs (with their credentials), webhook secrets (current and the
one kept during a secret rotation), workspaces' own AI keys and the PKCE verifiers of pending mailbox
sign-ins. A value already under the current key is left as it is (running the command twice changes
nothing more); a value no listed key decrypts is left as it is and counted, by column, with its row ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Column, Table

from outreach_core.ai.keys import AI_KEY
from outreach_core.kernel.context import SystemContext, system_scope
from outreach_core.kernel.crypto import MAILBOX_PASSWORD, UndecryptableSecret, is_current, reencrypt
from outreach_core.kernel.db.tables import mailbox_oauth_states, mailboxes, sending_ips, webhooks, workspaces
from outreach_core.mailboxes.oauth_connect import PKCE_VERIFIER
from outreach_core.mailboxes.oauth_tokens import OAUTH_TOKENS
from outreach_core.mailboxes.routes import PROXY_SECRET
from outreach_core.webhooks.rules import SECRET_PURPOSE

ENCRYPTED: tuple[tuple[Table, str, bytes], ...] = (
    (mailboxes, "password_encrypted", MAILBOX_PASSWORD),
    (mailboxes, "oauth_encrypted", OAUTH_TOKENS),
    (sending_ips, "proxy_encrypted", PROXY_SECRET),
    (webhooks, "secret_encrypted", SECRET_PURPOSE),
    (webhooks, "previous_secret_encrypted", SECRET_PURPOSE),
    (workspaces, "ai_key_encrypted", AI_KEY),
    (mailbox_oauth_states, "verifier_encrypted", PKCE_VERIFIER),
)
"""Every encrypted column with the purpose its key is derived for (tests/test_key_rotation.py checks that
no `*_encrypted` column of the schema is missing here)."""


@dataclass
class ColumnSweep:
    column: str  # table.column
    moved: int = 0  # re-encrypted under the current key
    current: int = 0  # already under it
    undecryptable: list[str] = field(default_factory=list)  # row ids no listed key decrypts


async def reencrypt_all(ctx: SystemContext) -> list[ColumnSweep]:
    """Re-encrypt every stored secret written under a previous key with the current key, in this
    transaction; one `ColumnSweep` per encrypted column."""
    out = []
    for table, name, purpose in ENCRYPTED:
        column: Column[str] = table.c[name]
        key = table.c.id
        sweep = ColumnSweep(f"{table.name}.{name}")
        scope = system_scope(table)
        rows = (await ctx.conn.execute(scope.select(key, column).where(column.is_not(None)))).all()
        for row_id, token in rows:
            if is_current(ctx.settings, token, purpose):
                sweep.current += 1
                continue
            try:
                moved = reencrypt(ctx.settings, token, purpose)
            except UndecryptableSecret:
                sweep.undecryptable.append(str(row_id))
                continue
            await ctx.conn.execute(scope.update().where(key == row_id).values({name: moved}))
            sweep.moved += 1
        out.append(sweep)
    return out
