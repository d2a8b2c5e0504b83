"""Connecting a Google or Microsoft mailbox over OAuth (issue 32 item 3, docs/mailboxes.md "OAuth").

`start_mailbox_oauth` (POST /mailboxes/oauth/start) stores a single-use `state` (10 minutes) bound to the
workspace and the person, with a PKCE verifier (S256), and returns the provider's authorization URL. The
provider sends the browser back to GET /oauth/mailbox/callback (`http_api/mailbox_oauth_page.py`), which
calls, in order: `take_state` (one transaction: the state is deleted whatever happens next),
`exchange_code` (the token endpoint, then the SMTP and IMAP XOAUTH2 logins; no transaction) and
`save_oauth_mailbox` (one transaction, as the person who started it).
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import and_

from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import decrypt, encrypt
from outreach_core.kernel.db.tables import mailbox_oauth_states, mailboxes, members
from outreach_core.kernel.errors import Conflict, NotFound, OAuthProviderNotConfigured
from outreach_core.kernel.ports import OAuthRefused, OAuthUnavailable, Ports
from outreach_core.kernel.settings import Settings
from outreach_core.mailboxes.oauth_providers import (
    OAuthProvider,
    id_token_email,
    oauth_servers,
    provider_config,
)
from outreach_core.mailboxes.oauth_tokens import Tokens, oauth_client, seal_tokens, tokens_from_response
from outreach_core.mailboxes.routes import route_new_mailbox
from outreach_core.mailboxes.schemas import LoginTest, MailboxOAuthUrl, StartMailboxOAuthIn
from outreach_core.mailboxes.store import ensure_room, new_mailbox_row, slots_left

STATE_TTL = timedelta(minutes=10)
PKCE_VERIFIER = b"outreach mailbox oauth pkce v1"


def state_key(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()


def state_workspace(state: str) -> str | None:
    """The workspace a state names (`<workspace id>.<random>`), or None for a malformed one."""
    workspace_id, dot, rest = state.partition(".")
    return workspace_id if dot and rest and 0 < len(workspace_id) <= 40 and len(state) <= 200 else None


async def start_mailbox_oauth(ctx: WorkspaceContext, body: StartMailboxOAuthIn) -> MailboxOAuthUrl:
    """Start connecting a Google (provider google_oauth) or Microsoft 365 (provider microsoft) mailbox with
    the provider's sign-in: returns a URL for the person to open in a browser within 10 minutes. After they
    sign in and allow access, the mailbox is tested (SMTP and IMAP) and saved in this workspace, and the
    browser shows what happened; it then appears in list_mailboxes. No password is needed. Refused with
    oauth_provider_not_configured when the server's operator has not set up that provider (connect the
    mailbox with create_mailbox instead: google_app with an app password, or smtp)."""
    config = provider_config(ctx.settings, body.provider)
    if config is None:
        raise OAuthProviderNotConfigured(
            f"{body.provider} mailboxes are not configured on this server: its operator sets "
            f"OUTREACH_{'GOOGLE' if body.provider == 'google_oauth' else 'MICROSOFT'}_CLIENT_ID and _SECRET. "
            "Connect the mailbox with create_mailbox instead.",
            {"provider": body.provider},
        )
    states = scoped(ctx, mailbox_oauth_states)
    await ctx.conn.execute(states.delete().where(mailbox_oauth_states.c.expires_at < ctx.now))
    state = f"{ctx.workspace_id}.{secrets.token_urlsafe(32)}"
    verifier = secrets.token_urlsafe(64)
    await ctx.conn.execute(
        states.insert(
            {
                "id": state_key(state),
                "user_id": ctx.user_id,
                "role": ctx.principal.role,
                "provider": body.provider,
                "verifier_encrypted": encrypt(ctx.settings, verifier, PKCE_VERIFIER),
                "expires_at": ctx.now + STATE_TTL,
            }
        )
    )
    url = oauth_client(ctx.ports).authorization_url(config, state=state, code_verifier=verifier)
    return MailboxOAuthUrl(url=url)


@dataclass(frozen=True)
class TakenState:
    user_id: str
    role: str
    provider: OAuthProvider
    verifier: str


async def take_state(ctx: WorkspaceContext, state: str) -> TakenState:
    """Delete the state and return what it was bound to, with the person's role today; NotFound when
    unknown, used or expired, or when the person is no longer a member."""
    states = scoped(ctx, mailbox_oauth_states)
    key = state_key(state)
    row = (await ctx.conn.execute(states.select().where(mailbox_oauth_states.c.id == key))).one_or_none()
    if row is None:
        raise NotFound("sign-in request")
    deleted = await ctx.conn.execute(states.delete().where(mailbox_oauth_states.c.id == key))
    if deleted.rowcount != 1 or row.expires_at < ctx.now:
        raise NotFound("sign-in request")
    member = (
        await ctx.conn.execute(
            scoped(ctx, members).select(members.c.role).where(members.c.user_id == row.user_id)
        )
    ).one_or_none()
    if member is None:  # the person left the workspace since starting: nothing is saved for them
        raise NotFound("sign-in request")
    provider: OAuthProvider = "microsoft" if row.provider == "microsoft" else "google_oauth"
    return TakenState(
        row.user_id, member.role, provider, decrypt(ctx.settings, row.verifier_encrypted, PKCE_VERIFIER)
    )


@dataclass(frozen=True)
class Exchanged:
    email: str | None
    tokens: Tokens | None
    test: LoginTest
    problem: str | None = None  # why nothing can be saved (no address, refused code ...)


async def exchange_code(settings: Settings, ports: Ports, taken: TakenState, code: str) -> Exchanged:
    """Trade the code for tokens (PKCE), read the address from the ID token, test both XOAUTH2 logins."""
    config = provider_config(settings, taken.provider)
    failed = LoginTest(ok=False, smtp=None, imap=None)
    if config is None:
        return Exchanged(None, None, failed, f"{taken.provider} is no longer configured on this server")
    now_s = ports.clock.now().timestamp()
    try:
        answer = await oauth_client(ports).exchange_code(config, code=code, code_verifier=taken.verifier)
    except OAuthRefused as exc:
        return Exchanged(None, None, failed, f"the provider refused the sign-in ({exc.error})")
    except OAuthUnavailable:
        return Exchanged(None, None, failed, "the provider's token endpoint did not answer usably; try again")
    email = id_token_email(str(answer.get("id_token") or ""), config.client_id, now_s)
    if email is None:
        return Exchanged(None, None, failed, "the provider's answer named no email address (ID token)")
    if not answer.get("refresh_token") or not answer.get("access_token"):
        return Exchanged(email, None, failed, "the provider granted no offline access (refresh token)")
    tokens = tokens_from_response(taken.provider, answer, now_s, "")
    smtp, imap = oauth_servers(settings, taken.provider, email)
    mail = ports.mail
    if mail is None:
        raise RuntimeError("no mail login adapter is configured (Ports.mail): logins cannot be tested")
    smtp_error, imap_error = await asyncio.gather(
        mail.test_smtp(smtp, tokens.access_token), mail.test_imap(imap, tokens.access_token)
    )
    test = LoginTest(ok=smtp_error is None and imap_error is None, smtp=smtp_error, imap=imap_error)
    return Exchanged(email, tokens, test)


async def save_oauth_mailbox(
    ctx: WorkspaceContext, provider: OAuthProvider, email: str, tokens: Tokens
) -> str:
    """Save a new OAuth mailbox (routed like every new mailbox), or give one already connected with the
    same provider its new grant (it was `error` after a revoked grant: it is active again). Returns its
    id. Conflict when the address is connected with a password; quota_exceeded without a slot."""
    mb = scoped(ctx, mailboxes)
    sealed = seal_tokens(ctx.settings, tokens)
    found = (await ctx.conn.execute(mb.select().where(mailboxes.c.email == email))).one_or_none()
    if found is not None:
        if found.provider != provider:
            raise Conflict(
                f"The mailbox {email} is connected already as {found.provider}; delete it first.",
                {"email": email, "id": found.id},
            )
        values: dict[str, Any] = {"oauth_encrypted": sealed, "last_tested_at": ctx.now, "updated_at": ctx.now}
        if found.status == "error":
            values |= {"status": "active", "status_reason": None}
        await ctx.conn.execute(mb.update().where(and_(mailboxes.c.id == found.id)).values(**values))
        return str(found.id)
    ensure_room(await slots_left(ctx), 1)
    smtp, imap = oauth_servers(ctx.settings, provider, email)
    row = new_mailbox_row(ctx, email, provider, None, 30, smtp, imap, "")
    row["oauth_encrypted"] = sealed
    await ctx.conn.execute(mb.insert(row))
    await route_new_mailbox(ctx, row["id"])
    return str(row["id"])
