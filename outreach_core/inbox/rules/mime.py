"""Raw RFC 5322 bytes in, a typed, immutable `ParsedMessage` out; robust to anything a mailbox can hold.

`parse_message` never raises. It reads the message with the `email` package's lenient `compat32` parser
and then walks the MIME tree itself (bounded depth and part count): text and HTML bodies are decoded with
the declared charset or a safe fallback (`headers.decode_bytes`) and kept up to `BODY_LIMIT` bytes each,
cut at a line or word boundary; attachments are never kept (only their type, name and size); an attached
`message/rfc822` or `text/rfc822-headers` part is read for the original message's headers (bounces and
complaint reports carry our own email there); `message/delivery-status` and `message/feedback-report`
parts are kept as text for `bounces.py` and `complaints.py`. What was wrong with the input is listed in
`defects` (for logs), never raised.
"""

from __future__ import annotations

import binascii
import datetime as dt
import re
from dataclasses import dataclass, field
from email import policy
from email.message import Message
from email.parser import BytesParser, HeaderParser
from email.utils import parsedate_to_datetime

from outreach_core.inbox.rules.headers import addresses, decode_bytes, header_text, message_ids, recover
from outreach_core.mail.plaintext import html_to_text

__all__ = [
    "BODY_LIMIT",
    "Attachment",
    "OriginalMessage",
    "ParsedMessage",
    "cut",
    "parse_message",
]

BODY_LIMIT = 256 * 1024
"""Text and HTML bodies are each kept up to this many bytes of UTF-8; the rest is cut off (and flagged)."""
REPORT_LIMIT = 64 * 1024
"""Delivery-status and feedback-report parts are kept up to this many characters."""
MAX_PARTS = 256
"""MIME parts looked at; parts past this are ignored (and a defect is noted)."""
MAX_DEPTH = 24
"""Nesting of multiparts and attached messages followed; deeper parts are ignored."""
MAX_HEADERS = 200
HEADER_LIMIT = 8 * 1024

_ENCODED_LIMIT = BODY_LIMIT * 2 + 4096  # base64 text decoding to more than BODY_LIMIT bytes
_QUOTED_MESSAGE_ID = re.compile(r"^[ \t>]*Message-ID:[ \t]*(<[^<>\s]{1,900}>)", re.IGNORECASE | re.MULTILINE)
_BOUNDARY_LINE = re.compile(r"^--([0-9A-Za-z'()+_,./:=?-]{1,70})[ \t]*\r?$", re.MULTILINE)
_B64_JUNK = re.compile(rb"[^A-Za-z0-9+/]")
_CTYPE_TOKEN = re.compile(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+")
_RFC822 = frozenset({"message/rfc822", "message/global", "message/partial-rfc822"})
_RFC822_HEADERS = frozenset({"text/rfc822-headers", "text/rfc822-header", "message/rfc822-headers"})
_DELIVERY_STATUS = frozenset({"message/delivery-status", "message/global-delivery-status"})
_FEEDBACK = frozenset({"message/feedback-report"})

_PARSER = BytesParser(policy=policy.compat32)
_HEADER_PARSER = HeaderParser(policy=policy.compat32)


@dataclass(frozen=True, slots=True)
class Attachment:
    """A part that is not a body: only what it is, never its content."""

    content_type: str
    filename: str | None
    size: int  # encoded size in the message, bytes


@dataclass(frozen=True, slots=True)
class OriginalMessage:
    """Headers of the message a bounce or complaint report returns (an attached message or its headers)."""

    message_id: str | None
    from_address: str | None
    to: tuple[str, ...]
    subject: str
    headers: tuple[tuple[str, str], ...] = field(repr=False)  # names lower-cased, at most 100

    def header(self, name: str) -> str | None:
        """The first header of that name (any case), decoded; None when absent."""
        key = name.lower()
        return next((v for k, v in self.headers if k == key), None)


@dataclass(frozen=True, slots=True)
class ParsedMessage:
    """One received email, decoded. Addresses are lower-cased, Message-IDs are `<id>`.

    `date` is the sender's `Date` header, for display only: what counts is when the message arrived in the
    mailbox (IMAP INTERNALDATE), which the caller knows. `text` is the plain-text body (derived from the
    HTML when the message has no text part: `text_from_html`), `html` the HTML body if any; each holds at
    most `BODY_LIMIT` bytes (`text_truncated`, `html_truncated`). `original_message_ids` are the
    Message-IDs of the message a bounce or report returns, from attached parts or header lines quoted in
    the body, nearest first; the inbox worker matches them against the send ledger.
    """

    message_id: str | None
    in_reply_to: str | None
    references: tuple[str, ...]
    from_address: str | None
    from_name: str
    to: tuple[str, ...]
    cc: tuple[str, ...]
    reply_to: tuple[str, ...]
    return_path: str | None  # "" for the null sender `<>` that bounces come from
    subject: str
    date: dt.datetime | None
    content_type: str
    report_type: str | None
    auto_submitted: str | None
    precedence: str | None
    list_id: str | None
    list_unsubscribe: str | None
    text: str
    html: str | None
    text_truncated: bool
    html_truncated: bool
    text_from_html: bool
    delivery_status: str | None
    feedback_report: str | None
    original: OriginalMessage | None
    original_message_ids: tuple[str, ...]
    attachments: tuple[Attachment, ...]
    headers: tuple[tuple[str, str], ...] = field(repr=False)  # top-level headers, names lower-cased
    defects: tuple[str, ...]
    size: int

    def header(self, name: str) -> str | None:
        """The first top-level header of that name (any case), decoded; None when absent."""
        key = name.lower()
        for k, v in self.headers:
            if k == key:
                return v
        return None


def cut(text: str, limit: int = BODY_LIMIT) -> tuple[str, bool]:
    """`text` shortened to at most `limit` bytes of UTF-8 at a line (else word) boundary near the end;
    `(text, was_cut)`."""
    if len(text) * 4 <= limit:
        return text, False
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return text, False
    head = data[:limit].decode("utf-8", "ignore")
    window = max(0, len(head) - 2048)
    for sep in ("\n", " "):
        at = head.rfind(sep, window)
        if at > 0:
            return head[:at].rstrip(), True
    return head, True


class _Walk:
    """State of one walk over a message's parts."""

    def __init__(self) -> None:
        self.plain: list[str] = []
        self.html: list[str] = []
        self.plain_size = 0
        self.html_size = 0
        self.delivery_status: str | None = None
        self.feedback_report: str | None = None
        self.originals: list[OriginalMessage] = []
        self.attachments: list[Attachment] = []
        self.defects: list[str] = []
        self.parts = 0


def parse_message(raw: bytes) -> ParsedMessage:
    """Parse one received email. Never raises: broken input gives empty fields and `defects`.

    The stdlib parser and our walk are lenient and bounded; should either still fail on some input (none
    found by the hypothesis tests), the result is an empty message whose `defects` names the error, so the
    worker logs it and moves on instead of stopping on one message."""
    try:
        walk = _Walk()
        msg = _PARSER.parsebytes(raw)
        _walk(msg, walk)
        return _build(msg, walk, len(raw))
    except Exception as exc:
        empty = _Walk()
        empty.defects.append(f"unparseable message: {type(exc).__name__}: {str(exc)[:200]}")
        return _build(Message(), empty, len(raw))


def _build(msg: Message, walk: _Walk, size: int) -> ParsedMessage:
    headers = _headers(msg)
    first = dict(reversed(headers))  # first occurrence wins
    from_pairs = addresses(first.get("from", ""))
    message_id = next(iter(message_ids(first.get("message-id", ""))), None)
    text_raw = "\n\n".join(walk.plain)
    html_raw = "\n".join(walk.html) if walk.html else None
    html, html_cut = cut(html_raw) if html_raw is not None else (None, False)
    text_from_html = not text_raw.strip() and html is not None
    if text_from_html and html is not None:
        text_raw = html_to_text(html, links=False)
    text, text_cut = cut(text_raw)
    own = set() if message_id is None else {message_id}
    ids: list[str] = [o.message_id for o in walk.originals if o.message_id]
    ids += _QUOTED_MESSAGE_ID.findall(text)
    original_ids = tuple(i for i in dict.fromkeys(ids) if i not in own)
    return_path = first.get("return-path")
    return ParsedMessage(
        message_id=message_id,
        in_reply_to=next(iter(message_ids(first.get("in-reply-to", ""))), None),
        references=tuple(message_ids(first.get("references", ""))),
        from_address=from_pairs[0][1] if from_pairs else None,
        from_name=from_pairs[0][0] if from_pairs else "",
        to=tuple(a for _, a in addresses(first.get("to", ""))),
        cc=tuple(a for _, a in addresses(first.get("cc", ""))),
        reply_to=tuple(a for _, a in addresses(first.get("reply-to", ""))),
        return_path=None if return_path is None else next((a for _, a in addresses(return_path)), ""),
        subject=first.get("subject", ""),
        date=_date(first.get("date")),
        content_type=_content_type(msg),
        report_type=_param(msg, "report-type"),
        auto_submitted=first.get("auto-submitted"),
        precedence=first.get("precedence"),
        list_id=first.get("list-id"),
        list_unsubscribe=first.get("list-unsubscribe"),
        text=text,
        html=html,
        text_truncated=text_cut or (walk.plain_size > BODY_LIMIT and not text_from_html),
        html_truncated=html_cut or walk.html_size > BODY_LIMIT,
        text_from_html=text_from_html,
        delivery_status=walk.delivery_status,
        feedback_report=walk.feedback_report,
        original=walk.originals[0] if walk.originals else None,
        original_message_ids=original_ids,
        attachments=tuple(walk.attachments),
        headers=headers,
        defects=tuple(walk.defects),
        size=size,
    )


def _headers(msg: Message, limit: int = MAX_HEADERS) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    for name, value in msg.raw_items():
        if len(out) >= limit:
            break
        out.append((recover(str(name)).strip().lower(), header_text(str(value)[:HEADER_LIMIT])))
    return tuple(out)


def _date(value: str | None) -> dt.datetime | None:
    if not value:
        return None
    try:
        parsed = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=dt.UTC)


def _content_type(part: Message) -> str:
    """The part's `type/subtype`, lower-cased; the default (text/plain, message/rfc822 in a digest) when
    the header is missing or unreadable (also when a line break comes before a missing `;`)."""
    value = recover(str(part.get("content-type", ""))).strip().lower()
    token = _CTYPE_TOKEN.match(value)
    if token is not None:
        return token.group(0)
    return part.get_default_type()


def _param(part: Message, name: str) -> str | None:
    value = part.get_param(name)
    if isinstance(value, tuple):  # RFC 2231 value
        value = value[2]
    return recover(str(value)).strip().lower() if value else None


def _filename(part: Message) -> str | None:
    try:
        name = part.get_filename()
    except (LookupError, ValueError, UnicodeError):  # an RFC 2231 name in an unknown charset
        return None
    return header_text(name) if name else None


def _payload(part: Message) -> list[Message | str] | str:
    """The part's payload without transfer decoding; compat32 applies the charset parameter to 8-bit text
    here, and a parameter Python cannot look up (a NUL in it) raises: then the bytes as Latin-1."""
    try:
        payload = part.get_payload()
    except (ValueError, LookupError):
        raw = part.get_payload(decode=True)
        return raw.decode("latin-1") if isinstance(raw, bytes) else ""
    if isinstance(payload, list):
        return [p for p in payload if isinstance(p, Message | str)]
    return payload if isinstance(payload, str) else str(payload)


def _is_attachment(part: Message) -> bool:
    disposition = recover(str(part.get("content-disposition") or "")).strip().lower()
    return disposition.startswith("attachment")


def _walk(root: Message, walk: _Walk) -> None:
    stack: list[tuple[Message, int, bool]] = [(root, 0, False)]
    while stack:
        part, depth, attached = stack.pop()
        walk.parts += 1
        if walk.parts > MAX_PARTS:
            walk.defects.append(f"more than {MAX_PARTS} parts: the rest ignored")
            return
        if depth > MAX_DEPTH:
            walk.defects.append(f"parts nested deeper than {MAX_DEPTH}: ignored")
            continue
        ctype = _content_type(part)
        payload = _payload(part)
        if ctype.startswith("multipart/") and isinstance(payload, str):
            repaired = _repair_boundary(part, payload, walk)
            if repaired is not None:
                part, payload = repaired, _payload(repaired)
        if ctype in _DELIVERY_STATUS or ctype in _FEEDBACK:
            text = _report_text(part)
            if ctype in _FEEDBACK:
                walk.feedback_report = walk.feedback_report or text
            elif walk.delivery_status is None:
                walk.delivery_status = text
            elif text and len(walk.delivery_status) < REPORT_LIMIT:  # several reports in one message
                walk.delivery_status = f"{walk.delivery_status}\n\n{text}"[:REPORT_LIMIT]
            continue
        if ctype in _RFC822_HEADERS:
            if isinstance(payload, list):
                _note_original(payload, walk)
            else:
                _note_headers(_decoded(part), walk)
            continue
        if isinstance(payload, list):
            if not ctype.startswith("multipart/"):  # an attached message: its text is not this message's
                if ctype in _RFC822:
                    _note_original(payload, walk)
                attached = True
            for child in reversed(payload):
                if isinstance(child, Message):
                    stack.append((child, depth + 1, attached))
            continue
        if ctype in ("text/plain", "text/html") and not attached and not _is_attachment(part):
            text = _decoded(part)
            if ctype == "text/plain":
                walk.plain_size += len(text)
                if walk.plain_size - len(text) <= BODY_LIMIT:
                    walk.plain.append(text)
            else:
                walk.html_size += len(text)
                if walk.html_size - len(text) <= BODY_LIMIT:
                    walk.html.append(text)
            continue
        if ctype.startswith("multipart/") and not attached:
            walk.defects.append(f"{ctype} without parts: read as text")
            walk.plain.append(_decoded(part))
            continue
        if part is root and ctype.startswith("text/"):
            walk.plain.append(_decoded(part))  # a message whose body is text/enriched, text/x-... : read it
            continue
        if not attached:
            size = len(payload) if isinstance(payload, str) else 0
            walk.attachments.append(Attachment(ctype, _filename(part), size))


def _repair_boundary(part: Message, payload: str, walk: _Walk) -> Message | None:
    """A multipart whose boundary parameter is missing or wrong: take the first `--token` line as the
    boundary and read the part again."""
    match = _BOUNDARY_LINE.search(payload)
    if match is None or match.group(1) == _param(part, "boundary"):
        return None
    walk.defects.append("multipart boundary missing or wrong: recovered from the body")
    try:
        part.set_param("boundary", match.group(1))
        repaired = _PARSER.parsebytes(part.as_bytes())
    except (ValueError, TypeError, LookupError, UnicodeError, IndexError):  # cannot be written back
        walk.defects.append("the recovered boundary could not be applied: read as text")
        return None
    return repaired if isinstance(_payload(repaired), list) else None


def _decoded(part: Message) -> str:
    """A leaf part's payload as text: transfer encoding undone (base64 bounded and lenient), then the
    charset."""
    cte = str(part.get("content-transfer-encoding", "")).strip().lower()
    if cte == "base64":
        payload = _payload(part)
        data = (
            _b64(str(payload)[:_ENCODED_LIMIT].encode("ascii", "ignore")) if isinstance(payload, str) else b""
        )
    else:
        # quoted-printable, 7bit, 8bit, binary and unknown encodings: compat32 hands back the raw bytes
        # (8-bit bytes included), which the charset step then reads.
        decoded = part.get_payload(decode=True)
        data = decoded if isinstance(decoded, bytes) else b""
    return decode_bytes(data, _param(part, "charset")).replace("\r\n", "\n")


def _b64(data: bytes) -> bytes:
    """Base64 that tolerates line noise and lost padding, as mail clients do."""
    clean = _B64_JUNK.sub(b"", data)
    if len(clean) % 4 == 1:
        clean = clean[:-1]
    clean += b"=" * (-len(clean) % 4)
    try:
        return binascii.a2b_base64(clean)
    except (binascii.Error, ValueError):
        return b""


def _report_text(part: Message) -> str:
    """A delivery-status or feedback-report part as `Field: value` lines, groups separated by blank lines
    (compat32 hands them over already split into header blocks)."""
    payload = _payload(part)
    if isinstance(payload, str):
        return _decoded(part)[:REPORT_LIMIT]
    blocks: list[str] = []
    size = 0
    for block in payload:
        if not isinstance(block, Message):
            continue
        lines = [f"{recover(str(k))}: {header_text(str(v)[:HEADER_LIMIT])}" for k, v in block.raw_items()]
        body = _payload(block)
        if isinstance(body, str) and body.strip():
            lines.append(recover(body).strip())
        text = "\n".join(lines)
        size += len(text)
        if size > REPORT_LIMIT:
            break
        blocks.append(text)
    return "\n\n".join(blocks)


def _note_original(payload: list[Message | str], walk: _Walk) -> None:
    inner = next((p for p in payload if isinstance(p, Message)), None)
    if inner is not None:
        walk.originals.append(_original(inner))


def _note_headers(text: str, walk: _Walk) -> None:
    inner = _HEADER_PARSER.parsestr(text.lstrip("\n")[:REPORT_LIMIT])
    walk.originals.append(_original(inner))


def _original(msg: Message) -> OriginalMessage:
    headers = _headers(msg, limit=100)
    first = dict(reversed(headers))
    from_pairs = addresses(first.get("from", ""))
    return OriginalMessage(
        message_id=next(iter(message_ids(first.get("message-id", ""))), None),
        from_address=from_pairs[0][1] if from_pairs else None,
        to=tuple(a for _, a in addresses(first.get("to", ""))),
        subject=first.get("subject", ""),
        headers=headers,
    )
