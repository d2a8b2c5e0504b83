"""The hand-off: a claimed email (`Job`), written as it will go out (`email_for`), and handed to its
mailbox's SMTP server (`deliver`) with no transaction open. The scheduling pass (`planner.py`) makes the
jobs; the resolution (`outcomes.py`) records what each hand-off gave."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog

from outreach_core.campaigns.compose import RENDERED_FIELDS, ComposedEmail, compose
from outreach_core.campaigns.schemas import Step
from outreach_core.kernel.crypto import UndecryptableSecret
from outreach_core.kernel.ports import Delivery, MailSender, MailServer, OAuthClient
from outreach_core.kernel.settings import Settings
from outreach_core.mail.links import unsubscribe_url
from outreach_core.mail.message import Outgoing, UnsafeHeader, build_message, new_message_id, to_bytes
from outreach_core.mail.rendering import Sender, Unsubscribe
from outreach_core.mailboxes.oauth_tokens import LoginUnavailable, login_for
from outreach_core.tracking.rewrite import Tracking, track_email

_log = structlog.get_logger()


@dataclass(frozen=True)
class Job:
    """One claimed email: everything the hand-off and its resolution need."""

    send_id: str
    workspace_id: str
    campaign_id: str
    campaign_lead_id: str
    lead_id: str
    lead_email: str
    mailbox_id: str
    step: int  # position of the step being sent
    steps: int  # steps in the sequence
    next_wait_days: int | None  # waitDays of the next step; None after the last
    thread_message_id: str  # the first email's Message-ID (this one's, for the first email)
    message_id: str
    attempts: int
    server: MailServer
    password_encrypted: str
    mail_from: str
    email: Outgoing  # turned into bytes just before the hand-off, outside the pass's transaction
    gap_s: float  # the mailbox waits this long after the hand-off before its next send
    oauth_encrypted: str | None = None  # an OAuth mailbox's tokens (mailboxes/oauth_tokens.py)


@dataclass(frozen=True)
class Handoff:
    """One job's hand-off: its outcome and when it ended (the mailbox's gap counts from then)."""

    job: Job
    delivery: Delivery
    ended_at: dt.datetime


def email_for(
    settings: Settings,
    row: Any,
    box: Any,
    workspace: Any,
    steps: Sequence[Step],
    delivered: list[tuple[int, str]],
    now: dt.datetime,
    *,
    send_id: str,
    base_url: str,
    campaign: Any,
) -> tuple[ComposedEmail, Outgoing] | None:
    """The email a claimed campaign lead gets from `box` at its step, exactly as the preview shows it
    (`compose`), with a new Message-ID and, for a same-thread follow-up, the thread's headers; None when
    the step has no active variant. `delivered` holds the lead's delivered (step, Message-ID) pairs.
    Links are under `base_url` (`tracking_base_url`); with the campaign's `trackClicks`/`trackOpens` they are
    rewritten to signed redirects naming `send_id` and a pixel is added (`tracking.rewrite`)."""
    url = unsubscribe_url(
        settings,
        workspace_id=row.workspace_id,
        lead_id=row.lead_id,
        campaign_id=row.campaign_id,
        base_url=base_url,
    )
    link = url if workspace.unsubscribe_mode == "link" else None
    composed = compose(
        steps,
        row.step,
        lead_id=row.lead_id,
        lead={f: getattr(row, f) for f in RENDERED_FIELDS},
        sender=Sender(name=box.display_name, email=box.email, signature=box.signature),
        unsubscribe=Unsubscribe(mode=workspace.unsubscribe_mode, url=link),
    )
    if composed is None:
        return None
    tracking = Tracking(
        clicks=campaign.track_clicks,
        opens=campaign.track_opens,
        secret=settings.resolved_secret_key(),
        base_url=base_url,
        send_id=send_id,
        unsubscribe_url=url,
    )
    if tracking.active:
        body_html, body_text = track_email(composed.rendered.html, composed.rendered.text, tracking)
        rendered = dataclasses.replace(composed.rendered, html=body_html, text=body_text)
        composed = dataclasses.replace(composed, rendered=rendered)
    message_id = new_message_id(box.domain)
    threaded = row.step > 0 and composed.step.same_thread and row.thread_message_id is not None
    chain = _thread_chain(row.thread_message_id, delivered, steps) if threaded else []
    outgoing = Outgoing(
        from_email=box.email,
        from_name=box.display_name,
        to_email=row.email,
        subject=composed.subject,
        html=composed.rendered.html,
        text=composed.rendered.text,
        message_id=message_id,
        date=now,
        unsubscribe_url=link,
        in_reply_to=chain[-1] if chain else None,
        references=tuple(chain),
    )
    return composed, outgoing


def _thread_chain(thread_start: str, delivered: list[tuple[int, str]], steps: Sequence[Step]) -> list[str]:
    """The Message-IDs of a lead's thread, oldest first (RFC 5322 `References`): the first email and every
    same-thread follow-up delivered since. A follow-up answers the last of them (`In-Reply-To`)."""
    chain = [
        message_id
        for step, message_id in sorted(delivered)
        if step == 0 or (step < len(steps) and steps[step].same_thread)
    ]
    if thread_start not in chain:
        chain.insert(0, thread_start)
    return chain


async def deliver(
    job: Job,
    smtp: MailSender,
    settings: Any,
    now: dt.datetime | None = None,
    *,
    oauth: OAuthClient | None,
) -> Delivery:
    """Hand one claimed email to its mailbox's SMTP server (no transaction is open). The login credential
    comes from `login_for` (a password, or an OAuth mailbox's access token, refreshed through `oauth` when
    due)."""
    try:
        server, password = await login_for(
            settings,
            oauth,
            now or dt.datetime.now(dt.UTC),
            job.mailbox_id,
            job.server,
            job.password_encrypted,
            job.oauth_encrypted,
        )
    except UndecryptableSecret:
        return Delivery(
            ok=False,
            phase="credentials",
            reason="the stored password cannot be decrypted with the configured keys; send it again",
        )
    except LoginUnavailable as exc:
        return Delivery(ok=False, phase="credentials" if exc.revoked else "token", reason=exc.reason)
    try:
        message = to_bytes(build_message(job.email))
    except UnsafeHeader as exc:
        if exc.mailbox:  # the mailbox's own value (display name ...) would break every email: the mailbox's
            return Delivery(
                ok=False,
                phase="sender",
                reason=f"the email could not be built: {exc.reason}; correct it (update_mailbox), then "
                "test the mailbox again (retest_mailbox)",
            )
        return Delivery(ok=False, phase="message", reason=f"the email could not be built: {exc.reason}")
    except Exception:  # anything else the email package refuses: this email's
        _log.exception("sender_message_unbuildable", send_id=job.send_id)
        return Delivery(ok=False, phase="message", reason="the email could not be built")
    return await smtp.send(server, password, job.mail_from, job.lead_email, message)
