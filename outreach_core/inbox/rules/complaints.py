"""Complaint reports: someone marked our email as spam (or opted out) at their provider.

- ARF (RFC 5965): `multipart/report; report-type=feedback-report` with a `message/feedback-report` part.
  The complained-about recipient is `Original-Rcpt-To` (`Removal-Recipient` in opt-out reports), else the
  `To` of the returned message, else unknown (providers often redact it: the worker then matches by the
  returned message's Message-ID).
- Outlook.com/Hotmail JMRP reports (a `message/rfc822` part with `X-HmXmrOriginalRecipient`).
- Amazon SES notifications delivered by email (JSON with `notificationType`): complaints here, bounces
  and deliveries are read by `bounces.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from outreach_core.inbox.rules.headers import canonical_address
from outreach_core.inbox.rules.mime import ParsedMessage
from outreach_core.inbox.rules.ses import read_ses

__all__ = ["Complaint", "read_complaint"]

_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]{1,40})[ \t]*:[ \t]*(.*)$", re.MULTILINE)
_JMRP_SUBJECT = re.compile(r"complaint about message", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Complaint:
    """A complaint report. `recipients` are the complaining addresses (may be empty when redacted);
    `feedback_type` is ARF's (`abuse`, `fraud`, `opt-out`, `auth-failure`, ...)."""

    recipients: tuple[str, ...]
    feedback_type: str
    source: str


def read_complaint(parsed: ParsedMessage) -> Complaint | None:
    """The complaint a report carries, or None when `parsed` is not a complaint report."""
    if parsed.feedback_report is not None or parsed.report_type == "feedback-report":
        return _arf(parsed)
    if parsed.original is not None and (
        parsed.original.header("x-hmxmroriginalrecipient") is not None or _JMRP_SUBJECT.search(parsed.subject)
    ):
        hinted = canonical_address(parsed.original.header("x-hmxmroriginalrecipient") or "")
        recipients = (hinted,) if hinted else parsed.original.to
        return Complaint(recipients, "abuse", "Outlook.com complaint report (JMRP)")
    ses = read_ses(parsed)
    if ses is not None and ses.kind == "Complaint":
        recipients = tuple(r.recipient for r in ses.recipients)
        return Complaint(recipients, ses.detail or "abuse", "Amazon SES complaint notification")
    return None


def _arf(parsed: ParsedMessage) -> Complaint:
    fields: dict[str, list[str]] = {}
    for name, value in _FIELD.findall(parsed.feedback_report or ""):
        fields.setdefault(name.lower(), []).append(value.strip())
    recipients: list[str] = []
    for name in ("original-rcpt-to", "removal-recipient"):
        for value in fields.get(name, []):
            address = canonical_address(value)
            if address:
                recipients.append(address)
        if recipients:
            break
    if not recipients and parsed.original is not None:
        recipients = list(parsed.original.to)
    feedback_type = (fields.get("feedback-type") or ["abuse"])[0].lower() or "abuse"
    return Complaint(tuple(dict.fromkeys(recipients)), feedback_type, "ARF feedback report")
