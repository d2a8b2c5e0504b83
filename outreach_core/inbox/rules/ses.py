"""Amazon SES notifications delivered by email (an SNS email subscription): a JSON object with
`notificationType` `Bounce`, `Complaint` or `Delivery` in a plain-text body."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from outreach_core.inbox.rules.headers import addresses
from outreach_core.inbox.rules.mime import ParsedMessage

__all__ = ["SesNotification", "SesRecipient", "read_ses"]

_START = re.compile(r'\{\s*"notificationType"\s*:')
_SCAN_LIMIT = 65536


@dataclass(frozen=True, slots=True)
class SesRecipient:
    """One recipient of a notification: `action` is `failed`, `delayed`, `delivered` or `complained`."""

    recipient: str
    action: str
    status: str | None
    diagnostic: str


@dataclass(frozen=True, slots=True)
class SesNotification:
    """`kind` is SES's `notificationType`; `detail` its bounce type or complaint feedback type."""

    kind: str
    recipients: tuple[SesRecipient, ...]
    detail: str | None


def _decode(text: str, start: int) -> dict[str, Any] | None:
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(text, start)  # strict=False: wrapped lines
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _json(text: str) -> dict[str, Any] | None:
    head = text[:_SCAN_LIMIT]
    match = _START.search(head)
    if match is not None:
        return _decode(text, match.start())
    # The raw SNS envelope: {"Type": "Notification", ..., "Message": "<the notification as a string>"}
    if '"Notification"' in head and head.lstrip().startswith("{"):
        envelope = _decode(text, text.index("{"))
        inner = envelope.get("Message") if envelope else None
        if isinstance(inner, str) and _START.match(inner.lstrip()):
            return _decode(inner, inner.index("{"))
    return None


def _addresses(value: object) -> list[str]:
    return [a for _, a in addresses(value)] if isinstance(value, str) else []


def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def _items(section: dict[str, Any], name: str) -> list[Any]:
    value = section.get(name)
    return value if isinstance(value, list) else []


def read_ses(parsed: ParsedMessage) -> SesNotification | None:
    """The SES notification in `parsed`'s body, or None when there is none."""
    data = _json(parsed.text)
    if data is None:
        return None
    kind = str(data.get("notificationType"))
    out: list[SesRecipient] = []
    detail: str | None = None
    if kind == "Bounce":
        bounce = _section(data, "bounce")
        detail = str(bounce.get("bounceType") or "") or None
        for item in _items(bounce, "bouncedRecipients"):
            if not isinstance(item, dict):
                continue
            status = item.get("status") if isinstance(item.get("status"), str) else None
            action = "delayed" if detail == "Transient" and item.get("action") != "failed" else "failed"
            for address in _addresses(item.get("emailAddress"))[:1]:
                out.append(SesRecipient(address, action, status, str(item.get("diagnosticCode") or "")))
    elif kind == "Complaint":
        complaint = _section(data, "complaint")
        detail = str(complaint.get("complaintFeedbackType") or "abuse")
        for item in _items(complaint, "complainedRecipients"):
            if isinstance(item, dict):
                out += [
                    SesRecipient(a, "complained", None, "") for a in _addresses(item.get("emailAddress"))[:1]
                ]
    elif kind == "Delivery":
        for address in _items(_section(data, "delivery"), "recipients"):
            out += [SesRecipient(a, "delivered", None, "") for a in _addresses(address)[:1]]
    else:
        return None
    return SesNotification(kind, tuple(out), detail)
