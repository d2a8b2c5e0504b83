"""The plain-text alternative of a campaign email's HTML body (`multipart/alternative`)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

_BLOCK_TAGS = frozenset(
    {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "ul", "ol", "table", "tr", "hr", "pre"}
)
_SPACES_RE = re.compile(r"\s+")
_BLANK_RUN_RE = re.compile(r"\n{3,}")


class _TextBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.links: list[tuple[str, int]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")
        elif tag == "br":
            self.parts.append("\n")
        elif tag == "li":
            self.parts.append("\n- ")
        elif tag == "a":
            href = next((value or "" for key, value in attrs if key == "href"), "")
            self.links.append((href.strip(), len(self.parts)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _BLOCK_TAGS:
            self.parts.append("\n\n")
        elif tag == "a" and self.links:
            href, start = self.links.pop()
            label = _SPACES_RE.sub(" ", "".join(self.parts[start:])).strip()
            if not href or href.startswith("#") or href in (label, f"mailto:{label}"):
                return
            self.parts.append(f" ({href})" if label else href)

    def handle_data(self, data: str) -> None:
        self.parts.append(_SPACES_RE.sub(" ", data))


def html_to_text(markup: str) -> str:
    """The plain-text alternative of an HTML body.

    Paragraphs, divs and headings are separated by a blank line, `<br>` is a line break, list items read
    `- item`, links read `text (url)` unless the text is the URL; entities are decoded, lines carry no
    trailing spaces and there is never more than one blank line in a row.
    """
    builder = _TextBuilder()
    builder.feed(markup)
    builder.close()
    lines = [_SPACES_RE.sub(" ", line).strip() for line in "".join(builder.parts).split("\n")]
    return _BLANK_RUN_RE.sub("\n\n", "\n".join(lines)).strip()
