"""The plain-text reading of an HTML body: the one converter of the service (stdlib `html.parser`, never
raising).

Two callers, one reading: the `multipart/alternative` text part of every email we send (campaign emails,
replies from a thread) and the text of received HTML-only mail (the inbox rules classify it and strip its
quotes).

- Paragraphs, headings, lists, tables, `<pre>` and quotes are separated by a blank line; `<div>`, table rows,
  list items and `<br>` end a line (as mail clients write their own text part: a `<div>` per line in a
  composer is one line, not a paragraph); there is never more than one blank line in a row.
- List items read `- item`; table cells are separated by a space.
- Each `<blockquote>` level prefixes its lines with `> `, as a plain-text client quotes, so the quote
  stripping in `inbox/rules/quotes.py` treats both kinds of mail alike.
- Scripts, styles, the head and embedded objects are dropped; entities are decoded; lines carry no trailing
  spaces; `<pre>` keeps its spacing.
- Links read `text (url)` unless the text is the URL (or `mailto:` it), or the URL is empty or an anchor.
  `links=False` keeps the text only: the inbox reads what a person wrote, and a newsletter's hundreds of
  tracking URLs would only bloat the text the classifier and the AI labels read.
"""

from __future__ import annotations

import re
from html import unescape
from html.parser import HTMLParser

__all__ = ["html_to_text"]

_SKIP = frozenset({"script", "style", "head", "title", "template", "noscript", "svg", "object", "iframe"})
_PARAGRAPH = frozenset(
    {
        "p", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol", "dl", "table", "pre", "hr", "address",
        "figure", "blockquote",
    }
)  # fmt: skip
_LINE = frozenset(
    {
        "div", "section", "article", "header", "footer", "tr", "dt", "dd", "center", "form", "fieldset",
        "main", "nav", "aside", "figcaption", "caption", "tbody", "thead", "tfoot", "li",
    }
)  # fmt: skip
_SPACES = re.compile(r"[ \t\r\n\f\v\u00a0\u200b]+")
_TAG = re.compile(r"<[^>]*>")
_BLANK_LINES = re.compile(r"\n{3,}")


class _Converter(HTMLParser):
    def __init__(self, *, links: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.with_links = links
        self.lines: list[str] = []
        self.current: list[str] = []
        self.skip = 0
        self.quote = 0
        self.pre = 0
        self.gap: int | None = None  # a blank line is due before the next text, at this quote level
        self.links: list[tuple[str, list[str]]] = []  # open links: href and the text seen inside

    def _emit(self, text: str) -> None:
        if self.gap is not None:
            if self.lines and self.lines[-1].strip("> "):
                self.lines.append(("> " * min(self.gap, self.quote)).rstrip())
            self.gap = None
        self.lines.append(("> " * self.quote + text).rstrip())

    def _end_line(self) -> None:
        text = "".join(self.current)
        if not self.pre:
            text = _SPACES.sub(" ", text).strip()
        self.current = []
        if text or self.pre:
            self._emit(text)

    def _paragraph(self) -> None:
        self._end_line()
        self.gap = self.quote if self.gap is None else min(self.gap, self.quote)

    def _break(self) -> None:
        """`<br>`: ends the line; on an empty line it is a blank line (at most one in a row)."""
        if _SPACES.sub("", "".join(self.current)):
            self._end_line()
        else:
            self.current = []
            if self.lines:
                self._paragraph()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _SKIP:
            self.skip += 1
        elif self.skip:
            return
        elif tag == "br":
            self._break()
        elif tag == "a":
            href = next((value or "" for key, value in attrs if key == "href"), "")
            self.links.append((href.strip(), []))
        elif tag in ("td", "th"):
            self.current.append(" ")
        elif tag in _PARAGRAPH:
            self._paragraph()
            if tag == "blockquote":
                self.quote += 1
            elif tag == "pre":
                self.pre += 1
        elif tag in _LINE:
            self._end_line()
            if tag == "li":
                self.current.append("- ")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("br", "hr"):
            self.handle_starttag(tag, attrs)

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIP:
            self.skip = max(0, self.skip - 1)
        elif self.skip:
            return
        elif tag == "a" and self.links:
            href, seen = self.links.pop()
            if self.links:  # a link inside a link (broken markup): the outer one gets the text too
                self.links[-1][1].extend(seen)
            label = _SPACES.sub(" ", "".join(seen)).strip()
            if (
                self.with_links
                and href
                and not href.startswith("#")
                and href not in (label, f"mailto:{label}")
            ):
                self.current.append(f" ({href})" if label else href)
        elif tag in _PARAGRAPH:
            if tag == "pre":
                self._end_line()
                self.pre = max(0, self.pre - 1)
            self._paragraph()
            if tag == "blockquote":
                self.quote = max(0, self.quote - 1)
        elif tag in _LINE:
            self._end_line()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.links:
            self.links[-1][1].append(data)
        if self.pre:
            parts = data.split("\n")
            for part in parts[:-1]:
                self.current.append(part)
                self._end_line()
            self.current.append(parts[-1])
        else:
            self.current.append(data)

    def text(self) -> str:
        self._end_line()
        return "\n".join(self.lines).strip("\n")


def html_to_text(html: str, *, links: bool = True) -> str:
    """The plain-text reading of an HTML document or fragment (see the module's rules); `links=False` keeps
    a link's text without its URL."""
    converter = _Converter(links=links)
    try:
        converter.feed(html)
        converter.close()
    except (AssertionError, ValueError, IndexError):  # html.parser's last-resort failures on broken markup
        stripped = unescape(_TAG.sub(" ", html))
        lines = (_SPACES.sub(" ", x).strip() for x in stripped.split("\n"))
        return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip("\n")
    return converter.text()
