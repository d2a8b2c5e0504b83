"""Mailboxes: connect (with SMTP and IMAP login tests), list, change, test again, delete, detect settings.

Login tests and DNS lookups are network I/O and never run inside a transaction. Each endpoint that needs
them has a `prepare_*` step (`Endpoint.prepare`) that the runtime runs first, outside any transaction; it
may read in short read transactions of its own, and its result arrives in the operation as `prepared`. The
operation then re-checks what may have changed meanwhile (address taken, plan slots) inside its one
transaction. Passwords are encrypted at rest (`outreach_core.kernel.crypto`) and are never part of a response.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from outreach_core.deliverability.schemas import MailboxDns
from outreach_core.deliverability.store import mailbox_dns, register_sending_domains
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.crypto import encrypt
from outreach_core.kernel.db.tables import mailboxes
from outreach_core.kernel.errors import InvalidInput, InvalidState
from outreach_core.kernel.geo import normalize_timezone
from outreach_core.kernel.wire import Ok
from outreach_core.mailboxes import rules
from outreach_core.mailboxes.oauth_providers import microsoft_enabled
from outreach_core.mailboxes.prepare import ImportPlan, MxLookup
from outreach_core.mailboxes.routes import route_new_mailbox, sending_ip_rows
from outreach_core.mailboxes.schemas import (
    CreateMailboxIn,
    CreateMailboxOut,
    DetectOut,
    DetectQuery,
    ImportMailboxesIn,
    ImportMailboxesOut,
    ImportResult,
    LoginTest,
    Mailbox,
    MailboxList,
    PasswordHint,
    RetestOut,
    SendingIp,
    ServerOut,
    ServerSettings,
    UpdateMailboxIn,
    UpdateMailboxOut,
)
from outreach_core.mailboxes.servers import (
    domain_of,
    login_password,
    server_columns,
    servers_for,
    stored_or_new,
)
from outreach_core.mailboxes.store import ensure_new, ensure_room, mailbox_row, new_mailbox_row, slots_left
from outreach_core.mailboxes.warmup_settings import save_warmup, warmup_out, warmup_rows

# --- operations ---------------------------------------------------------------------------------------------


async def list_mailboxes(ctx: WorkspaceContext) -> MailboxList:
    """List the workspace's connected mailboxes, oldest first, with today's computed figures
    (effectiveLimit after ramp-up, rampDay, rampDaysLeft, sentToday in each mailbox's time zone).
    `slotsLeft` is how many more mailboxes the plan allows (null = no limit); `microsoftEnabled` says whether
    Microsoft 365 mailboxes can connect over OAuth on this server (start_mailbox_oauth with provider
    microsoft; otherwise connect them with create_mailbox as provider smtp)."""
    mb = scoped(ctx, mailboxes)
    rows = (await ctx.conn.execute(mb.select().order_by(mailboxes.c.created_at, mailboxes.c.id))).all()
    return MailboxList(
        mailboxes=await _mailboxes(ctx, rows),
        microsoft_enabled=microsoft_enabled(ctx.settings),
        slots_left=await slots_left(ctx),
    )


async def get_mailbox(ctx: WorkspaceContext, id: str) -> Mailbox:
    """One mailbox by id with its settings, status and today's computed figures, and `dns`: the latest
    score, grade and badges of its domain (a sending domain, checked daily). Never shows the password."""
    return (await _mailboxes(ctx, [await mailbox_row(ctx, id)]))[0]


async def create_mailbox(
    ctx: WorkspaceContext, body: CreateMailboxIn, prepared: LoginTest
) -> CreateMailboxOut:
    """Connect a mailbox. provider `google_app`: a Google account with an app password (Gmail's servers are
    used; see detect_mailbox for where to make one). provider `smtp`: any mailbox with SMTP and IMAP settings
    (`host`, `port`, `security` tls or starttls, `user`). Both logins are tested first and the mailbox is
    saved only when both pass; the test result is returned either way (`ok: false` with why the smtp and/or
    imap login failed, and `mailbox: null`). The email must not be connected already (conflict), and the plan
    must have a mailbox slot left (quota_exceeded). New mailboxes start active with dailyLimit (default 30)
    and a ramp-up from 5 emails a day, +2 a day."""
    if not prepared.ok:
        return CreateMailboxOut(mailbox=None, test=prepared, waiting=False)
    await ensure_new(ctx, body.email)
    ensure_room(await slots_left(ctx), 1)
    smtp, imap = servers_for(body.provider, body.email, body.smtp, body.imap)
    row = new_mailbox_row(
        ctx, body.email, body.provider, body.display_name, body.daily_limit, smtp, imap, login_password(body)
    )
    await ctx.conn.execute(scoped(ctx, mailboxes).insert(row))
    await register_sending_domains(ctx, [row["domain"]])
    route = await route_new_mailbox(ctx, row["id"])
    return CreateMailboxOut(
        mailbox=await get_mailbox(ctx, row["id"]), test=prepared, waiting=route == "waiting"
    )


async def test_mailbox(ctx: WorkspaceContext, body: CreateMailboxIn, prepared: LoginTest) -> LoginTest:
    """Test SMTP and IMAP logins for mailbox settings without saving anything (same body as
    create_mailbox). `ok` is true when both pass; otherwise `smtp`/`imap` say why each failed (null = that
    login passed)."""
    return prepared


test_mailbox.__test__ = False  # type: ignore[attr-defined]  # a tool name, not a pytest test


async def import_mailboxes(
    ctx: WorkspaceContext, body: ImportMailboxesIn, prepared: ImportPlan
) -> ImportMailboxesOut:
    """Connect up to 200 SMTP/IMAP mailboxes at once. Each row is tested (both logins, 10 rows at a time)
    and saved only if both pass. Row status: `added`; `exists` (already connected in this workspace);
    `failed` (a login failed: `error` says which and why); `skipped` (the same email appears earlier in the
    rows). When the new rows need more mailbox slots than the plan has left, nothing is tested and the call
    is refused with quota_exceeded."""
    mb = scoped(ctx, mailboxes)
    emails = [row.email for row in body.rows]
    taken = {
        str(e)
        for e in (await ctx.conn.execute(mb.select(mailboxes.c.email).where(mailboxes.c.email.in_(emails))))
        .scalars()
        .all()
    }
    slots = await slots_left(ctx)
    results: list[ImportResult] = []
    new_rows: list[dict[str, Any]] = []
    for row, outcome in zip(body.rows, prepared.outcomes, strict=True):
        if outcome.status != "tested":
            results.append(ImportResult(email=row.email, status=outcome.status, error=outcome.error))
        elif row.email in taken:
            results.append(ImportResult(email=row.email, status="exists", error="already connected"))
        elif outcome.test is None or not outcome.test.ok:
            results.append(ImportResult(email=row.email, status="failed", error=_summary(outcome.test)))
        elif slots is not None and len(new_rows) >= slots:
            results.append(ImportResult(email=row.email, status="skipped", error="no mailbox slot left"))
        else:
            smtp, imap = servers_for("smtp", row.email, row.smtp, row.imap)
            password = row.password.get_secret_value()
            new_rows.append(
                new_mailbox_row(
                    ctx, row.email, "smtp", row.display_name, row.daily_limit, smtp, imap, password
                )
            )
            results.append(ImportResult(email=row.email, status="added"))
    if new_rows:
        await ctx.conn.execute(*mb.insert_many(new_rows))
        for new in new_rows:
            await route_new_mailbox(ctx, new["id"])
        await register_sending_domains(ctx, [r["domain"] for r in new_rows])
    return ImportMailboxesOut(added=len(new_rows), results=results)


async def update_mailbox(
    ctx: WorkspaceContext, id: str, body: UpdateMailboxIn, prepared: LoginTest | None
) -> UpdateMailboxOut:
    """Change a mailbox; every field is optional. `displayName`, `signature` (null clears them);
    `timezone` (IANA name: the mailbox's day for limits and the ramp); `status` active or paused (sending
    stops or resumes; error and quarantined are set by the service); `limits` with all five of dailyLimit,
    rampEnabled, rampStart, rampIncrement, minGapS, maxGapS (minGapS <= maxGapS); `restartRamp: true` starts
    the ramp again from day 1 today; `inboxPoll`; `credentials` {password, smtp?, imap?}: new credentials are
    tested first, and when a login fails nothing at all is changed and `test.ok` is false. A mailbox in
    error becomes active again once new credentials pass. `warmup` {enabled, target 1-100, rampStart 1-50,
    rampIncrement 1-20, replyRate 0-100 (percent)}, each optional: with enabled true the mailbox exchanges
    warmup emails with the other mailboxes of the server's warmup pool (never shown as threads nor counted
    in analytics or campaign limits, but counted in the mailbox's own daily sends); turning it on starts
    the warmup ramp at day 1."""
    row = await mailbox_row(ctx, id)
    if prepared is not None and not prepared.ok:
        return UpdateMailboxOut(mailbox=(await _mailboxes(ctx, [row]))[0], test=prepared)
    given = body.model_fields_set
    values: dict[str, Any] = {}
    if "display_name" in given:
        values["display_name"] = body.display_name
    if "signature" in given:
        values["signature"] = body.signature
    timezone = row.timezone
    if body.timezone is not None:
        timezone = normalize_timezone(body.timezone) or ""
        if not timezone:
            raise InvalidInput.field("timezone", "not a known IANA time zone (e.g. Europe/Berlin)")
        values["timezone"] = timezone
    if body.status is not None and body.status != row.status:
        if row.status not in ("active", "paused"):
            raise InvalidState(
                f"The mailbox is {row.status}; send new credentials or test it again (retest_mailbox) first.",
                {"status": row.status},
            )
        values["status"] = body.status
    if body.limits is not None:
        limits = body.limits
        values |= {
            "daily_limit": limits.daily_limit,
            "ramp_enabled": limits.ramp_enabled,
            "ramp_start": limits.ramp_start,
            "ramp_increment": limits.ramp_increment,
            "min_gap_s": limits.min_gap_s,
            "max_gap_s": limits.max_gap_s,
        }
    if body.restart_ramp:
        values["ramp_started_on"] = rules.local_day(ctx.now, timezone).isoformat()
    if body.inbox_poll is not None:
        values["inbox_poll"] = body.inbox_poll
    if body.credentials is not None:
        smtp, imap = stored_or_new(row, body.credentials.smtp, body.credentials.imap)
        values |= server_columns(smtp, imap) | {
            "password_encrypted": encrypt(ctx.settings, body.credentials.password.get_secret_value()),
            "last_tested_at": ctx.now,
        }
        if row.status == "error":
            values |= {"status": body.status or "active", "status_reason": None}
    if values:
        values["updated_at"] = ctx.now
        await ctx.conn.execute(scoped(ctx, mailboxes).update().where(mailboxes.c.id == id).values(**values))
    if body.warmup is not None:
        await save_warmup(ctx, id, body.warmup, rules.local_day(ctx.now, timezone))
    return UpdateMailboxOut(mailbox=await get_mailbox(ctx, id), test=prepared)


async def delete_mailbox(ctx: WorkspaceContext, id: str) -> Ok:
    """Disconnect a mailbox and forget its stored password. It is taken off every campaign it sent for;
    emails it already sent stay in the campaigns' history (without the mailbox)."""
    await mailbox_row(ctx, id)
    await ctx.conn.execute(scoped(ctx, mailboxes).delete().where(mailboxes.c.id == id))
    return Ok()


async def retest_mailbox(ctx: WorkspaceContext, id: str, prepared: LoginTest) -> RetestOut:
    """Test the SMTP and IMAP logins of a connected mailbox again with its stored settings (POST
    /mailboxes/{id}/test; named retest_mailbox because test_mailbox tests settings that are not saved).
    Updates lastTestedAt. A failing login puts the mailbox in status error with the reason in statusReason
    (it cannot send); a passing one brings a mailbox in error back to active. For a Google or Microsoft
    mailbox connected over OAuth whose provider does not answer for the moment, the answer is the error
    oauth_unavailable and nothing changes (try again later)."""
    row = await mailbox_row(ctx, id)
    values: dict[str, Any] = {"last_tested_at": ctx.now, "updated_at": ctx.now}
    error = None if prepared.ok else _summary(prepared)
    if error is not None and row.status in ("active", "paused", "error"):
        values |= {"status": "error", "status_reason": error[:500]}
    elif error is None and row.status == "error":
        values |= {"status": "active", "status_reason": None}
    await ctx.conn.execute(scoped(ctx, mailboxes).update().where(mailboxes.c.id == id).values(**values))
    return RetestOut(ok=prepared.ok, error=error)


async def detect_mailbox(ctx: WorkspaceContext, query: DetectQuery, prepared: MxLookup) -> DetectOut:
    """Suggest how to connect an email address: the provider (google, microsoft, other, or none when the
    domain has no mail server), its SMTP and IMAP settings, and where to create an app password. Known
    providers are recognised by the address's domain (gmail.com, outlook.com, yahoo.com, icloud.com, ...) or
    by the domain's MX records (Google Workspace, Microsoft 365, Zoho, Fastmail, GoDaddy, IONOS, ...).
    Use the settings with create_mailbox (provider google_app for Google, else smtp)."""
    domain = domain_of(query.email)
    known = rules.provider_by_domain(domain) or rules.provider_by_mx(prepared.hosts)
    if known is not None:
        return DetectOut(
            domain=domain,
            provider=known.provider,
            provider_label=known.label,
            smtp=_settings(known.smtp),
            imap=_settings(known.imap),
            password_hint=PasswordHint(text=known.hint[0], url=known.hint[1]) if known.hint else None,
        )
    if prepared.failed:
        label = "Unknown (the domain's mail servers could not be looked up)"
        return DetectOut(
            domain=domain, provider="other", provider_label=label, smtp=None, imap=None, password_hint=None
        )
    if not prepared.hosts:
        label = "No mail server: the domain has no MX record"
        return DetectOut(
            domain=domain, provider="none", provider_label=label, smtp=None, imap=None, password_hint=None
        )
    return DetectOut(
        domain=domain,
        provider="other",
        provider_label=f"Other ({prepared.hosts[0]}): ask your email host for its SMTP and IMAP settings",
        smtp=None,
        imap=None,
        password_hint=None,
    )


# --- helpers ------------------------------------------------------------------------------------------------


async def _mailboxes(ctx: WorkspaceContext, rows: Sequence[Any]) -> list[Mailbox]:
    """The mailboxes of `rows` as the API shows them (their sending IPs, warmup rows and domain grades read
    at once)."""
    ips = await sending_ip_rows(ctx, {r.sending_ip_id for r in rows if r.sending_ip_id is not None})
    warmups = await warmup_rows(ctx, [r.id for r in rows])
    dns = await mailbox_dns(ctx, [r.domain for r in rows])
    return [_mailbox(ctx, r, ips.get(r.sending_ip_id), warmups.get(r.id), dns.get(r.domain)) for r in rows]


def _mailbox(ctx: WorkspaceContext, row: Any, ip: Any, warmup: Any, dns: MailboxDns | None) -> Mailbox:
    today = rules.local_day(ctx.now, row.timezone)
    day = rules.ramp_day(row.ramp_started_on, today)
    ramp = (row.daily_limit, bool(row.ramp_enabled), row.ramp_start, row.ramp_increment, day)
    limit = rules.effective_limit(*ramp)
    sent = rules.sent_today(row.sent_day, row.sent_count, today)
    return Mailbox.from_row(
        row,
        effective_limit=limit,
        ramp_enabled=bool(row.ramp_enabled),
        ramp_day=day,
        ramp_days_left=rules.ramp_days_left(*ramp),
        sent_today=sent,
        smtp=ServerOut(
            host=row.smtp_host, port=row.smtp_port, security=row.smtp_security, user=row.smtp_user
        ),
        imap=ServerOut(
            host=row.imap_host, port=row.imap_port, security=row.imap_security, user=row.imap_user
        ),
        inbox_poll=bool(row.inbox_poll),
        sending_ip=SendingIp(
            route=row.sending_route, country=ip.country if ip else None, ip=ip.ip if ip else None
        ),
        warmup=warmup_out(warmup, today, max(0, limit - sent)),
        dns=dns,
    )


def _summary(test: LoginTest | None) -> str:
    if test is None:
        return "not tested"
    parts = [f"SMTP: {test.smtp}" if test.smtp else "", f"IMAP: {test.imap}" if test.imap else ""]
    return "; ".join(p for p in parts if p) or "login failed"


def _settings(server: tuple[str, int, rules.Security]) -> ServerSettings:
    return ServerSettings(host=server[0], port=server[1], security=server[2])
