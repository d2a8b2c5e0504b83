"""One entry point: what a received message is, by rules, with the reason that decided.

Rules in order, the first that applies decides:

1. an Apple Mail unsubscribe (`X-Apple-Unsubscribe: true`): `unsubscribe_request`;
2. a complaint report (ARF, Outlook.com JMRP, Amazon SES complaint): `complaint`;
3. a delivery report with a failed or delayed recipient: `bounce`; one with successes only:
   `delivery_report` (also a read receipt, RFC 8098);
4. an automatic message: `out_of_office` (with the return date when the text names one) or `auto_reply`;
5. the person's own words (quotes removed) ask to unsubscribe: `unsubscribe_request`;
6. anything else: `reply`.

`source` is always `rules` here; the AI labeller works on replies afterwards.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Literal

from outreach_core.inbox.rules.autoreply import detect_auto_reply
from outreach_core.inbox.rules.bounces import BounceRecipient, BounceReport, read_bounce
from outreach_core.inbox.rules.complaints import Complaint, read_complaint
from outreach_core.inbox.rules.folding import fold
from outreach_core.inbox.rules.mime import ParsedMessage
from outreach_core.inbox.rules.quotes import own_text
from outreach_core.inbox.rules.return_date import return_date
from outreach_core.inbox.rules.unsubscribe import find_unsubscribe_request

__all__ = ["Classification", "Kind", "classify"]

Kind = Literal[
    "bounce", "complaint", "delivery_report", "out_of_office", "auto_reply", "unsubscribe_request", "reply"
]  # fmt: skip

_REPLY_PREFIX = re.compile(r"^(?:\s*(?:re|aw|antw|wg|fw|fwd|tr|rv|sv|vs)\s*(?:\[\d+\])?\s*:\s*)+")
_SUBJECT_KEYWORDS = frozenset(
    {"unsubscribe", "stop", "remove", "remove me", "abmelden", "austragen", "desinscription", "desinscrire",
     "desabonnement", "baja", "darme de baja", "opt out", "opt-out"}
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Classification:
    """The verdict on one message.

    `reason` says which rule decided, for people and logs. Per kind: `bounces` lists failed recipients
    (`bounce`), `delivered` the recipients a delivery report confirms, `complaint` the report
    (`complaint`), `return_date` the day an out-of-office reply names (None when it names none or it is
    unclear), `unsubscribe_phrase` the words that asked. `own_text` is the person's own words without
    quoted text (replies, auto-replies, unsubscribe requests).
    """

    kind: Kind
    reason: str
    source: Literal["rules"] = "rules"
    bounces: tuple[BounceRecipient, ...] = ()
    delivered: tuple[str, ...] = ()
    complaint: Complaint | None = None
    return_date: dt.date | None = None
    unsubscribe_phrase: str | None = None
    own_text: str = ""

    @property
    def hard_bounce(self) -> bool:
        """A bounce with at least one hard failure (the address cannot receive mail)."""
        return any(b.hard for b in self.bounces)


def classify(parsed: ParsedMessage, arrived_at: dt.datetime | None = None) -> Classification:
    """Classify one parsed message. `arrived_at` is when it reached the mailbox (IMAP INTERNALDATE); it
    anchors an out-of-office return date written without a year. Without it the `Date` header is used."""
    if (parsed.header("x-apple-unsubscribe") or "").strip().lower() == "true":
        return Classification("unsubscribe_request", "Apple Mail unsubscribe (X-Apple-Unsubscribe)")
    complaint = read_complaint(parsed)
    if complaint is not None:
        return Classification("complaint", _complaint_reason(complaint), complaint=complaint)
    report = read_bounce(parsed)
    if report is not None and report.failed:
        return Classification(
            "bounce", _bounce_reason(report), bounces=report.failed, delivered=report.delivered
        )
    if report is not None:
        reason = f"{report.source}: delivered to {', '.join(report.delivered[:3])}"
        return Classification("delivery_report", reason, delivered=report.delivered)
    if parsed.report_type == "disposition-notification":
        return Classification("delivery_report", "read receipt (RFC 8098 disposition notification)")
    own = own_text(parsed.text)
    auto = detect_auto_reply(parsed, own)
    if auto is not None and auto.kind == "out_of_office":
        anchor = arrived_at or parsed.date
        back = return_date(own, anchor) if anchor is not None else None
        reason = f"{auto.reason}; back {back.isoformat()}" if back else f"{auto.reason}; no return date"
        return Classification("out_of_office", reason, return_date=back, own_text=own)
    if auto is not None:
        return Classification("auto_reply", auto.reason, own_text=own)
    phrase = find_unsubscribe_request(own)
    subject = fold(_REPLY_PREFIX.sub("", parsed.subject)).strip(" .!?")
    if phrase is None and subject in _SUBJECT_KEYWORDS:
        phrase = subject
    if phrase is not None:
        return Classification(
            "unsubscribe_request", f"asks to unsubscribe: {phrase!r}", unsubscribe_phrase=phrase, own_text=own
        )
    return Classification("reply", "no rule matched: a person's reply", own_text=own)


def _bounce_reason(report: BounceReport) -> str:
    first = report.failed[0]
    what = "delayed" if first.action == "delayed" else ("hard" if first.hard else "soft")
    code = first.status or first.reply_code or "no status"
    more = f" (+{len(report.failed) - 1} more)" if len(report.failed) > 1 else ""
    who = first.recipient or "an unnamed recipient"
    return f"{report.source}: {code} for {who} ({first.reason}, {what}){more}"


def _complaint_reason(complaint: Complaint) -> str:
    who = ", ".join(complaint.recipients[:3]) or "a redacted recipient"
    return f"{complaint.source} ({complaint.feedback_type}) for {who}"
