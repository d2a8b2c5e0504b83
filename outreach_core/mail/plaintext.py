"""The plain-text reading of an HTML body, for HTML-only mail: stdlib `html.parser`, never raising.

Quoted text stays recognisable: each `<blockquote>` level prefixes its lines with `> `, as a plain-text
client quotes, so the quote stripping in `quotes.py` treats both kinds of mail alike. Scripts, styles and
the head are dropped; block elements and `<br>` end lines; list items start with `- `; links keep their
text only.
"""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "head", "title", "template", "noscript", "svg", "object", "iframe"})
_BLOCK = frozenset(
    {
        "p", "div", "section", "article", "header", "footer", "table", "tr", "ul", "ol", "dl", "dt", "dd",
        "h1", "h2", "h3", "h4", "h5", "h6", "pre", "hr", "address", "center", "form", "fieldset", "main",
        "nav", "aside", "figure", "figcaption", "caption", "tbody", "thead", "tfoot",
    }
)  # fmt: skip
_VOID_BREAK = frozenset({"br", "hr"})
_SPACES = re.compile(r"[ \t\r\f\v\u00a0\u200b]+")
_TAG = re.compile(r"<[^>]*>")
_BLANK_LINES = re.compile(r"\n{3,}")


class _Converter(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.lines: list[str] = []
        self.current: list[str] = []
        self.skip = 0
        self.quote = 0
        self.pre = 0

    def _end_line(self, blank: bool = False) -> None:
        text = "".join(self.current)
        if not self.pre:
            text = _SPACES.sub(" ", text).strip()
        prefix = "> " * self.quote
        if text or blank:
            self.lines.append((prefix + text).rstrip())
        elif self.lines and self.lines[-1] != prefix.rstrip():
            self.lines.append(prefix.rstrip())
        self.current = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif tag in _VOID_BREAK:
            self._end_line(blank=tag == "br" and not self.current)
        elif tag == "blockquote":
            self._end_line()
            self.quote += 1
        elif tag == "li":
            self._end_line()
            self.current.append("- ")
        elif tag in ("td", "th"):
            self.current.append(" ")
        elif tag in _BLOCK:
            self._end_line()
            if tag == "pre":
                self.pre += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID_BREAK:
            self._end_line(blank=tag == "br" and not self.current)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif tag == "blockquote":
            self._end_line()
            self.quote = max(0, self.quote - 1)
        elif tag in _BLOCK or tag == "li":
            self._end_line()
            if tag == "pre":
                self.pre = max(0, self.pre - 1)

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.pre:
            parts = data.split("\n")
            for part in parts[:-1]:
                self.current.append(part)
                self._end_line(blank=True)
            self.current.append(parts[-1])
        else:
            self.current.append(data.replace("\n", " "))

    def text(self) -> str:
        self._end_line()
        return _BLANK_LINES.sub("\n\n", "\n".join(self.lines)).strip("\n")


def html_to_text(html: str) -> str:
    """Readable plain text of an HTML document or fragment (blockquotes as `> ` lines)."""
    converter = _Converter()
    try:
        converter.feed(html)
        converter.close()
    except (AssertionError, ValueError, IndexError):  # html.parser's last-resort failures on broken markup
        stripped = unescape(_TAG.sub(" ", html))
        return _BLANK_LINES.sub("\n\n", "\n".join(_SPACES.sub(" ", x).strip() for x in stripped.split("\n")))
    return converter.text()
