"""The one HTML-to-text converter (`mail/plaintext.py`): the rules both of its readers rely on.

The campaign's text part is pinned in `test_rendering.py` (`test_html_to_text`), the inbox's reading of
HTML-only mail in `tests/inbox/test_mime.py` and `test_classify.py`; these are the rules the merge of the two
converters (issue 26) decided.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from outreach_core.mail.plaintext import html_to_text


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        # a <div> is a line (as the HTML shows it), a <p> a paragraph
        ("<div>one</div><div>two</div><p>three</p>", "one\ntwo\n\nthree"),
        ("<div>Hi</div><div><br></div><div>Jane</div>", "Hi\n\nJane"),
        # quotes, at every depth, set apart by a blank line
        (
            "<div>Yes.</div><blockquote>Hi<br>there<blockquote>deeper</blockquote></blockquote>",
            "Yes.\n\n> Hi\n> there\n>\n> > deeper",
        ),
        ("<blockquote><p>a</p><p>b</p></blockquote>", "> a\n>\n> b"),
        # what a reader never sees is dropped
        ("<head><title>t</title><style>p{}</style></head><p>x<script>y()</script></p>", "x"),
        # table cells are spaced, rows are lines
        ("<table><tr><td>a</td><td>b</td></tr><tr><td>c</td></tr></table>", "a b\nc"),
        # <pre> keeps its spacing
        ("<pre>a  b\n  c</pre><p>d</p>", "a  b\n  c\n\nd"),
        # anchors and empty hrefs are not URLs worth showing
        ('<a href="#top">top</a> <a href="">x</a> <a href="https://e.com"></a>', "top x https://e.com"),
    ],
)
def test_reading(markup: str, expected: str) -> None:
    assert html_to_text(markup) == expected


def test_links_false_keeps_the_text_only() -> None:
    markup = '<p>See <a href="https://t.example/c/very-long-token">the deck</a> and <a href="https://e.com">https://e.com</a></p>'
    assert html_to_text(markup) == "See the deck (https://t.example/c/very-long-token) and https://e.com"
    assert html_to_text(markup, links=False) == "See the deck and https://e.com"


@given(st.text(alphabet=st.sampled_from("<>/!-[]&;#\"'= abcpdivbrlquote\n"), max_size=200))
def test_never_raises_and_leaves_no_blank_run(markup: str) -> None:
    text = html_to_text(markup)
    assert "\n\n\n" not in text
    assert all(line == line.rstrip() for line in text.split("\n"))
