"""The pure parts of replying: subject, threading headers, body and signature, finding the Sent folder."""

from __future__ import annotations

import pytest

from outreach_app.adapters.imap_parse import ListedFolder, list_folders, quote, sent_folder
from outreach_core.inbox.thread_reply import MAX_REFERENCES, reply_body, threading
from outreach_core.kernel.errors import InvalidInput
from outreach_core.mail.message import reply_subject


def test_subject_gets_one_re_prefix_on_one_line() -> None:
    assert reply_subject("Hello Ada") == "Re: Hello Ada"
    assert reply_subject("Re: Hello Ada") == "Re: Hello Ada"
    assert reply_subject("RE:Hello") == "RE:Hello"
    assert reply_subject("AW: Hallo") == "AW: Hallo"
    assert reply_subject("Hello\r\nBcc: x@evil.example") == "Re: Hello Bcc: x@evil.example"
    assert reply_subject("   ") == "Re:"
    assert reply_subject("Rebate offer") == "Re: Rebate offer"


def test_threading_answers_the_given_message_and_keeps_the_chain() -> None:
    assert threading([], None) == (None, ())
    assert threading(["<a>", "<b>"], None) == ("<b>", ("<a>", "<b>"))
    assert threading(["<a>", "<b>", "<c>"], "<b>") == ("<b>", ("<a>", "<c>", "<b>"))
    assert threading(["<a>", "<a>", ""], "<z>") == ("<z>", ("<a>", "<z>"))
    long = [f"<{i}@x>" for i in range(50)]
    target, refs = threading(long, None)
    assert target == "<49@x>" and len(refs) == MAX_REFERENCES
    assert refs[0] == "<0@x>" and refs[-1] == "<49@x>" and refs[1] == "<31@x>"


def test_body_is_sanitized_and_signed() -> None:
    html, text = reply_body("Hi,\n\n<script>x</script>Tuesday works.", "Sam\nSender Co")
    assert "<script>" not in html and "Tuesday works." in text
    assert text.rstrip().endswith("Sam\nSender Co")
    html, text = reply_body("<p>Hi <b>there</b></p>", None)
    assert html == "<p>Hi <b>there</b></p>" and text.strip() == "Hi there"
    with pytest.raises(InvalidInput):
        reply_body("<script>alert(1)</script>", "Sam")


def test_sent_folder_special_use_first_then_usual_names() -> None:
    lines = [
        b'(\\HasNoChildren) "/" INBOX',
        b'(\\HasNoChildren) "/" "Sent Items"',
        b'(\\HasNoChildren \\Sent) "/" "[Gmail]/Sent Mail"',
    ]
    listed = list_folders(lines)
    assert listed[2] == ListedFolder("[Gmail]/Sent Mail", frozenset({"\\hasnochildren", "\\sent"}))
    assert sent_folder(listed) == "[Gmail]/Sent Mail"
    assert sent_folder(listed[:2]) == "Sent Items"
    none = frozenset[str]()
    noselect = ListedFolder("Sent", frozenset({"\\noselect"}))
    assert sent_folder([noselect, ListedFolder("inbox.sent", none)]) == "inbox.sent"
    assert sent_folder([ListedFolder("INBOX", none), ListedFolder("Archive", none)]) is None
    assert list_folders([b'() NIL "A \\"quoted\\" name"']) == [ListedFolder('A "quoted" name', none)]
    assert list_folders([b"garbage"]) == []
    assert quote('Sent "x"') == '"Sent \\"x\\""'
