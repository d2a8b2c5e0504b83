"""Body sanitising: what survives nh3 (template syntax) and what never does (scripts, handlers)."""

from __future__ import annotations

import pytest

from outreach_core.mail.sanitize import header_safe, sanitize_body


def test_script_and_style_are_removed_with_their_contents() -> None:
    body = "<p>Hi</p><script>alert('x')</script><style>p { color: red }</style>"
    assert sanitize_body(body) == "<p>Hi</p>"


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ('<img src="https://e.com/a.png" onerror="alert(1)">', '<img src="https://e.com/a.png">'),
        ('<p onclick="steal()">Hi</p>', "<p>Hi</p>"),
        ('<a href="javascript:alert(1)">x</a>', "<a>x</a>"),
        ('<a href="JaVaScRiPt:alert(1)">x</a>', "<a>x</a>"),
        (
            '<a href="https://e.com" onmouseover="x()" style="color:red">x</a>',
            '<a href="https://e.com">x</a>',
        ),
        ("<iframe src='https://e.com'></iframe><p>ok</p>", "<p>ok</p>"),
    ],
)
def test_dangerous_markup_is_removed(body: str, expected: str) -> None:
    assert sanitize_body(body) == expected


def test_allowed_links_keep_their_schemes() -> None:
    body = '<p><a href="https://e.com">a</a> <a href="mailto:x@e.com">b</a> <a href="http://e.com">c</a></p>'
    assert sanitize_body(body) == body


@pytest.mark.parametrize(
    "body",
    [
        "<p>{{first_name}}, {{ company | your team }} {Hi|Hello {there|friend}}</p>",
        '<p><a href="https://example.com/{{company}}">site</a></p>',
        '<p><a href="{{website}}">site</a></p>',
        '<p><a href="{{website|https://example.com}}">site</a></p>',
        '<p><a href="mailto:{{email}}">me</a></p>',
        "<p>{not spintax} {Hi|}</p>",
    ],
)
def test_template_syntax_survives_sanitising(body: str) -> None:
    assert sanitize_body(body) == body


def test_plain_text_becomes_paragraphs_and_line_breaks() -> None:
    body = "Hi {{first_name}},\r\n\r\nA & B < C\nsecond line\n\n\n  \nBye"
    assert sanitize_body(body) == (
        "<p>Hi {{first_name}},</p><p>A &amp; B &lt; C<br>second line</p><p>Bye</p>"
    )


def test_angle_brackets_that_are_no_tag_stay_text() -> None:
    assert sanitize_body("Use <name> here") == "<p>Use &lt;name&gt; here</p>"


@pytest.mark.parametrize("body", ["", "   ", "\n\n\t", "<p> </p>", "<script>x</script>"])
def test_empty_bodies_become_empty(body: str) -> None:
    assert sanitize_body(body) == ""


def test_html_whose_tags_all_go_is_kept_as_a_paragraph() -> None:
    # Otherwise a second pass would see plain text and wrap it: sanitising must be idempotent.
    result = sanitize_body("<script>x</script>Hello &amp; bye</foo>")
    assert result == "<p>Hello &amp; bye</p>"
    assert sanitize_body(result) == result


@pytest.mark.parametrize(
    "body",
    [
        "Hi {{first_name}},\n\nThanks",
        "<p>Hi<p>nested</p></p><b><i>x</b></i>",
        '<a href="{{website}}">x</a><ul><li>a<li>b</ul>',
        "<div><h1>T</h1><blockquote>q</blockquote></div>",
    ],
)
def test_sanitising_twice_changes_nothing(body: str) -> None:
    once = sanitize_body(body)
    assert once
    assert sanitize_body(once) == once


def test_header_safe_puts_everything_on_one_line() -> None:
    assert header_safe("  Hi\r\nBcc: x@y.com\t\tthere  \x00 ") == "Hi Bcc: x@y.com there"
