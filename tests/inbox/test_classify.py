"""What a received message is, as the inbox worker will be told: replies, unsubscribe requests (and the
quoted-original trap), auto-replies and out-of-office replies with their return dates, complaints, bounces
and delivery reports, each with the rule that decided."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from outreach_core.inbox.rules import Classification, classify, parse_message, return_date
from tests.inbox.mail import OUR_MESSAGE_ID, quoted, raw, reply

ARRIVED = dt.datetime(2025, 3, 3, 9, 20, tzinfo=dt.UTC)  # a Monday


def verdict(message: bytes, arrived: dt.datetime = ARRIVED) -> Classification:
    return classify(parse_message(message), arrived)


# --- replies and the quoted original -------------------------------------------------------------------

QUOTE_HEADERS = {
    "gmail en": "On Mon, Mar 3, 2025 at 9:00 AM Bob Smith <bob@acme.example> wrote:",
    "gmail en wrapped": "On Mon, Mar 3, 2025 at 9:00 AM Bob Smith <\nbob@acme.example> wrote:",
    "gmail de": "Am Mo., 3. März 2025 um 09:00 Uhr schrieb Bob Smith <bob@acme.example>:",
    "apple fr": "Le 3 mars 2025 à 09:00, Bob Smith <bob@acme.example> a écrit :",
    "gmail es": "El lun, 3 mar 2025 a las 9:00, Bob Smith (<bob@acme.example>) escribió:",
    "outlook en": "From: Bob Smith <bob@acme.example>\nSent: Monday, March 3, 2025 9:00 AM\nTo: Jane Doe\n"
    "Subject: Quick question",
    "outlook de": "Von: Bob Smith <bob@acme.example>\nGesendet: Montag, 3. März 2025 09:00\nAn: Jane Doe\n"
    "Betreff: Frage",
    "outlook fr": "De : Bob Smith <bob@acme.example>\nEnvoyé : lundi 3 mars 2025 09:00\nÀ : Jane Doe\n"
    "Objet : Question",
    "outlook es": "De: Bob Smith <bob@acme.example>\nEnviado: lunes, 3 de marzo de 2025 9:00\n"
    "Para: Jane Doe\nAsunto: Pregunta",
    "separator": "-----Original Message-----\nFrom: Bob Smith",
}


@pytest.mark.parametrize("client", list(QUOTE_HEADERS))
def test_a_reply_quoting_our_stop_line_is_a_reply_not_an_unsubscribe(client: str) -> None:
    """Our email ends with 'Reply "stop" to unsubscribe.'; quoted below a real answer it asks nothing."""
    header = QUOTE_HEADERS[client]
    text = quoted("Thanks Bob, that sounds interesting. Can you send pricing?", header)
    if client.startswith("outlook") or client == "separator":  # Outlook quotes without ">"
        own = "Thanks Bob, that sounds interesting. Can you send pricing?"
        text = f'{own}\n\n{header}\n\nHi Jane,\nReply "stop" to unsubscribe.\n'
    v = verdict(reply(text))
    assert v.kind == "reply", v.reason
    assert v.own_text == "Thanks Bob, that sounds interesting. Can you send pricing?"
    assert v.source == "rules"


@pytest.mark.parametrize("client", list(QUOTE_HEADERS))
def test_a_stop_above_the_quote_is_an_unsubscribe(client: str) -> None:
    v = verdict(reply(quoted("STOP", QUOTE_HEADERS[client])))
    assert v.kind == "unsubscribe_request"
    assert v.unsubscribe_phrase == "stop"
    assert "stop" in v.reason


@pytest.mark.parametrize(
    "words",
    [
        "Please remove me from your mailing list.",
        "Unsubscribe",
        "Take me off your list, thanks.",
        "Stop emailing me.",
        "Please do not contact me again.",
        "I'd like to opt out of these emails.",
        "remove please",
        "Bitte nehmen Sie mich aus Ihrem Verteiler.",
        "Bitte abmelden.",
        "Ich möchte keine weiteren E-Mails erhalten.",
        "Bitte kontaktieren Sie mich nicht mehr.",
        "Merci de me retirer de votre liste.",
        "Désinscription svp",
        "Ne me contactez plus.",
        "Je ne souhaite plus recevoir vos messages.",
        "Por favor, denme de baja.",
        "Quiero darme de baja de esta lista.",
        "No me envíen más correos, gracias.",
        "Por favor elimínenme de su lista.",
    ],
)
def test_unsubscribe_requests_in_four_languages(words: str) -> None:
    v = verdict(reply(quoted(words, QUOTE_HEADERS["gmail en"])))
    assert v.kind == "unsubscribe_request", (words, v.reason)


@pytest.mark.parametrize(
    "words",
    [
        "I can't stop thinking about your offer, let's talk on Thursday.",
        "Not interested right now, maybe next quarter.",
        "Who is this? How did you get my address?",
        "Wir haben schon einen Anbieter, danke.",
        "Pas pour le moment, merci.",
        "Ahora no, gracias.",
    ],
)
def test_ordinary_replies_are_replies(words: str) -> None:
    assert verdict(reply(words)).kind == "reply"


def test_an_unsubscribe_subject_with_an_empty_body() -> None:
    assert verdict(reply("", subject="Unsubscribe")).kind == "unsubscribe_request"
    assert verdict(reply("", subject="Re: Stop the guesswork in your hiring")).kind == "reply"


def test_html_only_unsubscribe_request_and_html_quote_trap() -> None:
    trap = (
        '<div>Yes please, send the deck.</div><blockquote type="cite">Hi Jane<br>Reply "stop" to unsubscribe.'
        "</blockquote>"
    )
    assert verdict(reply(None, html=trap)).kind == "reply"
    asks = (
        '<div>Bitte <b>abmelden</b>.</div><blockquote type="cite">Reply "stop" to unsubscribe.</blockquote>'
    )
    assert verdict(reply(None, html=asks)).kind == "unsubscribe_request"


def test_apple_mail_unsubscribe_button() -> None:
    v = verdict(
        reply(
            "Apple Mail sent this email to unsubscribe.",
            subject="unsubscribe",
            headers={"X-Apple-Unsubscribe": "true", "Auto-Submitted": "auto-replied"},
        )
    )
    assert v.kind == "unsubscribe_request"


# --- auto-replies and out-of-office ---------------------------------------------------------------------

OOO = [
    (
        "en",
        "Automatic reply: Quick question",
        "I am out of the office until Monday, March 10th with no access to email.",
        dt.date(2025, 3, 10),
    ),
    (
        "en",
        "Out of Office",
        "Thank you for your message. I'm on vacation and will be back on 03/17/2025.",
        dt.date(2025, 3, 17),
    ),
    (
        "en",
        "Automatic reply: Quick question",
        "I'm away from March 3 to March 14. For urgent matters contact max@lead.example.",
        dt.date(2025, 3, 14),
    ),
    (
        "de",
        "Abwesenheitsnotiz: Frage",
        "Ich bin bis zum 14.03.2025 nicht im Büro. Ab dem 17. März bin ich wieder erreichbar.",
        dt.date(2025, 3, 17),
    ),
    (
        "de",
        "Automatische Antwort: Frage",
        "Vielen Dank für Ihre Nachricht. Ich bin vom 3. bis 21. März im Urlaub.",
        dt.date(2025, 3, 21),
    ),
    (
        "fr",
        "Réponse automatique : Question",
        "Bonjour, je suis absente jusqu'au 12 mars inclus.",
        dt.date(2025, 3, 12),
    ),
    (
        "fr",
        "Absence du bureau",
        "Je suis en congés du 3 au 14 mars. Je serai de retour le lundi 17 mars.",
        dt.date(2025, 3, 17),
    ),
    (
        "es",
        "Respuesta automática: Pregunta",
        "Estaré fuera de la oficina hasta el 5 de abril.",
        dt.date(2025, 4, 5),
    ),
    (
        "es",
        "Fuera de la oficina",
        "Estoy de vacaciones del 3 al 14 de marzo. Regreso el 17/03.",
        dt.date(2025, 3, 17),
    ),
]


@pytest.mark.parametrize(
    ("language", "subject", "text", "back"), OOO, ids=[f"{x[0]}-{i}" for i, x in enumerate(OOO)]
)
def test_out_of_office_with_a_return_date(language: str, subject: str, text: str, back: dt.date) -> None:
    v = verdict(reply(text, subject=subject, headers={"Auto-Submitted": "auto-replied"}))
    assert v.kind == "out_of_office", v.reason
    assert v.return_date == back
    assert back.isoformat() in v.reason


def test_out_of_office_by_exchange_header_only_and_without_a_date() -> None:
    v = verdict(
        reply(
            "I'm currently out of the office with limited access to email.",
            subject="Re: Quick question",
            headers={"X-MS-Exchange-Inbox-Rules-Loop": "jane@lead.example"},
        )
    )
    assert v.kind == "out_of_office"
    assert v.return_date is None
    assert "x-ms-exchange-inbox-rules-loop" in v.reason


def test_out_of_office_text_without_automatic_headers() -> None:
    v = verdict(reply("Hello, I am currently out of the office until March 12 and will reply on my return."))
    assert (v.kind, v.return_date) == ("out_of_office", dt.date(2025, 3, 12))
    # ...but a person mentioning a holiday in a real answer is replying
    assert verdict(reply("Great timing! I'm on vacation until the 12th, can we talk after?")).kind == "reply"


def test_a_return_date_without_a_year_rolls_over_the_new_year() -> None:
    message = reply(
        "Out of office until January 6.",
        subject="Automatic reply: Hi",
        headers={"Auto-Submitted": "auto-replied"},
    )
    assert verdict(message, dt.datetime(2025, 12, 22, tzinfo=dt.UTC)).return_date == dt.date(2026, 1, 6)


def test_other_automatic_replies() -> None:
    ticket = reply(
        "We received your request #4711 and will answer within 24 hours.",
        subject="[Ticket #4711] Re: Quick question",
        headers={"Auto-Submitted": "auto-replied", "X-Autoreply": "yes"},
    )
    v = verdict(ticket)
    assert (v.kind, v.reason) == ("auto_reply", "Auto-Submitted: auto-replied")
    newsletter = reply(
        "Our March newsletter.",
        subject="March news",
        headers={"List-Id": "<news.lead.example>", "Precedence": "bulk"},
    )
    assert verdict(newsletter).kind == "auto_reply"
    assert verdict(reply("ok", headers={"Auto-Submitted": "no"})).kind == "reply"


# --- complaints, bounces, delivery reports --------------------------------------------------------------


def _report(report_type: str, report: str, original_to: str = "jane@lead.example") -> bytes:
    return raw(
        f"From: fbl@isp.example\nTo: abuse@acme.example\nSubject: report\nMessage-ID: <r1@isp.example>\n"
        f'Content-Type: multipart/report; report-type={report_type}; boundary="b"',
        "--b\nContent-Type: text/plain\n\nA report.\n\n"
        f"--b\nContent-Type: message/{report_type}\n\n{report}\n\n"
        f"--b\nContent-Type: message/rfc822\n\nFrom: bob@acme.example\nTo: {original_to}\n"
        "Subject: Quick question\n"
        f"Message-ID: {OUR_MESSAGE_ID}\n\nHi Jane\n\n--b--\n",
    )


def test_an_arf_complaint_names_the_recipient_and_the_original() -> None:
    message = _report(
        "feedback-report",
        "Feedback-Type: abuse\nUser-Agent: FBL/1.0\nVersion: 1\nOriginal-Rcpt-To: Jane@Lead.example",
    )
    parsed = parse_message(message)
    v = classify(parsed)
    assert v.kind == "complaint"
    assert v.complaint is not None and v.complaint.recipients == ("jane@lead.example",)
    assert v.reason == "ARF feedback report (abuse) for jane@lead.example"
    assert parsed.original_message_ids == (OUR_MESSAGE_ID,)
    redacted = classify(
        parse_message(_report("feedback-report", "Feedback-Type: abuse", original_to="redacted"))
    )
    assert (
        redacted.kind == "complaint"
        and redacted.complaint is not None
        and redacted.complaint.recipients == ()
    )


def test_an_amazon_ses_complaint_notification() -> None:
    note = {
        "notificationType": "Complaint",
        "complaint": {
            "complainedRecipients": [{"emailAddress": "jane@lead.example"}],
            "complaintFeedbackType": "abuse",
        },
    }
    v = verdict(raw("From: no-reply@sns.amazonaws.com\nSubject: AWS Notification Message", json.dumps(note)))
    assert v.kind == "complaint"
    assert v.complaint is not None and v.complaint.recipients == ("jane@lead.example",)


def _dsn(*groups: str) -> bytes:
    return raw(
        "From: Mail Delivery System <MAILER-DAEMON@mx.acme.example>\nTo: bob@acme.example\n"
        "Subject: Undelivered Mail Returned to Sender"
        "\nMessage-ID: <d1@mx.acme.example>\n"
        'Content-Type: multipart/report; report-type=delivery-status; boundary="b"',
        "--b\nContent-Type: text/plain\n\nI'm sorry to have to inform you...\n\n--b\n"
        "Content-Type: message/delivery-status\n\n"
        "Reporting-MTA: dns; mx.acme.example\n\n" + "\n\n".join(groups) + "\n\n"
        "--b\nContent-Type: text/rfc822-headers\n\nFrom: bob@acme.example\nTo: jane@lead.example\n"
        f"Message-ID: {OUR_MESSAGE_ID}\n\n--b--\n",
    )


def test_a_hard_bounce() -> None:
    v = verdict(
        _dsn(
            "Final-Recipient: rfc822; jane@lead.example\nAction: failed\nStatus: 5.1.1\n"
            "Diagnostic-Code: smtp; 550 5.1.1 <jane@lead.example>: Recipient address rejected: User unknown "
            "in virtual mailbox table"
        )
    )
    assert v.kind == "bounce" and v.hard_bounce
    (b,) = v.bounces
    assert (b.recipient, b.status, b.hard, b.reason, b.action, b.reply_code) == (
        "jane@lead.example",
        "5.1.1",
        True,
        "user unknown",
        "failed",
        "550",
    )
    assert b.diagnostic.startswith("550 5.1.1 <jane@lead.example>")
    assert v.reason == "RFC 3464 report: 5.1.1 for jane@lead.example (user unknown, hard)"


def test_soft_bounces_full_mailbox_blocked_sender_and_a_delay() -> None:
    v = verdict(_dsn(
        "Final-Recipient: rfc822; jane@lead.example\nAction: failed\nStatus: 5.2.2\n"
        "Diagnostic-Code: smtp; 552 5.2.2 Mailbox full",
        "Final-Recipient: rfc822; max@lead.example\nAction: failed\nStatus: 5.7.1\n"
        "Diagnostic-Code: smtp; 554 5.7.1 Service unavailable; Client host [192.0.2.1] blocked using "
        "zen.spamhaus.org",
        "Final-Recipient: rfc822; eva@lead.example\nAction: delayed\nStatus: 4.4.1\n"
        "Diagnostic-Code: smtp; 421 4.4.1 Connection timed out",
    ))  # fmt: skip
    assert v.kind == "bounce" and not v.hard_bounce
    assert [(b.recipient, b.reason, b.hard, b.action) for b in v.bounces] == [
        ("jane@lead.example", "mailbox full", False, "failed"),
        ("max@lead.example", "sender blocked", False, "failed"),
        ("eva@lead.example", "network error", False, "delayed"),
    ]


def test_delivery_reports_and_read_receipts_are_not_bounces() -> None:
    v = verdict(_dsn("Final-Recipient: rfc822; jane@lead.example\nAction: delivered\nStatus: 2.0.0"))
    assert (v.kind, v.bounces, v.delivered) == ("delivery_report", (), ("jane@lead.example",))
    mdn = _report(
        "disposition-notification",
        "Final-Recipient: rfc822; jane@lead.example\nDisposition: manual-action/MDN-sent-manually; displayed",
    )
    assert verdict(mdn).kind == "delivery_report"


def test_a_plain_text_failure_notice_from_a_mailer_daemon() -> None:
    notice = raw(
        "From: MAILER-DAEMON@mx.lead.example\nTo: bob@acme.example\nSubject: failure notice",
        "Hi. This is the qmail-send program at mx.lead.example.\n"
        "I'm afraid I wasn't able to deliver your message to the"
        " following addresses.\nThis is a permanent error; I've given up. Sorry it didn't work out.\n\n"
        "<jane@lead.example>:\n"
        "192.0.2.7 does not like recipient.\n"
        "Remote host said: 550 5.1.1 <jane@lead.example>... No such user\n\n"
        "--- Below this line is a copy of the message.\n\nFrom: bob@acme.example\nTo: jane@lead.example\n"
        f"Message-ID: {OUR_MESSAGE_ID}\n\nHi\n",
    )
    parsed = parse_message(notice)
    v = classify(parsed)
    assert v.kind == "bounce" and v.hard_bounce
    assert [b.recipient for b in v.bounces] == ["jane@lead.example"]
    assert parsed.original_message_ids == (OUR_MESSAGE_ID,)


# --- return dates: the pure rule -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "back"),
    [
        ("Out until 3/14.", dt.date(2025, 3, 14)),  # only one reading is a date
        ("Out until 3/4.", None),  # March 4 or April 3: unsure
        ("Abwesend bis 4.3.", dt.date(2025, 3, 4)),  # day.month outside English
        ("Back on Friday.", dt.date(2025, 3, 7)),
        ("Out of office today, back Monday.", dt.date(2025, 3, 10)),  # arrived on a Monday: the next one
        ("Until 2025-03-20.", dt.date(2025, 3, 20)),
        ("Available again from 24 March.", dt.date(2025, 3, 24)),
        ("I was out until March 1.", None),  # already past when it arrived
        ("Bis 17.30 Uhr im Meeting.", None),  # a time, not a date
        ("I am out of the office. Call 555-0142.", None),
        ("Back in 2027-01-05.", None),  # more than a year away
    ],
)
def test_return_date_rules(text: str, back: dt.date | None) -> None:
    assert return_date(text, ARRIVED) == back


def test_a_company_footer_about_unsubscribing_is_not_a_request() -> None:
    text = (
        "Hi Bob, happy to chat next week. Tuesday works.\n\nBest regards,\nJane Doe\nHead of Sales\n"
        + "Lead GmbH, Hauptstr. 1, 10115 Berlin. " * 30
        + "\nYou get our newsletter because you signed up. To unsubscribe from our newsletter, click here."
    )
    assert verdict(reply(text)).kind == "reply"


def test_a_reply_about_deliverability_is_not_a_bounce() -> None:
    """Our subject may well say "bounce"; a person answering it is replying, not a mail server."""
    text = "Our emails were rejected by Gmail last week and the bounce rate went up. Can you help?"
    assert verdict(reply(text, subject="Re: Cut your bounce rate in half")).kind == "reply"
    assert verdict(reply("Stop by our booth at 3pm!")).kind == "reply"
