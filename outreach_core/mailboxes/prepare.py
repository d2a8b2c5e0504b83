"""The mailbox endpoints' pre-transaction steps (`Endpoint.prepare`): SMTP and IMAP login tests and MX
lookups, network I/O that never runs inside a transaction. The runtime runs each step first, outside any
transaction (it may read in short read transactions of its own, `outside.read`); its result reaches the
operation as `prepared`, and the operation re-checks what may have changed meanwhile."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

from outreach_core.kernel.crypto import UndecryptableSecret
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import InvalidInput, OAuthUnavailable
from outreach_core.kernel.ports import MailServer, Ports
from outreach_core.mailboxes import rules
from outreach_core.mailboxes.oauth_tokens import LoginUnavailable, login_for
from outreach_core.mailboxes.schemas import (
    CreateMailboxIn,
    DetectQuery,
    ImportMailboxesIn,
    LoginTest,
    UpdateMailboxIn,
)
from outreach_core.mailboxes.servers import domain_of, login_password, servers_for, stored_or_new
from outreach_core.mailboxes.store import check_new, ensure_room, import_state, mailbox_row


@dataclass(frozen=True)
class RowOutcome:
    status: Any  # "tested" or a final import status ("exists", "skipped")
    test: LoginTest | None = None
    error: str | None = None


@dataclass(frozen=True)
class ImportPlan:
    outcomes: list[RowOutcome] = field(default_factory=list)


@dataclass(frozen=True)
class MxLookup:
    hosts: list[str]
    failed: bool = False


async def prepare_create_mailbox(outside: Outside, body: CreateMailboxIn) -> LoginTest:
    """Refuse a taken address or a full plan before spending seconds on logins, then test both."""
    await outside.read(check_new, body.email)
    smtp, imap = servers_for(body.provider, body.email, body.smtp, body.imap)
    return await _run_logins(outside.ports, smtp, imap, login_password(body))


async def prepare_test_mailbox(outside: Outside, body: CreateMailboxIn) -> LoginTest:
    smtp, imap = servers_for(body.provider, body.email, body.smtp, body.imap)
    return await _run_logins(outside.ports, smtp, imap, login_password(body))


async def prepare_import_mailboxes(outside: Outside, body: ImportMailboxesIn) -> ImportPlan:
    """Rows already connected or repeated are settled without a test; the rest are tested, at most
    `IMPORT_CONCURRENCY` at a time, after checking the plan has a slot for each."""
    taken, slots = await outside.read(import_state, [row.email for row in body.rows])
    seen: set[str] = set()
    outcomes: list[RowOutcome | None] = []
    for row in body.rows:
        if row.email in seen:
            outcomes.append(RowOutcome("skipped", error="the same email appears earlier in the rows"))
        elif row.email in taken:
            outcomes.append(RowOutcome("exists", error="already connected"))
        else:
            outcomes.append(None)
        seen.add(row.email)
    ensure_room(slots, sum(1 for o in outcomes if o is None))

    limit = asyncio.Semaphore(rules.IMPORT_CONCURRENCY)

    async def test(index: int) -> None:
        row = body.rows[index]
        smtp, imap = servers_for("smtp", row.email, row.smtp, row.imap)
        async with limit:
            result = await _run_logins(outside.ports, smtp, imap, row.password.get_secret_value())
        outcomes[index] = RowOutcome("tested", test=result)

    await asyncio.gather(*(test(i) for i, o in enumerate(outcomes) if o is None))
    return ImportPlan([o for o in outcomes if o is not None])


async def prepare_update_mailbox(outside: Outside, id: str, body: UpdateMailboxIn) -> LoginTest | None:
    """New credentials are tested against the new servers, or the stored ones where none are given."""
    if body.credentials is None:
        return None
    row = await outside.read(mailbox_row, id)
    if row.oauth_encrypted is not None:
        raise InvalidInput.field(
            "credentials",
            f"a {row.provider} mailbox signs in with OAuth and has no password: connect it again with "
            "start_mailbox_oauth",
        )
    if row.provider != "smtp" and (body.credentials.smtp is not None or body.credentials.imap is not None):
        raise InvalidInput.field("credentials", f"a {row.provider} mailbox takes a new password only")
    smtp, imap = stored_or_new(row, body.credentials.smtp, body.credentials.imap)
    return await _run_logins(outside.ports, smtp, imap, body.credentials.password.get_secret_value())


async def prepare_retest_mailbox(outside: Outside, id: str) -> LoginTest:
    row = await outside.read(mailbox_row, id)
    smtp, imap = stored_or_new(row, None, None)
    try:
        smtp, password = await login_for(
            outside.settings,
            outside.ports.oauth,
            outside.ports.clock.now(),
            id,
            smtp,
            row.password_encrypted,
            row.oauth_encrypted,
        )
    except UndecryptableSecret:
        reason = "the stored password cannot be decrypted with the server's secret keys; send it again"
        return LoginTest(ok=False, smtp=reason, imap=reason)
    except LoginUnavailable as exc:
        if not exc.revoked:  # a passing outage of the provider says nothing about the mailbox
            raise OAuthUnavailable(
                f"{exc.reason[:1].upper()}{exc.reason[1:]}. Nothing was changed."
            ) from None
        return LoginTest(ok=False, smtp=exc.reason, imap=exc.reason)
    imap = replace(imap, auth=smtp.auth)
    return await _run_logins(outside.ports, smtp, imap, password)


async def prepare_detect_mailbox(outside: Outside, query: DetectQuery) -> MxLookup:
    domain = domain_of(query.email)
    if rules.provider_by_domain(domain) is not None:
        return MxLookup([])
    dns = outside.ports.dns
    if dns is None:
        raise RuntimeError("no DNS resolver is configured (Ports.dns): mail servers cannot be looked up")
    try:
        answers = await dns.lookup(domain, "MX")
    except Exception:  # timeouts, server failures: the caller learns the lookup failed, not why
        return MxLookup([], failed=True)
    return MxLookup(rules.mx_hosts(answers))


async def _run_logins(ports: Ports, smtp: MailServer, imap: MailServer, password: str) -> LoginTest:
    """Both login tests at once through the `MailLogin` port."""
    mail = ports.mail
    if mail is None:
        raise RuntimeError("no mail login adapter is configured (Ports.mail): logins cannot be tested")
    smtp_error, imap_error = await asyncio.gather(
        mail.test_smtp(smtp, password), mail.test_imap(imap, password)
    )
    return LoginTest(ok=smtp_error is None and imap_error is None, smtp=smtp_error, imap=imap_error)
