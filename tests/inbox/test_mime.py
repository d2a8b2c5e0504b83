"""Parsing received mail: fields, bodies and limits, and input that is broken in the ways real mail is."""

from __future__ import annotations

import base64
import datetime as dt
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outreach_core.inbox.rules import BODY_LIMIT, classify, parse_message
from tests.inbox.mail import OUR_MESSAGE_ID, raw, reply

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bounces"


def test_a_reply_gives_its_threading_ids_addresses_and_text() -> None:
    parsed = parse_message(
        reply("Sounds good, call me Tuesday.", sender="=?utf-8?q?Jos=C3=A9_P=C3=A9rez?= <Jose@Lead.Example>")
    )
    assert parsed.message_id == "<CAF=reply-1@mail.lead.example>"
    assert parsed.in_reply_to == OUR_MESSAGE_ID
    assert parsed.references == ("<older@mail.acme.example>", OUR_MESSAGE_ID)
    assert (parsed.from_address, parsed.from_name) == ("jose@lead.example", "José Pérez")
    assert parsed.to == ("bob@acme.example",)
    assert parsed.subject == "Re: Quick question"
    assert parsed.date == dt.datetime(2025, 3, 3, 9, 15, tzinfo=dt.UTC)
    assert parsed.text.strip() == "Sounds good, call me Tuesday."
    assert parsed.html is None and not parsed.text_truncated and parsed.defects == ()


def test_encoded_subject_and_list_headers_are_decoded() -> None:
    parsed = parse_message(
        raw(
            "From: news@shop.example\nTo: bob@acme.example\n"
            "Subject: =?iso-8859-1?q?R=E9ponse_?= =?utf-8?b?w6AgdG91cw==?="
            "\nList-Id: <news.shop.example>\nList-Unsubscribe: <mailto:u@shop.example>\nPrecedence: bulk"
            "\nAuto-Submitted: auto-generated\nMessage-ID: <n1@shop.example>",
            "hello\n",
        )
    )
    assert parsed.subject == "Réponse à tous"
    assert parsed.list_id == "<news.shop.example>"
    assert parsed.list_unsubscribe == "<mailto:u@shop.example>"
    assert (parsed.precedence, parsed.auto_submitted) == ("bulk", "auto-generated")


def test_html_only_mail_gets_a_text_version_with_the_quote_marked() -> None:
    html = (
        "<html><head><style>p{color:red}</style><title>x</title></head><body>"
        "<div>Thanks &amp; <b>yes</b>, let&#39;s talk.<br>Jane</div>"
        '<div class="gmail_quote"><div>On Mon, Mar 3, 2025 Bob &lt;bob@acme.example&gt; wrote:</div>'
        '<blockquote class="gmail_quote">Hi Jane,<br>Reply "stop" to unsubscribe.</blockquote></div>'
        "<script>alert(1)</script></body></html>"
    )
    parsed = parse_message(reply(None, html=html))
    assert parsed.text_from_html
    assert parsed.html is not None and "<blockquote" in parsed.html
    assert parsed.text.splitlines()[:2] == ["Thanks & yes, let's talk.", "Jane"]
    assert '> Reply "stop" to unsubscribe.' in parsed.text
    assert "alert" not in parsed.text and "color:red" not in parsed.text
    assert classify(parsed).kind == "reply"  # the quoted "stop" is ours, not theirs


def test_plain_text_wins_over_html_in_an_alternative() -> None:
    parsed = parse_message(reply("plain words", html="<p>html words</p>"))
    assert parsed.text.strip() == "plain words"
    assert parsed.html is not None and "html words" in parsed.html
    assert not parsed.text_from_html


def test_wrong_missing_and_unknown_charsets_still_give_readable_text() -> None:
    cases = [
        ("utf-8", "Grüße aus Köln".encode("cp1252")),  # declared UTF-8, really Windows-1252
        ("iso-8859-1", "Grüße aus Köln".encode()),  # declared Latin-1, really UTF-8
        ("x-no-such-charset", "Grüße aus Köln".encode()),  # unknown name
        ("utf8mb4", "Grüße aus Köln".encode()),  # a database's name for UTF-8
        ("base64", "Grüße aus Köln".encode()),  # a codec that is not a charset
    ]
    for charset, body in cases:
        message = (
            raw(
                f"From: a@lead.example\nSubject: x\nContent-Type: text/plain; charset={charset}\n"
                "Content-Transfer-Encoding: 8bit",
                "",
            )
            + body
        )
        assert parse_message(message).text == "Grüße aus Köln", charset
    no_charset = raw("From: a@lead.example\nSubject: x\nContent-Type: text/plain", "") + "Grüße".encode()
    assert parse_message(no_charset).text == "Grüße"


def test_8bit_headers_are_read_as_utf8_or_windows_1252() -> None:
    utf8 = raw("From: Jörg Müller <joerg@lead.example>\nSubject: Grüße, Jörg", "x")
    parsed = parse_message(utf8)
    assert (parsed.from_name, parsed.from_address, parsed.subject) == (
        "Jörg Müller",
        "joerg@lead.example",
        "Grüße, Jörg",
    )
    latin = b"From: J\xf6rg <joerg@lead.example>\r\nSubject: Gr\xfc\xdfe\r\n\r\nx"
    parsed = parse_message(latin)
    assert (parsed.from_name, parsed.subject) == ("Jörg", "Grüße")


def test_huge_attachments_are_never_kept_and_bodies_are_cut_cleanly() -> None:
    msg = EmailMessage(policy=SMTP)
    msg["From"] = "jane@lead.example"
    msg["Subject"] = "Re: deck"
    line = "Ünïcödé text that goes on and on. " * 3 + "\n"
    msg.set_content(line * (2 * BODY_LIMIT // len(line.encode())))
    msg.add_attachment(
        b"%PDF-" + bytes(range(256)) * 80_000, maintype="application", subtype="pdf", filename="deck.pdf"
    )
    parsed = parse_message(msg.as_bytes(policy=SMTP))
    assert parsed.text_truncated
    assert BODY_LIMIT - 4096 < len(parsed.text.encode()) <= BODY_LIMIT
    assert parsed.text.endswith("on and on.")  # cut at a line end, not inside a word or a character
    (attachment,) = parsed.attachments
    assert (attachment.content_type, attachment.filename) == ("application/pdf", "deck.pdf")
    assert attachment.size > 20_000_000  # its encoded size, reported; its bytes are nowhere in the result
    assert not hasattr(attachment, "content")


def test_nested_multiparts_and_a_forwarded_message() -> None:
    inner = EmailMessage(policy=SMTP)
    inner["From"] = "bob@acme.example"
    inner["To"] = "jane@lead.example"
    inner["Subject"] = "Quick question"
    inner["Message-ID"] = OUR_MESSAGE_ID
    inner.set_content("the forwarded email's own text")
    outer = EmailMessage(policy=SMTP)
    outer["From"] = "jane@lead.example"
    outer["Subject"] = "Fwd: Quick question"
    outer.set_content("See below, looping in Max.")
    outer.add_alternative("<p>See below, looping in Max.</p>", subtype="html")
    outer.get_payload()[1].add_related(b"\x89PNG....", maintype="image", subtype="png", cid="<logo>")
    outer.make_mixed()
    outer.attach(_rfc822(inner))
    parsed = parse_message(outer.as_bytes(policy=SMTP))
    assert parsed.text.strip() == "See below, looping in Max."
    assert "forwarded email's own text" not in parsed.text
    assert parsed.original is not None
    assert (parsed.original.message_id, parsed.original.to, parsed.original.subject) == (
        OUR_MESSAGE_ID, ("jane@lead.example",), "Quick question",
    )  # fmt: skip
    assert parsed.original_message_ids == (OUR_MESSAGE_ID,)
    assert [a.content_type for a in parsed.attachments] == ["image/png"]


def _rfc822(inner: EmailMessage) -> EmailMessage:
    part = EmailMessage(policy=SMTP)
    part.set_content(inner)
    return part


def test_original_ids_from_headers_parts_and_quoted_header_lines() -> None:
    dsn = raw(
        "From: MAILER-DAEMON@mx.example\nTo: bob@acme.example\nSubject: Undelivered Mail\n"
        "Message-ID: <dsn-1@mx.example>"
        '\nContent-Type: multipart/report; report-type=delivery-status; boundary="b"',
        "--b\nContent-Type: text/plain\n\nNo.\n\n--b\nContent-Type: message/delivery-status\n\n"
        "Reporting-MTA: dns; mx.example\n\nFinal-Recipient: rfc822; jane@lead.example\nAction: failed\n"
        "Status: 5.1.1\n\n"
        "--b\nContent-Type: text/rfc822-headers\n\nFrom: bob@acme.example\nTo: jane@lead.example\n"
        f"Message-ID: {OUR_MESSAGE_ID}\n"
        "Subject: Quick question\n\n--b--\n",
    )
    parsed = parse_message(dsn)
    assert parsed.original_message_ids == (OUR_MESSAGE_ID,)
    assert (
        parsed.delivery_status is not None
        and "Final-Recipient: rfc822; jane@lead.example" in parsed.delivery_status
    )
    quoted = raw(
        "From: MAILER-DAEMON@mx.example\nSubject: failure notice\nMessage-ID: <n2@mx.example>",
        f"Sorry.\n\n--- Below this line is a copy of the message.\n\nMessage-Id: {OUR_MESSAGE_ID}\n"
        "Subject: x\n",
    )
    assert parse_message(quoted).original_message_ids == (OUR_MESSAGE_ID,)


def test_a_missing_boundary_is_recovered_from_the_body() -> None:
    message = raw(
        "From: fbl@isp.example\nSubject: Abuse report\n"
        "Content-Type: multipart/report; report-type=feedback-report",
        "--zzz\nContent-Type: text/plain\n\nA complaint.\n\n--zzz\nContent-Type: message/feedback-report\n\n"
        "Feedback-Type: abuse\nOriginal-Rcpt-To: jane@lead.example\n\n--zzz--\n",
    )
    parsed = parse_message(message)
    assert (
        parsed.feedback_report is not None and "Original-Rcpt-To: jane@lead.example" in parsed.feedback_report
    )
    assert any("boundary" in d for d in parsed.defects)
    assert classify(parsed).kind == "complaint"


def test_empty_and_garbage_input_give_an_empty_message() -> None:
    for data in (
        b"",
        b"\x00\xff\xfe" * 100,
        b"no headers at all",
        b"Subject: =?x?q?broken",
        b"Content-Type: multipart/mixed\r\n\r\n--",
    ):
        parsed = parse_message(data)
        assert parsed.size == len(data)
        assert classify(parsed).kind in ("reply", "auto_reply")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=4096))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    parsed = parse_message(data)
    classify(parsed)
    assert not any(d.startswith("unparseable") for d in parsed.defects)  # the last-resort guard unused


_SAMPLES = sorted(CORPUS.glob("*/*.eml"))[::9]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(_SAMPLES),
    st.lists(
        st.tuples(
            st.floats(0, 1),
            st.sampled_from(["flip", "cut", "insert", "drop"]),
            st.binary(min_size=1, max_size=40),
        ),
        max_size=6,
    ),
)
def test_mutated_corpus_messages_never_raise(path: Path, edits: list[tuple[float, str, bytes]]) -> None:
    data = bytearray(path.read_bytes())
    for where, how, blob in edits:
        at = int(where * len(data))
        if how == "flip" and data:
            data[min(at, len(data) - 1)] ^= blob[0] or 0x80
        elif how == "cut":
            del data[at:]
        elif how == "insert":
            data[at:at] = blob
        else:
            del data[at : at + len(blob) * 20]
    parsed = parse_message(bytes(data))
    classify(parsed, dt.datetime(2025, 3, 3, tzinfo=dt.UTC))
    assert not any(d.startswith("unparseable") for d in parsed.defects)


def test_base64_body_with_junk_and_a_bad_transfer_encoding() -> None:
    good = base64.b64encode(b"Hallo, bitte austragen.").decode()
    body = f"{good[:8]}\n  \n\t{good[8:].rstrip('=')}\n"  # stray blank lines, indentation, padding lost
    message = raw(
        "From: a@lead.example\nSubject: x\nContent-Type: text/plain; charset=utf-8\n"
        "Content-Transfer-Encoding: base64",
        body,
    )
    assert parse_message(message).text == "Hallo, bitte austragen."
    odd = raw("From: a@lead.example\nSubject: x\nContent-Transfer-Encoding: x-uuencode-ish", "plain words\n")
    assert parse_message(odd).text.strip() == "plain words"


def test_inputs_fuzzing_found_parse_without_the_last_resort_guard() -> None:
    """Three inputs that used to make the stdlib raise inside the parse (found by fuzzing the corpus)."""
    cases = [
        # a NUL in the charset parameter of an 8-bit part: compat32 cannot look the codec up
        b'From: a@lead.example\r\nContent-Type: text/plain; charset="utf\x008"\r\n\r\n'
        b"Gr\xc3\xbc\xc3\x9fe\r\n",
        # an RFC 2047 word whose base64 is broken
        b"From: a@lead.example\r\nSubject: =?utf-8?b?w6Ag=dG91?= x\r\n\r\nhello\r\n",
        # an 8-bit Content-Disposition (compat32 hands back a Header object, not a str)
        b"From: a@lead.example\r\nContent-Disposition: attachment; filename=r\xe9sum\xe9.pdf\r\n\r\n"
        b"hello\r\n",
    ]
    for data in cases:
        parsed = parse_message(data)
        assert parsed.from_address == "a@lead.example"
        assert not any(d.startswith("unparseable") for d in parsed.defects), parsed.defects
