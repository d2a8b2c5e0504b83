"""Header values, charsets, addresses and Message-IDs as real mail carries them: tolerant, never raising.

Raw header values come from the `email` package's `compat32` parser, which keeps 8-bit bytes as surrogate
escapes. `recover` turns those back into text (UTF-8 when the bytes are valid UTF-8, else Windows-1252),
`header_text` also decodes RFC 2047 encoded words with whatever charset they name (an unknown charset
falls back the same way), and `decode_bytes` does the same for body parts.
"""

from __future__ import annotations

import codecs
import re
from email.errors import HeaderParseError
from email.header import decode_header
from email.utils import getaddresses

__all__ = [
    "addresses",
    "canonical_address",
    "decode_bytes",
    "header_text",
    "message_ids",
    "recover",
]

# Declared charsets that are often wrong: 8-bit text labelled with one of them that is valid UTF-8 is read
# as UTF-8 (a Latin-1 text almost never forms valid UTF-8 sequences, so the guess is safe).
_SINGLE_BYTE = re.compile(r"^(?:us-?ascii|ascii|iso[-_]?8859[-_]?\d+|latin[-_]?\d|windows-125\d|cp125\d)$")
_CHARSET_ALIASES = {
    "utf8": "utf-8",
    "utf8mb4": "utf-8",
    "unicode-1-1-utf-7": "utf-7",
    "x-unknown": "",
    "unknown-8bit": "",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
}
_ENCODED_WORD = re.compile(r"=\?[^?\s]+\?[bBqQ]\?[^?\s]*\?=")
_FOLD = re.compile(r"\r?\n[ \t]*")
_ANGLE_ID = re.compile(r"<([^<>\s]{1,900})>")
_BARE_ID = re.compile(r"[^<>\s,;]{1,900}@[^<>\s,;]{1,900}")
_SIMPLE_ADDRESS = re.compile(
    r"^\s*([A-Za-z0-9 ._'-]{0,80}?)\s*<?([^<>\s,;:\"()\[\]@]+@[^<>\s,;:\"()\[\]@]+)>?\s*$"
)
_ADDRESS = re.compile(r"^[^@\s<>\"(),;:]{1,64}@[A-Za-z0-9\u0080-\uffff.-]{1,255}$")


def _codec(charset: str | None) -> str | None:
    """A text codec for a declared charset name, or None when it is unknown or not a text encoding."""
    if not charset:
        return None
    name = charset.strip().strip("\"'").lower()
    name = _CHARSET_ALIASES.get(name, name)
    if not name:
        return None
    try:
        # codecs also knows bytes-to-bytes transforms (base64, zlib ...): decoding refuses those.
        b"".decode(name)
        return codecs.lookup(name).name
    except (LookupError, ValueError):
        return None


def decode_bytes(data: bytes, charset: str | None = None) -> str:
    """Bytes of a header or body part as text: the declared charset when it decodes them cleanly (unless it
    is a single-byte label on text that is valid UTF-8), else UTF-8, else Windows-1252 with replacement.
    NUL characters are dropped (`without_nul`)."""
    return without_nul(_decode_bytes(data, charset))


def without_nul(text: str) -> str:
    """Text without NUL characters. Mail text never means one, yet they come: a stray byte, a
    quoted-printable `=00` (an unescaped "LinkId=00000" in an Exchange notice), UTF-16 read as 8-bit; and
    PostgreSQL stores none (neither in text nor in JSON), so one would fail the whole batch that records
    the message, again at every try."""
    return text.replace("\x00", "") if "\x00" in text else text


def _decode_bytes(data: bytes, charset: str | None) -> str:
    if data.isascii():
        codec = _codec(charset)
        if codec and codec not in ("ascii", "utf-8") and not _SINGLE_BYTE.match(codec.replace("_", "-")):
            try:  # 7-bit encodings such as ISO-2022-JP or UTF-7 still need their codec
                return data.decode(codec)
            except (UnicodeError, LookupError):
                pass
        return data.decode("ascii")
    codec = _codec(charset)
    if codec and codec != "utf-8":
        if _SINGLE_BYTE.match(codec.replace("_", "-")):
            try:
                return data.decode("utf-8")
            except UnicodeDecodeError:
                pass
        try:
            return data.decode(codec)
        except (UnicodeError, LookupError):
            pass
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")


def recover(value: str) -> str:
    """A header value read with surrogate escapes (8-bit bytes in headers) as readable text, without NUL."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return decode_bytes(value.encode("utf-8", "surrogateescape"))
    return without_nul(value)


def header_text(value: object) -> str:
    """A raw header value unfolded, 8-bit bytes recovered and RFC 2047 encoded words decoded."""
    if value is None:
        return ""
    text = _FOLD.sub(" ", recover(str(value))).strip()
    if "=?" not in text or not _ENCODED_WORD.search(text):
        return text
    try:
        chunks = decode_header(text)
    except (HeaderParseError, ValueError, IndexError, AssertionError, LookupError):  # broken encoded words
        return text
    out: list[str] = []
    for chunk, charset in chunks:
        if isinstance(chunk, bytes):
            out.append(decode_bytes(chunk, charset))
        else:
            out.append(chunk)
    return "".join(out).strip()


def canonical_address(raw: str) -> str | None:
    """`local@domain` lower-cased (as leads are stored), the domain in IDNA form; None when `raw` is not an
    address."""
    value = raw.strip().strip("<>").strip().rstrip(".").lower()
    if value.startswith("mailto:"):
        value = value[7:]
    if not _ADDRESS.match(value):
        return None
    local, _, domain = value.rpartition("@")
    domain = domain.strip(".")
    if not domain or ".." in domain or ("." not in domain and domain != "localhost"):
        return None
    if not domain.isascii():
        try:
            domain = domain.encode("idna").decode("ascii")
        except UnicodeError:
            return None
    return f"{local}@{domain}"


def addresses(value: str) -> list[tuple[str, str]]:
    """`(display name, canonical address)` pairs of an address header; unusable entries are left out."""
    if not value:
        return []
    simple = _SIMPLE_ADDRESS.match(value)
    if simple is not None:  # "Name <a@b>" or "a@b": most headers, without the general parser's cost
        canonical = canonical_address(simple.group(2))
        if canonical:
            return [(simple.group(1).strip(), canonical)]
    try:
        pairs = getaddresses([value])
    except (ValueError, IndexError, TypeError):
        pairs = []
    out: list[tuple[str, str]] = []
    for name, addr in pairs:
        canonical = canonical_address(addr) if addr else None
        if canonical:
            out.append((name.strip().strip('"').strip(), canonical))
    if not out:  # getaddresses gives up on some broken headers: take the first thing shaped like an address
        match = _BARE_ID.search(value)
        canonical = canonical_address(match.group(0)) if match else None
        if canonical:
            out.append(("", canonical))
    return out


def message_ids(value: str) -> list[str]:
    """The Message-IDs in a Message-ID, In-Reply-To or References value, each as `<id>`, in order, without
    repeats. Ids without angle brackets are accepted when they contain `@`."""
    if not value:
        return []
    found = [f"<{m}>" for m in _ANGLE_ID.findall(value)]
    if not found:
        found = [f"<{m}>" for m in _BARE_ID.findall(value)]
    return list(dict.fromkeys(found))
