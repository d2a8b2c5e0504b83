"""An email as tracking sends it: its links rewritten to signed `/l/<token>` redirects and an open pixel.

Pure functions over the rendered email (its HTML is already sanitized, attributes double-quoted). Rewritten:
every `href` of an `<a>` in the HTML part and every http(s) URL in the plain-text part, except the
unsubscribe link, which stays as it is (it is its own signed link, and a click on it must never count as
interest). Anything but an absolute http(s) link (`mailto:`, `tel:`, `#anchor`) is left alone. The link
text a person reads is never changed in the HTML part; in the text part the URL is the text.
The pixel is a 1x1 image appended to the HTML part.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass

from outreach_core.tracking.tokens import click_url, is_trackable, open_url

_A_TAG = re.compile(r"<a\s[^>]*>", re.IGNORECASE)
_HREF = re.compile(r'(\shref=")([^"]*)(")', re.IGNORECASE)
_TEXT_URL = re.compile(r"https?://[^\s<>\"]+", re.IGNORECASE)
_TRAILING = ".,;:!?'"


@dataclass(frozen=True)
class Tracking:
    """What to track in one email and how its links are signed."""

    clicks: bool
    opens: bool
    secret: str  # the server's current signing key
    base_url: str  # `tracking_base_url` of the workspace
    send_id: str | None  # None in a preview: links work, nothing is recorded
    unsubscribe_url: str | None  # never rewritten

    @property
    def active(self) -> bool:
        return self.clicks or self.opens


def track_email(body_html: str, body_text: str, tracking: Tracking) -> tuple[str, str]:
    """The HTML and text parts with tracking applied (unchanged when neither flag is on)."""
    if tracking.clicks:
        link = _link_maker(tracking)
        body_html = _A_TAG.sub(
            lambda tag: _HREF.sub(lambda m: _href(m, link), tag.group(0), count=1), body_html
        )
        body_text = _TEXT_URL.sub(lambda m: _text_url(m.group(0), link), body_text)
    if tracking.opens:
        pixel = html.escape(open_url(tracking.secret, tracking.base_url, tracking.send_id), quote=True)
        body_html += (
            f'<img src="{pixel}" width="1" height="1" alt="" '
            'style="display:block;width:1px;height:1px;border:0;margin:0;padding:0">'
        )
    return body_html, body_text


def _link_maker(tracking: Tracking) -> Callable[[str], str | None]:
    made: dict[str, str] = {}

    def link(url: str) -> str | None:
        """The tracked form of `url`, or None when it stays as it is."""
        if url == tracking.unsubscribe_url or not is_trackable(url):
            return None
        if url not in made:
            made[url] = click_url(tracking.secret, tracking.base_url, tracking.send_id, url)
        return made[url]

    return link


def _href(m: re.Match[str], link: Callable[[str], str | None]) -> str:
    tracked = link(html.unescape(m.group(2)).strip())
    if tracked is None:
        return m.group(0)
    return f"{m.group(1)}{html.escape(tracked, quote=True)}{m.group(3)}"


def _text_url(found: str, link: Callable[[str], str | None]) -> str:
    url, tail = _split_trailing(found)
    tracked = link(url)
    return found if tracked is None else tracked + tail


def _split_trailing(found: str) -> tuple[str, str]:
    """A URL found in text without the punctuation that ends its sentence or closes its parenthesis
    (`text (https://x.com/a)` reads `https://x.com/a`; `https://x.org/wiki/A_(b)` keeps its own)."""
    end = len(found)
    while end > 0:
        last = found[end - 1]
        if last in _TRAILING or (last == ")" and found[:end].count("(") < found[:end].count(")")):
            end -= 1
            continue
        break
    return found[:end], found[end:]
