"""Hand-written received mail for the inbox tests, built as a mail client would send it."""

from __future__ import annotations

from email.message import EmailMessage
from email.policy import SMTP

OUR_MESSAGE_ID = "<01jq2x8k3v5m7n9p1r3t5w7y9a@mail.acme.example>"
# What `{{unsubscribe}}` renders to in reply_text mode (outreach_core/mail/rendering.py).
OUR_UNSUBSCRIBE_LINE = 'Reply "stop" to unsubscribe.'
OUR_EMAIL_TEXT = (
    "Hi Jane,\n\nWe help teams like yours book more meetings. Worth a chat next week?\n\n"
    f"Bob Smith, Acme\n\n{OUR_UNSUBSCRIBE_LINE}"
)


def reply(
    text: str | None,
    *,
    html: str | None = None,
    subject: str = "Re: Quick question",
    sender: str = "Jane Doe <jane@lead.example>",
    headers: dict[str, str] | None = None,
) -> bytes:
    """A reply from a lead to our email (threaded on OUR_MESSAGE_ID)."""
    msg = EmailMessage(policy=SMTP)
    msg["From"] = sender
    msg["To"] = "Bob Smith <bob@acme.example>"
    msg["Subject"] = subject
    msg["Date"] = "Mon, 03 Mar 2025 10:15:00 +0100"
    msg["Message-ID"] = "<CAF=reply-1@mail.lead.example>"
    msg["In-Reply-To"] = OUR_MESSAGE_ID
    msg["References"] = f"<older@mail.acme.example> {OUR_MESSAGE_ID}"
    for name, value in (headers or {}).items():
        msg[name] = value
    if text is not None:
        msg.set_content(text)
        if html is not None:
            msg.add_alternative(html, subtype="html")
    elif html is not None:
        msg.set_content(html, subtype="html")
    return msg.as_bytes(policy=SMTP)


def quoted(own: str, header: str, original: str = OUR_EMAIL_TEXT) -> str:
    """A plain-text reply: the person's words, a quote header, our email quoted with `> `."""
    body = "\n".join(f"> {line}" if line else ">" for line in original.split("\n"))
    return f"{own}\n\n{header}\n{body}\n"


def raw(headers: str, body: str) -> bytes:
    """A message written out by hand (CRLF line ends), for input a library would refuse to build."""
    text = headers.strip("\n") + "\n\n" + body
    return text.replace("\n", "\r\n").encode("utf-8", "surrogateescape")
