"""Pure sending rules: mailbox choice, company domains, retries, the bounce threshold, SMTP outcomes. The
rules the campaign forecast shares live below the sender and are re-exported here: the window, days and
follow-up timing in `campaigns/schedule.py`, the stop rules in `campaigns/stops.py`, the daily limits and
gaps in `mailboxes/rules.py`.

No I/O: `operations.py` gathers the facts in SQL and these functions decide. Every rule takes the time it
decides for, so tests drive them with a fixed clock.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from outreach_core.campaigns.rules import assign_mailbox
from outreach_core.campaigns.schedule import next_step_at as next_step_at
from outreach_core.campaigns.stops import FREE_MAIL_DOMAINS as FREE_MAIL_DOMAINS
from outreach_core.campaigns.stops import CampaignLeadStatus as CampaignLeadStatus
from outreach_core.campaigns.stops import LeadFacts as LeadFacts
from outreach_core.campaigns.stops import StopRules as StopRules
from outreach_core.campaigns.stops import stop_reason as stop_reason
from outreach_core.kernel import ports
from outreach_core.mailboxes.rules import MailboxLimits as MailboxLimits
from outreach_core.mailboxes.rules import next_gap as next_gap
from outreach_core.mailboxes.rules import next_local_midnight as next_local_midnight
from outreach_core.mailboxes.rules import sends_left as sends_left
from outreach_core.mailboxes.rules import today_limit as today_limit

DEFAULT_BOUNCE_THRESHOLD = 5.0
"""Percent of a campaign's delivered-or-bounced emails that pauses it when `bounceThreshold` is null."""
BOUNCE_MIN_SAMPLE = 20
"""The bounce rate is only judged once this many of the campaign's emails have an outcome."""

RETRY_BASE = dt.timedelta(minutes=10)
RETRY_CAP = dt.timedelta(hours=12)
MAX_ATTEMPTS = 8
"""A temporary failure is retried this many times in all (10 min, 20 min, 40 min ... up to 12 h apart)."""


# --- mailboxes ---------------------------------------------------------------------------------------------


ProviderFamily = Literal["google", "microsoft", "other"]


def mailbox_family(provider: str, smtp_host: str) -> ProviderFamily:
    """The email provider a mailbox sends through, for `espMatching` (lead `esp` google/microsoft)."""
    host = smtp_host.lower()
    if provider in ("google_app", "google_oauth") or host.endswith(("gmail.com", "google.com")):
        return "google"
    if provider == "microsoft" or host.endswith(("office365.com", "outlook.com")):
        return "microsoft"
    return "other"


@dataclass(frozen=True)
class Candidate:
    """A campaign lead waiting for its first email."""

    key: str  # campaign lead id
    lead_id: str
    esp: str


def spread_first_emails(
    candidates: Sequence[Candidate],
    free: Sequence[str],
    active: Sequence[str],
    families: dict[str, ProviderFamily],
    *,
    esp_matching: bool,
) -> list[tuple[str, str]]:
    """Pair first emails with the free (due, under limit, unused this pass) mailboxes: each mailbox at most
    one. A lead goes to the mailbox `assign_mailbox` spreads it onto (what the preview shows) when that one
    is free; the mailboxes left over take the remaining leads in order, with `espMatching` a mailbox of the
    lead's provider first. Returns (campaign lead id, mailbox id) pairs."""
    left = list(free)
    pairs: list[tuple[str, str]] = []
    waiting: list[Candidate] = []
    for c in candidates:
        if not left:
            break
        preferred = assign_mailbox(c.lead_id, active)
        if preferred in left:
            left.remove(preferred)
            pairs.append((c.key, preferred))
        else:
            waiting.append(c)
    for c in waiting:
        if not left:
            break
        chosen = left[0]
        if esp_matching:
            chosen = next((m for m in left if families.get(m) == c.esp), chosen)
        left.remove(chosen)
        pairs.append((c.key, chosen))
    return pairs


# --- company ----------------------------------------------------------------------------------------------


# --- retries -----------------------------------------------------------------------------------------------


def retry_at(now: dt.datetime, attempts: int) -> dt.datetime:
    """Back-off after the `attempts`-th temporary failure: 10 min, 20 min, 40 min ... at most 12 h."""
    delay: dt.timedelta = min(RETRY_BASE * (2 ** max(0, attempts - 1)), RETRY_CAP)
    return now + delay


# --- bounce threshold --------------------------------------------------------------------------------------


def bounce_threshold_reached(bounced: int, resolved: int, threshold: float | None) -> bool:
    """The campaign's bounce rate reached its threshold (percent; null = the workspace default), judged
    once at least `BOUNCE_MIN_SAMPLE` emails have an outcome (sent or bounced)."""
    limit = DEFAULT_BOUNCE_THRESHOLD if threshold is None else threshold
    if resolved < BOUNCE_MIN_SAMPLE or bounced == 0:
        return False
    return bounced * 100.0 >= limit * resolved - 1e-9


# --- SMTP outcomes -----------------------------------------------------------------------------------------

Outcome = Literal["sent", "retry", "bounced", "mailbox_error", "failed"]
Phase = ports.Phase

_ENHANCED = re.compile(r"\b([245])\.(\d{1,3})\.(\d{1,3})\b")
_AUTH_REPLIES = (530, 534, 535, 454)
"""Authentication required, mechanism too weak, credentials refused, temporary authentication failure."""


def enhanced_code(text: str) -> tuple[int, int, int] | None:
    """The RFC 3463 enhanced status code at the start of a server reply (`5.1.1 user unknown`)."""
    match = _ENHANCED.search(text[:40])
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def classify(phase: Phase, code: int | None, text: str) -> Outcome:
    """What an SMTP failure means for the lead and the mailbox.

    Only the mailbox's own problems touch the mailbox (`mailbox_error`: it goes to `error`, the lead waits
    for a working mailbox): no connection, TLS or login (phases connect, tls, auth), a stored password that
    cannot be decrypted, the mailbox's own settings making every email unbuildable (`sender`), an
    authentication reply at any point (530, 534, 535, 454), and a permanent refusal of MAIL FROM other than
    for size (that command carries nothing but the mailbox's own address, so the refusal would repeat for
    every lead).

    From MAIL FROM on, everything else is this email's outcome, whoever it goes to next:

    - the email cannot be built, or cannot go to this address through this server (`message`: a
      non-ASCII address without SMTPUTF8) -> `failed`;
    - no reply in the middle of the transaction (timeout, connection dropped) -> `retry` (the connection
      is replaced; a server that is really down shows at the next connection, which is the mailbox's);
    - 5.1.x (and 5.2.1, a disabled mailbox) or a plain 550/551/553 to RCPT: the address does not take mail
      -> `bounced`;
    - any 4xx (greylisting, 421, rate limits) and sending quotas (x.4.5) -> `retry` with back-off;
    - any other 5xx (message too large, content or policy refused) -> `failed` for this lead.
    """
    if phase == "message":
        return "failed"
    if phase == "token":  # an OAuth mailbox's token refresh failed for a passing reason (5xx, timeout)
        return "retry"
    if phase in ("connect", "tls", "auth", "credentials", "sender"):
        return "mailbox_error"
    if code is None:
        return "retry"
    enhanced = enhanced_code(text)
    if code in _AUTH_REPLIES:
        return "mailbox_error"
    if 400 <= code < 500 or (enhanced is not None and (enhanced[1], enhanced[2]) == (4, 5)):
        return "retry"
    too_large = code == 552 or (enhanced is not None and (enhanced[1], enhanced[2]) == (3, 4))
    if phase == "mail" and not too_large:
        return "mailbox_error"
    if enhanced and enhanced[0] == 5 and (enhanced[1] == 1 or (enhanced[1], enhanced[2]) == (2, 1)):
        return "bounced"
    if enhanced is None and phase == "rcpt" and code in (550, 551, 553):
        return "bounced"
    return "failed"


def smtp_bounce(code: int | None, reply: str, recipient: str) -> dict[str, Any]:
    """The `bounce` of a `lead.bounced` event for an address the receiving server refused while sending:
    `status` is the enhanced status code of the reply (`5.1.1`), else its reply code (`550`)."""
    enhanced = enhanced_code(reply)
    status = ".".join(map(str, enhanced)) if enhanced else (str(code) if code is not None else None)
    return {"status": status, "hard": True, "reason": reply[:300], "recipient": recipient, "source": "smtp"}
