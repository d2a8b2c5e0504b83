"""The email as it goes out: standard `email` package, `multipart/alternative`, threading and RFC 8058.

Two rules beyond what the `email` package does by itself:

- Headers that carry URLs or message ids (`List-Unsubscribe`, `Message-ID`, `In-Reply-To`, `References`)
  are written as plain ASCII, folded only between their items and never as RFC 2047 encoded words: mail
  providers read them as written (a `List-Unsubscribe` of `=?utf-8?q?...?=` is no unsubscribe link), and
  encoded words are not allowed in them anyway (RFC 2047 section 5).
- An address whose local part is not ASCII (`josé@example.com`, RFC 6532) makes the whole message UTF-8
  (`SMTPUTF8` policy): such a message needs a server that offers SMTPUTF8, which the SMTP adapter checks.
  Otherwise the message is 7-bit headers with encoded words where text needs them (subject, display name).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from email.headerregistry import Address, BaseHeader, HeaderRegistry, UnstructuredHeader
from email.message import EmailMessage
from email.policy import SMTP, SMTPUTF8, EmailPolicy
from email.utils import format_datetime, make_msgid
from typing import Any, cast

from outreach_core.mail.sanitize import header_safe

ONE_CLICK = "List-Unsubscribe=One-Click"
FOLD_AT = 78  # RFC 5322: lines SHOULD stay within 78 characters ...
LINE_LIMIT = 998  # ... and MUST stay within 998

_REPLY_PREFIX = re.compile(r"^\s*(re|aw|sv|antw|réf|ref)\s*:", re.IGNORECASE)
"""A subject that already answers: `Re:` and its German, Scandinavian, Dutch and French forms."""
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters (C0 but the tab, DEL, C1) and Unicode line separators: none may reach a header."""


def reply_subject(subject: str) -> str:
    """`Re: <subject>` on one header-safe line, without piling up prefixes on a subject that already answers
    (`Re:`, `AW:`, `SV:` ...): the subject of a reply in a thread, a same-thread follow-up and a warmup
    answer."""
    subject = header_safe(subject)
    if not subject:
        return "Re:"
    return subject if _REPLY_PREFIX.match(subject) else f"Re: {subject}"


class UnsafeHeader(ValueError):
    """The email cannot be built: a value that goes into a header is unusable (a line break or another
    control character, an address that cannot be written). `mailbox` says whose value it is: True for the
    mailbox's own settings (every email from it would fail the same way), False for this email's (the
    lead's address, the subject as rendered for the lead)."""

    def __init__(self, reason: str, *, mailbox: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.mailbox = mailbox


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
    in_reply_to: str | None  # same-thread follow-up: the thread's latest Message-ID
    references: tuple[str, ...] = ()  # same-thread follow-up: the thread's Message-IDs, oldest first

    @property
    def needs_utf8(self) -> bool:
        """An envelope address is not plain ASCII: the message is UTF-8 and needs SMTPUTF8."""
        return not (self.from_email.isascii() and self.to_email.isascii())


def new_message_id(domain: str) -> str:
    """A fresh `<...@domain>` Message-ID for the mailbox's own domain (`localhost` when that domain cannot be
    written as a plain ASCII host name)."""
    try:
        ascii_domain = domain.encode("idna").decode("ascii") if domain else ""
    except UnicodeError:
        ascii_domain = ""
    if not re.fullmatch(r"[A-Za-z0-9.-]+", ascii_domain):
        ascii_domain = "localhost"
    return make_msgid(domain=ascii_domain)


def safe(value: str, what: str, *, mailbox: bool) -> str:
    """A header value; refuses line breaks and other control characters, so nothing a lead, a mailbox or a
    template holds can add a header."""
    if _CONTROL.search(value):
        raise UnsafeHeader(f"{what} contains a line break or another control character", mailbox=mailbox)
    return value


def check_headers(o: Outgoing) -> None:
    """Refuse (`UnsafeHeader`) an email whose header values are unusable; the mailbox's own values first, so
    a broken display name is reported as the mailbox's even when it also appears in the subject."""
    safe(o.from_email, "the mailbox's address (email)", mailbox=True)
    safe(o.from_name or "", "the mailbox's display name (displayName)", mailbox=True)
    safe(o.message_id, "the Message-ID (from the mailbox's domain)", mailbox=True)
    safe(o.to_email, "the lead's address", mailbox=False)
    safe(o.subject, "the subject as rendered for this lead", mailbox=False)
    for item in (o.unsubscribe_url or "", o.in_reply_to or "", *o.references):
        safe(item, "a threading or unsubscribe header", mailbox=False)


def build_message(o: Outgoing) -> EmailMessage:
    """From (with display name), To, Subject, Date, the pre-assigned Message-ID, threading headers, the
    one-click unsubscribe headers in link mode, and the text and HTML parts as `multipart/alternative`.

    Raises `UnsafeHeader` (with whose value it is) when the email cannot be built."""
    check_headers(o)
    msg = EmailMessage(policy=_policy(o.needs_utf8))
    msg["From"] = _address(o.from_email, o.from_name, "the mailbox's address (email)", mailbox=True)
    msg["To"] = _address(o.to_email, None, "the lead's address", mailbox=False)
    msg["Subject"] = o.subject
    msg["Date"] = format_datetime(o.date.astimezone(dt.UTC))
    msg["Message-ID"] = o.message_id
    references = o.references or ((o.in_reply_to,) if o.in_reply_to else ())
    if o.in_reply_to:
        msg["In-Reply-To"] = o.in_reply_to
    if references:
        msg["References"] = " ".join(references)
    if o.unsubscribe_url:
        msg["List-Unsubscribe"] = f"<{_ascii_url(o.unsubscribe_url)}>"
        msg["List-Unsubscribe-Post"] = ONE_CLICK
    msg.set_content(o.text)
    msg.add_alternative(o.html, subtype="html")
    return msg


def to_bytes(msg: EmailMessage) -> bytes:
    """The message as it goes over SMTP (CRLF line ends; UTF-8 headers only in a SMTPUTF8 message)."""
    return msg.as_bytes(policy=msg.policy)


def _address(email: str, name: str | None, what: str, *, mailbox: bool) -> Address:
    local, _, domain = email.rpartition("@")
    try:
        ascii_domain = domain.encode("idna").decode("ascii")  # an internationalised domain as an A-label
        return Address(display_name=name or "", username=local, domain=ascii_domain)
    except (UnicodeError, ValueError) as exc:
        raise UnsafeHeader(f"{what} cannot be written in a header", mailbox=mailbox) from exc


def _ascii_url(url: str) -> str:
    """The URL in ASCII: characters outside it percent-encoded (RFC 3986), spaces too."""
    return "".join(c if c.isascii() and c != " " else "".join(f"%{b:02X}" for b in c.encode()) for c in url)


# --- headers written as they are ---------------------------------------------------------------------------


class _PlainHeader:
    """A header of URLs or message ids, written exactly as given: folded at the spaces between its items
    (lines of at most 78 characters where the items allow), never RFC 2047 encoded."""

    max_count: int | None = 1
    name: str  # the registry combines this class with `BaseHeader`, which has the name

    @classmethod
    def parse(cls, value: str, kwds: dict[str, Any]) -> None:
        if not value.isascii() or _CONTROL.search(value):
            raise ValueError("a URL or message-id header must be plain printable ASCII")
        kwds["parse_tree"] = UnstructuredHeader.value_parser(value)
        kwds["decoded"] = " ".join(value.split())

    def fold(self, *, policy: EmailPolicy) -> str:
        name = self.name
        lines = [f"{name}:"]
        for item in str(self).split():
            if len(lines[-1]) + 1 + len(item) > FOLD_AT and lines[-1] != f"{name}:":
                lines.append("")
            lines[-1] += f" {item}"
        if any(len(line) > LINE_LIMIT for line in lines):
            raise ValueError(f"{name} has an item longer than an email line may be")
        return policy.linesep.join(lines) + policy.linesep


def _registry() -> HeaderRegistry:
    registry = HeaderRegistry()
    for name in ("message-id", "in-reply-to", "references", "list-unsubscribe"):
        # the registry mixes `BaseHeader` in itself (typeshed wants the mix already done)
        registry.map_to_type(name, cast("type[BaseHeader]", _PlainHeader))
    return registry


_REGISTRY = _registry()
_POLICIES = {False: SMTP.clone(header_factory=_REGISTRY), True: SMTPUTF8.clone(header_factory=_REGISTRY)}


def _policy(utf8: bool) -> EmailPolicy[EmailMessage]:
    return _POLICIES[utf8]
