"""The email as it goes out: standard `email` package, `multipart/alternative`, threading and RFC 8058."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP
from email.utils import format_datetime, make_msgid

ONE_CLICK = "List-Unsubscribe=One-Click"


class UnsafeHeader(ValueError):
    """A header value carried a line break (header injection): the email is not sent."""


@dataclass(frozen=True)
class Outgoing:
    """What one email is made of."""

    from_email: str
    from_name: str | None
    to_email: str
    subject: str
    html: str
    text: str
    message_id: str
    date: dt.datetime
    unsubscribe_url: str | None  # link mode: List-Unsubscribe and List-Unsubscribe-Post
    in_reply_to: str | None  # same-thread follow-up: the first email's Message-ID


def new_message_id(domain: str) -> str:
    """A fresh `<...@domain>` Message-ID for the mailbox's own domain."""
    return make_msgid(domain=safe(domain) or "localhost")


def safe(value: str) -> str:
    """A header value; refuses CR, LF (and NUL), so nothing a lead or a template holds can add a header."""
    if any(ch in value for ch in "\r\n\x00"):
        raise UnsafeHeader("a header value contains a line break")
    return value


def check_headers(o: Outgoing) -> None:
    """Refuse (`UnsafeHeader`) an email whose header values carry a line break, before it is recorded."""
    for value in (o.from_email, o.from_name or "", o.to_email, o.subject, o.message_id):
        safe(value)
    for optional in (o.unsubscribe_url, o.in_reply_to):
        if optional is not None:
            safe(optional)


def build_message(o: Outgoing) -> EmailMessage:
    """From (with display name), To, Subject, Date, the pre-assigned Message-ID, threading headers, the
    one-click unsubscribe headers in link mode, and the text and HTML parts as `multipart/alternative`."""
    msg = EmailMessage(policy=SMTP)
    local, _, domain = safe(o.from_email).rpartition("@")
    msg["From"] = Address(display_name=safe(o.from_name or ""), username=local, domain=domain)
    to_local, _, to_domain = safe(o.to_email).rpartition("@")
    msg["To"] = Address(username=to_local, domain=to_domain)
    msg["Subject"] = safe(o.subject)
    msg["Date"] = format_datetime(o.date.astimezone(dt.UTC))
    msg["Message-ID"] = safe(o.message_id)
    if o.in_reply_to:
        msg["In-Reply-To"] = safe(o.in_reply_to)
        msg["References"] = safe(o.in_reply_to)
    if o.unsubscribe_url:
        msg["List-Unsubscribe"] = f"<{safe(o.unsubscribe_url)}>"
        msg["List-Unsubscribe-Post"] = ONE_CLICK
    msg.set_content(o.text)
    msg.add_alternative(o.html, subtype="html")
    return msg


def to_bytes(msg: EmailMessage) -> bytes:
    return msg.as_bytes(policy=SMTP)
