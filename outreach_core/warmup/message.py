"""A warmup email as it goes out: plain text, an ordinary From/To/Subject/Date/Message-ID, threading
headers for a reply, and the marker header with its token (no links, no images, no unsubscribe)."""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from dataclasses import dataclass
from email.headerregistry import Address
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8
from email.utils import format_datetime, make_msgid

from outreach_core.warmup.rules import HEADER

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


@dataclass(frozen=True)
class WarmupEmail:
    from_email: str
    from_name: str | None
    to_email: str
    subject: str
    text: str
    message_id: str
    token: str
    date: dt.datetime
    in_reply_to: str | None = None


def new_message_id(email: str) -> str:
    domain = email.rpartition("@")[2]
    try:
        domain = domain.encode("idna").decode("ascii")
    except UnicodeError:
        domain = ""
    return make_msgid(domain=domain if re.fullmatch(r"[A-Za-z0-9.-]+", domain) else "localhost")


def to_bytes(w: WarmupEmail) -> bytes:
    """The message bytes (CRLF); raises ValueError when a header value cannot be written."""
    for value in (w.from_email, w.from_name or "", w.to_email, w.subject, w.message_id, w.in_reply_to or ""):
        if _CONTROL.search(value):
            raise ValueError("a header value contains a control character")
    utf8 = not (w.from_email.isascii() and w.to_email.isascii())
    msg = EmailMessage(policy=SMTPUTF8 if utf8 else SMTP)
    msg["From"] = _address(w.from_email, w.from_name)
    msg["To"] = _address(w.to_email, None)
    msg["Subject"] = w.subject
    msg["Date"] = format_datetime(w.date.astimezone(dt.UTC))
    msg["Message-ID"] = w.message_id
    if w.in_reply_to:
        msg["In-Reply-To"] = w.in_reply_to
        msg["References"] = w.in_reply_to
    msg[HEADER] = w.token
    msg.set_content(w.text)
    return msg.as_bytes(policy=msg.policy)


def _address(email: str, name: str | None) -> Address:
    local, _, domain = email.rpartition("@")
    with contextlib.suppress(UnicodeError):
        domain = domain.encode("idna").decode("ascii")
    return Address(display_name=name or "", username=local, domain=domain)
