"""Failure notices in words: is this message one, which part of its body is the notice (not the copy of
the original message that follows it), and which addresses and sentences does that part name."""

from __future__ import annotations

import re

from outreach_core.inbox.rules.headers import canonical_address
from outreach_core.inbox.rules.mime import ParsedMessage

__all__ = ["bounce_section", "looks_like_bounce", "quoted_original_to", "recipient_paragraphs"]

SECTION_LIMIT = 16 * 1024

_DAEMON_LOCALS = frozenset(
    {
        "mailer-daemon", "mailer_daemon", "mailerdaemon", "mail-daemon", "maildaemon", "postmaster",
        "mdaemon", "mailadmin", "mail-delivery", "mail_delivery", "bounce", "bounces", "nobody", "root",
        "double-bounce", "mailerd", "mailer", "mailserver", "postoffice", "smtp", "daemon", "mailagent",
        "post_master", "post-master", "mailmaster", "mail-master",
    }
)  # fmt: skip
_DAEMON_NAME = re.compile(
    r"mail(?:er)?[ _-]?daemon|postmaster|mail delivery|delivery subsystem|mail system|mail administrator"
    r"|microsoft outlook|mail ?server|returned mail|mail agent|e-?mail system|mail deliver",
)
_SUBJECT = re.compile(
    r"undeliver|undelivered|delivery status notification|delivery (?:status )?(?:failure|failed|problem"
    r"|notification)"
    r"|failure notice|returned mail|mail delivery fail|delivery has failed|could not be delivered"
    r"|non.?deliver"
    r"|message not delivered|returned to sender|mail system error|not delivered|delivery report"
    r"|warning: could not"
    r"|mail could not|failed delivery|delivery fail|unzustellbar|nicht zugestellt|non remis"
    r"|no se puede entregar"
    r"|no entregado|mail error|error sending|returned message|rejected|failure|bounce|delivery notification"
    r"|unable to deliver|message you sent|permanent error|cannot send message|delayed mail|delivery delayed",
)
_BODY = re.compile(
    r"could ?n[o']t be delivered|couldn't be delivered|undeliverable|delivery (?:to .{0,80})?(?:has )?failed"
    r"|failed permanently|permanent(?: fatal)? error|unable to deliver|(?:was|were|has not been"
    r"|wasn't) (?:not )?delivered"
    r"|not be delivered|returned to sender|does not like recipient|following (?:address|recipient)"
    r"|could not deliver|failed to deliver|message not delivered|error (?:delivering|sending)"
    r"|delivery problem"
    r"|rejected|user unknown|unknown user|no such user|mailbox (?:is )?(?:full|unavailable)|not delivered"
    r"|delivery (?:attempts?|status)|transcript of session|smtp error|remote (?:host|server) said"
    r"|nicht zugestellt|unzustellbar|n'a pas pu .tre (?:remis|distribu)|no (?:se )?pudo (?:ser )?entregar"
    r"|returned mail|mail delivery|could not be sent|cannot be delivered|delayed|has not yet been"
    r"|did not reach"
    r"|isn't available|does not exist|doesn't exist|over quota|giving up|given up|message (?:was )?blocked"
    r"|message (?:was )?(?:rejected|refused|bounced)|has been rejected|failed recipient"
    r"|(?:account|mailbox|address)(?:\(s\))? (?:account )?is (?:disabled|suspended|inactive|unavailable"
    r"|invalid)",
)
# Sentences only failure notices write: enough on their own, whoever sent the message.
_NOTICE = re.compile(
    r"could not be delivered to:|delivery to the following recipients? failed"
    r"|following addresses had (?:permanent"
    r" fatal|delivery) errors|does not like recipient|smtp error from remote|remote host said:|following"
    r" address\(es\) failed|the following recipient\(s\) could not be reached"
    r"|message could not be delivered to"
    r" the following|your message (?:wasn't|was not|could not be) delivered to",
)
_REPLY_SUBJECT = re.compile(r"^\s*(?:re|aw|antw|sv|vs|r|rif)\s*(?:\[\d+\])?\s*:", re.IGNORECASE)
_CODE = re.compile(r"(?:^|\s|\()[245]\d\d[ -]?(?:[245]\.\d{1,3}\.\d{1,3})?", re.MULTILINE)
_SEPARATOR = re.compile(
    r"^[ \t>]*[-=_*#~<+ ]*(?:original message|copy of (?:the|your) (?:original )?message|unsent message"
    r"|returned message|message headers follow|below this line|headers of (?:the|your) (?:original )?message"
    r"|undelivered message|your message reads|rejected message|the message you sent|original text"
    r"|this is a copy|message text follows|content of (?:the )?original|header of (?:the )?original"
    r"|original (?:mail|e-?mail|headers)|included is a copy|copy of message|part of the original"
    r"|the original message|message was|follows? the original)",
    re.IGNORECASE | re.MULTILINE,
)
_HEADER_LINE = re.compile(
    r"^(?:Received|Return-Path|Message-I[Dd]|DKIM-Signature|Date|From|To|Subject|MIME-Version|Content-Type"
    r"|Reply-To|Sender|Delivered-To|Authentication-Results|ARC-[A-Za-z-]+|X-[A-Za-z0-9-]+|In-Reply-To"
    r"|References|Content-Transfer-Encoding|Cc|Return-path|Mime-Version|Content-type|Thread-[A-Za-z]+"
    r"|Accept-Language|Content-Language)[ \t]*:",
)
_CORE_HEADER = re.compile(
    r"^(?:Received|Return-Path|Message-I[Dd]|DKIM-Signature|Date|From|Subject)[ \t]*:", re.I
)
_ADDRESS = re.compile(r"[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?"
                      r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+")  # fmt: skip
_URL_BEFORE = re.compile(r"(?:https?://|www\.)\S*$", re.IGNORECASE)
# Lines naming the message or its sender, not a recipient.
_ID_LINE = re.compile(
    r"^[\s>]*(?:message-id|in-reply-to|references|content-id|from|mail from|sender|return-path|reply-to"
    r"|envelope-from)\s*:",
    re.IGNORECASE,
)
_TO_LINE = re.compile(r"^[ \t>]*To:[ \t]*(.+)$", re.IGNORECASE | re.MULTILINE)


def _local(address: str | None) -> str:
    return (address or "").partition("@")[0]


def looks_like_bounce(parsed: ParsedMessage) -> bool:
    """A failure notice: a daemon-like sender, failure subject or failure header, and failure words or
    SMTP codes in the body."""
    strong = bool(
        parsed.header("x-failed-recipients")
        or (parsed.content_type == "multipart/report" and parsed.report_type == "delivery-status")
        or parsed.header("x-ms-exchange-message-is-ndr") is not None
    )
    sender = (
        _local(parsed.from_address) in _DAEMON_LOCALS
        or bool(_DAEMON_NAME.search(parsed.from_name.lower()))
        or parsed.return_path == ""
        or (parsed.from_address is None and parsed.return_path is None)
    )
    # A person's reply ("Re: Cut your bounce rate") is not a notice, whatever our subject said.
    subject = not _REPLY_SUBJECT.match(parsed.subject) and bool(_SUBJECT.search(parsed.subject.lower()))
    head = parsed.text[:4000].lower()
    if _NOTICE.search(head):
        return True
    if not (strong or sender or subject):
        return False
    evidence = bool(_BODY.search(head) or _CODE.search(head)) or bool(parsed.delivery_status)
    return evidence and (strong or sender or bool(_BODY.search(head)))


def bounce_section(parsed: ParsedMessage) -> str:
    """The notice part of the body: everything above the copy of the original message."""
    text = parsed.text[: SECTION_LIMIT * 2]
    cut = len(text)
    separator = _SEPARATOR.search(text)
    if separator is not None and separator.start() > 0:
        cut = separator.start()
    lines = text[:cut].split("\n")
    offset = 0
    for i, line in enumerate(lines):
        if i > 0 and _CORE_HEADER.match(line) and _header_run(lines, i):
            cut = offset
            break
        offset += len(line) + 1
    return text[:cut][:SECTION_LIMIT]


def _header_run(lines: list[str], start: int) -> bool:
    """Three header fields among the next six lines (continuation lines do not count against it)."""
    found = 0
    for line in lines[start : start + 8]:
        if _HEADER_LINE.match(line):
            found += 1
        elif line[:1] in (" ", "\t") and line.strip():
            continue
        elif not line.strip():
            break
    return found >= 3


def recipient_paragraphs(
    section: str, preferred: list[str], exclude: frozenset[str] = frozenset()
) -> list[tuple[str | None, str]]:
    """`(address, the lines about it)` for each failed address a notice names, in order. `preferred`
    addresses (from `X-Failed-Recipients` or the DSN fields) are taken as they are; otherwise every address
    in the section except daemons and `exclude` (the mailbox's own addresses)."""
    lines = section.split("\n")
    firsts: dict[str, int] = {}
    for i, line in enumerate(lines):
        if _ID_LINE.match(line):
            continue
        for match in _ADDRESS.finditer(line):
            if _URL_BEFORE.search(line[: match.start()]):
                continue
            address = canonical_address(match.group(0))
            if address and address not in firsts:
                firsts[address] = i
    if preferred:
        wanted = list(dict.fromkeys(preferred))
    else:
        wanted = [a for a in firsts if a not in exclude and _local(a) not in _DAEMON_LOCALS]
    starts = sorted(firsts[a] for a in wanted if a in firsts)
    out: list[tuple[str | None, str]] = []
    for address in wanted:
        if address not in firsts:
            out.append((address, section))
            continue
        start = firsts[address]
        following = [s for s in starts if s > start]
        end = min(following[0] if following else len(lines), start + 10)
        block = lines[start:end]
        # a blank line ends the paragraph unless indented lines follow it (Exim's and Sendmail's layout)
        for j in range(1, len(block)):
            if not block[j].strip():
                rest = block[j + 1 : j + 2]
                if not rest or not rest[0][:1].isspace():
                    block = block[:j]
                    break
        out.append((address, "\n".join(block)))
    return out


def quoted_original_to(parsed: ParsedMessage) -> list[str]:
    """The `To` of the original message copied into the body below the notice (for notices that name no
    recipient themselves)."""
    section = bounce_section(parsed)
    rest = parsed.text[len(section) : len(section) + SECTION_LIMIT]
    match = _TO_LINE.search(rest)
    if match is None:
        return []
    found = []
    for candidate in _ADDRESS.findall(match.group(1)):
        address = canonical_address(candidate)
        if address:
            found.append(address)
    return found
