"""Bounces: RFC 3464 delivery status notifications and the plain-text failure notices of other MTAs.

`read_bounce(parsed)` gives a `BounceReport` (failed recipients with status, hard flag, reason and the
server's words; recipients a report says were delivered) or None when the message is not a delivery
report at all. Two readers, tried in order:

1. **Delivery-status fields** (`dsn.py`): the `message/delivery-status` part of a `multipart/report`, or
   the same fields quoted in the body when the MIME structure was lost. Recipients whose `Action` is
   `delivered`, `relayed` or `expanded` are successes, not bounces.
2. **Failure notices in words** (Postfix, Exim, Sendmail, qmail, Exchange, Gmail, Yahoo, ...): a message
   that looks like one (sent by a mailer daemon or postmaster, from the null sender, with a failure
   subject, an `X-Failed-Recipients` header, or a failure sentence in its body) is read in its own part
   only, above the copy of the original message: failed addresses are the ones it names (or
   `X-Failed-Recipients`, or the original's `To`), each with the status, reply code and sentence next to
   it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from outreach_core.inbox.rules.dsn import DsnRecipient, find_dsn_fields, parse_dsn
from outreach_core.inbox.rules.headers import addresses, canonical_address
from outreach_core.inbox.rules.mime import ParsedMessage
from outreach_core.inbox.rules.reasons import judge, reply_code, status_code
from outreach_core.inbox.rules.ses import SesNotification, read_ses
from outreach_core.inbox.rules.textbounce import (
    bounce_section,
    looks_like_bounce,
    quoted_original_to,
    recipient_paragraphs,
)

__all__ = ["BounceRecipient", "BounceReport", "read_bounce"]

DIAGNOSTIC_LIMIT = 1000
"""The server's words are kept up to this many characters per recipient."""

_SPACES = re.compile(r"\s+")
# The SMTP command a refusal answered, as Postfix ("in reply to end of DATA command") and Exim ("after
# MAIL FROM:") write it. A sendmail transcript's ">>> DATA" is not enough: with pipelining the error shown
# after it is often the recipient's.
_STAGE = re.compile(r"(?:after|in reply to) (?:end of )?(data|mail from)\b", re.IGNORECASE)


def _stage(*texts: str) -> Literal["mail", "data"] | None:
    for text in texts:
        match = _STAGE.search(text)
        if match is not None:
            return "data" if match.group(1).lower() == "data" else "mail"
    return None


@dataclass(frozen=True, slots=True)
class BounceRecipient:
    """One failed recipient. `status` is the enhanced status code (`5.1.1`) when the report has one;
    `action` is `delayed` for a delay warning (the MTA is still trying: not a final failure)."""

    recipient: str | None
    status: str | None
    hard: bool
    reason: str
    diagnostic: str
    action: Literal["failed", "delayed"]
    reply_code: str | None


@dataclass(frozen=True, slots=True)
class BounceReport:
    """What a delivery report says: failed recipients, and recipients it reports as delivered."""

    failed: tuple[BounceRecipient, ...]
    delivered: tuple[str, ...]
    source: str  # which reader decided: "RFC 3464 report", "failure notice"


def read_bounce(parsed: ParsedMessage) -> BounceReport | None:
    """The bounce details of a delivery report, or None when `parsed` is not one."""
    ses = read_ses(parsed)
    if ses is not None and ses.kind in ("Bounce", "Delivery"):
        return _from_ses(ses)
    fields = parsed.delivery_status
    source = "RFC 3464 report"
    if not fields or not _has_recipient_fields(fields):
        quoted = find_dsn_fields(parsed.text) if looks_like_bounce(parsed) else None
        fields = quoted
        source = "RFC 3464 fields in the body"
    if fields:
        report = _from_dsn(parse_dsn(fields), parsed, source)
        if report is not None:
            return report
    if not looks_like_bounce(parsed):
        return None
    return _from_text(parsed)


def _has_recipient_fields(text: str) -> bool:
    lowered = text.lower()
    return "final-recipient" in lowered or "original-recipient" in lowered


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()[:DIAGNOSTIC_LIMIT]


def _from_dsn(groups: list[DsnRecipient], parsed: ParsedMessage, source: str) -> BounceReport | None:
    failed: list[BounceRecipient] = []
    delivered: list[str] = []
    section = bounce_section(parsed)
    fallback = _fallback_recipients(parsed)
    named = [g.recipient for g in groups if g.recipient and not g.diagnostic]
    paragraphs = dict(recipient_paragraphs(section, named)) if named else {}
    for group in groups:
        if group.action in ("delivered", "relayed", "expanded"):
            if group.recipient:
                delivered.append(group.recipient)
            continue
        recipient = group.recipient or (fallback[0] if fallback else None)
        diagnostic = group.diagnostic
        if not diagnostic and recipient:
            diagnostic = paragraphs.get(recipient) or ""
            if diagnostic == section:  # the notice does not name it: no words of its own
                diagnostic = ""
        # The remote server's own code in its words is more precise than the Status field, which the
        # reporting MTA often fills in with a generic or mapped value.
        status = status_code(diagnostic) or group.status
        words = diagnostic or section[:2000]
        permanent = group.action == "failed" and (status or "5")[0] != "4"
        verdict = judge(words, status, permanent, stage=_stage(words, section))
        action: Literal["failed", "delayed"] = "delayed" if group.action == "delayed" else "failed"
        failed.append(
            BounceRecipient(recipient, status, verdict.hard, verdict.reason, _clean(diagnostic), action,
                            reply_code(diagnostic))
        )  # fmt: skip
    if not failed and not delivered:
        return None
    return BounceReport(tuple(_dedupe(failed)), tuple(dict.fromkeys(delivered)), source)


def _from_ses(ses: SesNotification) -> BounceReport:
    failed: list[BounceRecipient] = []
    delivered: list[str] = []
    for item in ses.recipients:
        if item.action == "delivered":
            delivered.append(item.recipient)
            continue
        status = (
            status_code(item.diagnostic) if not item.status or item.status.endswith(".0.0") else item.status
        )
        status = status or item.status
        verdict = judge(item.diagnostic, status, permanent=item.action == "failed")
        action: Literal["failed", "delayed"] = "delayed" if item.action == "delayed" else "failed"
        diagnostic = _clean(item.diagnostic)
        failed.append(
            BounceRecipient(item.recipient, status, verdict.hard, verdict.reason, diagnostic, action,
                            reply_code(item.diagnostic))
        )  # fmt: skip
    return BounceReport(tuple(_dedupe(failed)), tuple(delivered), "Amazon SES notification")


def _from_text(parsed: ParsedMessage) -> BounceReport | None:
    section = bounce_section(parsed)
    header_failed = [a for _, a in addresses(parsed.header("x-failed-recipients") or "")]
    found = recipient_paragraphs(section, header_failed, _own_addresses(parsed))
    if not found:
        fallback = header_failed or _fallback_recipients(parsed)
        found = [(r, section) for r in fallback[:1]] or [(None, section)]
    failed: list[BounceRecipient] = []
    permanent_hint = _permanence(section)
    for recipient, paragraph in found:
        words = paragraph if (status_code(paragraph) or reply_code(paragraph)) else section
        status = status_code(words) or status_code(section)
        code = reply_code(words)
        permanent = permanent_hint
        if status or code:
            permanent = (status or code or "5")[0] == "5"
        verdict = judge(words[:4000], status, permanent, stage=_stage(words))
        action: Literal["failed", "delayed"] = "failed" if permanent is not False else "delayed"
        failed.append(
            BounceRecipient(recipient, status, verdict.hard, verdict.reason, _clean(words), action, code)
        )
    return BounceReport(tuple(_dedupe(failed)), (), "failure notice")


_TEMPORARY = re.compile(
    r"temporar|delayed|will (?:keep|continue) (?:trying|to try|retrying)|still trying|not yet been delivered"
    r"|will be retried|warning: message|deferred",
    re.IGNORECASE,
)
_PERMANENT = re.compile(
    r"permanent|fatal|given up|giving up|gave up|could not be delivered|failed", re.IGNORECASE
)


def _permanence(section: str) -> bool | None:
    sample = section[:3000]
    if _PERMANENT.search(sample):
        return True
    if _TEMPORARY.search(sample):
        return False
    return None


def _own_addresses(parsed: ParsedMessage) -> frozenset[str]:
    """Addresses a notice names that are not failed recipients: the mailbox (our sender) and the notice's
    own sender."""
    own = {*parsed.to, *parsed.cc, *parsed.reply_to}
    for address in (parsed.from_address, parsed.return_path):
        if address:
            own.add(address)
    if parsed.original and parsed.original.from_address:
        own.add(parsed.original.from_address)
    return frozenset(own)


def _fallback_recipients(parsed: ParsedMessage) -> list[str]:
    """Where a report names no recipient: the original message's `To`."""
    if parsed.original and parsed.original.to:
        return list(parsed.original.to)
    quoted = quoted_original_to(parsed)
    if quoted:
        return quoted
    original_to = parsed.header("x-original-to")
    if original_to:
        address = canonical_address(original_to)
        if address and address not in parsed.to:
            return [address]
    return []


def _dedupe(items: list[BounceRecipient]) -> list[BounceRecipient]:
    seen: dict[str | None, BounceRecipient] = {}
    for item in items:
        kept = seen.get(item.recipient)
        if kept is None or (not kept.status and item.status):
            seen[item.recipient] = item
    return list(seen.values())
