"""The signed tracking links: `/l/<token>` (a click: 302 to the link's target) and `/o/<token>` (an open:
the 1x1 pixel).

A click token carries the send id and the link's target URL, an open token the send id, both signed with
the server's secret (`signing.py`, purposes `click` and `open`): the redirect needs no database read, and a
token cannot be forged or altered to point anywhere else (404, never an open redirect). Tokens do not
expire (a link in an email must keep working) and are verified against earlier secret keys too, after a
rotation. A preview's links carry no send id (`None`): they redirect but record nothing.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from urllib.parse import urlsplit

from outreach_core.kernel.signing import InvalidSignature, sign, verify

CLICK = "click"
OPEN = "open"
CLICK_PATH = "/l/"
OPEN_PATH = "/o/"
_NEVER = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)
_EPOCH = dt.datetime(1970, 1, 2, tzinfo=dt.UTC)  # verification time: tokens never expire


class NotATrackingToken(ValueError):
    """Forged, altered, truncated or malformed: answered 404."""


@dataclass(frozen=True)
class Click:
    send_id: str | None
    url: str


def is_trackable(url: str) -> bool:
    """An absolute http(s) URL with a host: the only links rewritten, and the only targets redirected to."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return False
    return parts.scheme.lower() in ("http", "https") and bool(parts.netloc)


def location(url: str) -> str:
    """`url` as a `Location` header value: every character outside printable ASCII (spaces, control
    characters, non-ASCII) percent-encoded as UTF-8 (RFC 3986), so no target can add a header."""
    if url.isascii() and url.isprintable() and " " not in url:  # the usual case: nothing to encode
        return url
    return "".join(
        c if 32 < ord(c) < 127 else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
        for c in url
    )


def click_url(secret: str, base_url: str, send_id: str | None, url: str) -> str:
    """The tracked form of link `url` in send `send_id`'s email."""
    return f"{base_url}{CLICK_PATH}{sign(secret, CLICK, {'s': send_id, 'u': url}, _NEVER)}"


def open_url(secret: str, base_url: str, send_id: str | None) -> str:
    """The pixel of send `send_id`'s email."""
    return f"{base_url}{OPEN_PATH}{sign(secret, OPEN, {'s': send_id}, _NEVER)}"


def read_click(secrets: list[str], token: str) -> Click:
    """The send and target of a click token; `NotATrackingToken` for anything not signed by us."""
    payload = _verify(secrets, CLICK, token)
    send_id, url = payload.get("s"), payload.get("u")
    if not isinstance(url, str) or not is_trackable(url) or not (send_id is None or isinstance(send_id, str)):
        raise NotATrackingToken("not a click token")
    return Click(send_id, url)


def read_open(secrets: list[str], token: str) -> str | None:
    """The send of an open token (None for a preview's); `NotATrackingToken` for anything not ours."""
    send_id = _verify(secrets, OPEN, token).get("s")
    if not (send_id is None or isinstance(send_id, str)):
        raise NotATrackingToken("not an open token")
    return send_id


def _verify(secrets: list[str], purpose: str, token: str) -> dict[str, object]:
    try:
        return verify(secrets, purpose, token, _EPOCH)
    except InvalidSignature as exc:
        raise NotATrackingToken(str(exc)) from exc
