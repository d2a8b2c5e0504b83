"""The `warmup` worker's pass (docs/warmup.md): plan and claim (one transaction), the SMTP hand-offs with no
transaction open, their outcomes (one transaction), then the recipients' folders looked at over IMAP (no
transaction open) and what was found recorded (one transaction)."""

from __future__ import annotations

import asyncio
import random
from typing import TYPE_CHECKING

import structlog

from outreach_core.kernel.crypto import UndecryptableSecret
from outreach_core.kernel.ports import Delivery, MailSender, Ports, Tended, WarmupMail
from outreach_core.kernel.settings import Settings
from outreach_core.mailboxes.oauth_tokens import LoginUnavailable, login_for
from outreach_core.warmup.message import to_bytes
from outreach_core.warmup.pool import WarmupJob, plan_and_claim
from outreach_core.warmup.tending import Sent, TendJob, record_sent, record_tended, tend_due

if TYPE_CHECKING:
    from outreach_core.kernel.endpoint import Background

_log = structlog.get_logger()


async def warmup_pass(runtime: Background, *, rng: random.Random | None = None) -> int:
    """One pass; returns the warmup emails handed off plus those found (0 when there was nothing to do)."""
    rng = rng or random.Random()
    settings = runtime.settings
    smtp = runtime.ports.smtp
    if smtp is None:
        raise RuntimeError("the warmup worker needs an SMTP adapter (ports.smtp)")
    limit = asyncio.Semaphore(settings.warmup_concurrency)
    claimed = await runtime.system(plan_and_claim, rng=rng)
    if claimed.jobs:

        async def one(job: WarmupJob) -> Sent:
            async with limit:
                return Sent(job, await deliver_warmup(job, smtp, settings, runtime.ports))

        results = await asyncio.gather(*(one(j) for j in claimed.jobs))
        await runtime.system(record_sent, results)
        _log.info("warmup_sent", sent=sum(r.delivery.ok for r in results), claimed=len(results))
    found = 0
    reader = runtime.ports.warmup_mail
    if reader is not None:
        looks = await runtime.system(tend_due)
        if looks:

            async def look(job: TendJob) -> tuple[TendJob, Tended]:
                async with limit:
                    return job, await tend_one(job, reader, settings, runtime.ports)

            results_ = await asyncio.gather(*(look(j) for j in looks))
            found = await runtime.system(record_tended, results_, rng=rng)
    return len(claimed.jobs) + found


async def deliver_warmup(job: WarmupJob, smtp: MailSender, settings: Settings, ports: Ports) -> Delivery:
    """Hand one warmup email to its mailbox's SMTP server."""
    try:
        server, password = await login_for(
            settings,
            ports.oauth,
            ports.clock.now(),
            job.from_mailbox_id,
            job.server,
            job.password_encrypted,
            job.oauth_encrypted,
        )
    except UndecryptableSecret:
        return Delivery(ok=False, phase="credentials", reason="the stored password cannot be decrypted")
    except LoginUnavailable as exc:
        return Delivery(ok=False, phase="credentials" if exc.revoked else "token", reason=exc.reason)
    try:
        message = to_bytes(job.email)
    except Exception:
        return Delivery(ok=False, phase="message", reason="the warmup email could not be built")
    return await smtp.send(server, password, job.email.from_email, job.email.to_email, message)


async def tend_one(job: TendJob, reader: WarmupMail, settings: Settings, ports: Ports) -> Tended:
    """Look into one recipient's folders for its warmup emails."""
    try:
        server, password = await login_for(
            settings,
            ports.oauth,
            ports.clock.now(),
            job.mailbox_id,
            job.server,
            job.password_encrypted,
            job.oauth_encrypted,
        )
    except UndecryptableSecret:
        return Tended({}, "the stored password cannot be decrypted")
    except LoginUnavailable as exc:
        return Tended({}, exc.reason)
    tended = await reader.tend(server, password, job.tokens)
    if tended.error:
        _log.info("warmup_tend_failed", mailbox=job.mailbox_id, reason=tended.error)
    return tended
