"""RFC 3464 delivery-status fields: per-recipient groups of `Final-Recipient`, `Action`, `Status`,
`Diagnostic-Code`, read from a `message/delivery-status` part or, for reports whose MIME structure broke,
from the same fields quoted in the body."""

from __future__ import annotations

import re
from dataclasses import dataclass

from outreach_core.inbox.rules.headers import canonical_address
from outreach_core.inbox.rules.reasons import status_code

__all__ = ["DsnRecipient", "find_dsn_fields", "parse_dsn"]

_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9-]{1,40})[ \t]*:[ \t]*(.*)$")
_ADDRESS_IN = re.compile(r"[^\s<>\"'();,:\[\]]+@[^\s<>\"'();,:\[\]]+")
_DSN_START = re.compile(r"^[ \t]*(?:Final|Original)-Recipient[ \t]*:", re.IGNORECASE | re.MULTILINE)
_ACTIONS = ("failed", "delayed", "delivered", "relayed", "expanded")


@dataclass(frozen=True, slots=True)
class DsnRecipient:
    """One recipient group of a delivery-status report."""

    recipient: str | None
    action: str  # failed, delayed, delivered, relayed, expanded; inferred from the status when missing
    status: str | None
    diagnostic: str
    remote_mta: str | None


def find_dsn_fields(text: str) -> str | None:
    """The delivery-status fields quoted in a body (a report whose MIME parts were lost), or None."""
    match = _DSN_START.search(text)
    if match is None:
        return None
    start = text.rfind("\n\n", 0, match.start())
    return text[start + 1 if start >= 0 else 0 :][:65536]


def _groups(text: str) -> list[list[tuple[str, str]]]:
    """Field groups: a blank line ends a group, and so does a second recipient field in one group (some
    MTAs leave out the blank lines)."""
    groups: list[list[tuple[str, str]]] = [[]]
    for line in text.replace("\r", "").split("\n"):
        if not line.strip():
            if groups[-1]:
                groups.append([])
            continue
        if line[0] in " \t" and groups[-1]:
            name, value = groups[-1][-1]
            groups[-1][-1] = (name, f"{value} {line.strip()}")
            continue
        match = _FIELD.match(line.strip())
        if match is None:
            if groups[-1] and any(n in ("diagnostic-code", "x-actual-recipient") for n, _ in groups[-1][-1:]):
                name, value = groups[-1][-1]
                groups[-1][-1] = (name, f"{value} {line.strip()}")
            continue
        name = match.group(1).lower()
        if name == "final-recipient" and any(n == "final-recipient" for n, _ in groups[-1]):
            groups.append([])
        groups[-1].append((name, match.group(2).strip()))
    return [g for g in groups if g]


def _address(value: str | None) -> str | None:
    if not value:
        return None
    _, sep, rest = value.partition(";")
    candidate = rest if sep else value
    match = _ADDRESS_IN.search(candidate)
    return canonical_address(match.group(0)) if match else None


def parse_dsn(text: str) -> list[DsnRecipient]:
    """The recipient groups of delivery-status fields, in order; groups without a usable address are kept
    (recipient None) when they carry a failure, so the caller can fill the address in from elsewhere."""
    out: list[DsnRecipient] = []
    for group in _groups(text):
        fields: dict[str, str] = {}
        for name, value in group:
            fields.setdefault(name, value)
        if not any(k in fields for k in ("final-recipient", "original-recipient", "action", "status")):
            continue
        if "reporting-mta" in fields and not any(
            k in fields for k in ("final-recipient", "original-recipient")
        ):
            continue  # the per-message group
        recipient = _address(fields.get("final-recipient")) or _address(fields.get("original-recipient"))
        status = status_code(fields.get("status", ""))
        diagnostic = fields.get("diagnostic-code", "")
        _, sep, rest = diagnostic.partition(";")
        if sep and len(diagnostic) - len(rest) <= 12:  # "smtp; 550 ..." type prefix
            diagnostic = rest.strip()
        action = fields.get("action", "").strip().lower().split(" ")[0] if fields.get("action") else ""
        if action not in _ACTIONS:
            code = status or status_code(diagnostic)
            action = {"2": "delivered", "4": "delayed"}.get(code[0], "failed") if code else "failed"
        out.append(DsnRecipient(recipient, action, status, diagnostic, fields.get("remote-mta")))
    return out
