"""Why a delivery failed, from the server's words and status codes: a short reason and hard or soft.

A bounce is **hard** when the address itself cannot receive mail: the mailbox or the domain does not
exist, the address has moved, or the domain accepts no mail at all (permanent, 5xx, failures only).
Everything else is **soft**, permanent or not: a full or disabled mailbox, a message refused for its
content, the sender's reputation or authentication, policy, rate limits, network trouble, expiry. Those say
nothing about the address, so suppressing it would be wrong; the campaign retries the step once later.
This is the same line the common bounce parsers draw (a "hard bounce" flag only for unknown users and
hosts), which the bounce corpus test checks.

The server's text wins over the status code when it names the cause (servers often send `5.7.1` or
`5.0.0` for an unknown user, or `5.1.1` for a blocked sender); the enhanced status code decides when the
text does not; the class of the code (4 or 5) decides last.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["HARD_REASONS", "REASONS", "Verdict", "judge", "reply_code", "status_code"]

HARD_REASONS = frozenset({"user unknown", "host unknown", "address moved", "domain accepts no mail"})

# Enhanced status codes (RFC 3463), also inside a diagnostic ("550 5.1.1 <x>... User unknown").
_STATUS = re.compile(r"(?<![\d.])([245])\.(\d{1,3})\.(\d{1,3})(?![\d]|\.\d)")
# SMTP failure reply codes (4xx, 5xx) standing alone: "550 ...", "said: 550", "smtp; 554".
_REPLY = re.compile(r"(?:^|[\s;:(\[\"'#])([45][0-5]\d)(?=[\s\-:.,)\]]|$)")

# (reason, pattern) in order: the first match wins, so specific causes come before generic words.
_TEXT_RULES: tuple[tuple[str, str], ...] = (
    ("virus", r"\bvirus|malware|infected\b"),
    (
        "system error",
        r"procmail|command died|couldn't create|could not create|exited with|mailer error"
        r"|local delivery failed"
        r"|mail(?:er)? (?:program|delivery agent) (?:error|failed)|pipe to \||no such file or directory",
    ),
    (
        "sender rejected",
        r"sender address rejected|domain of sender|sender (?:address |domain )?(?:does not exist|not found"
        r"|unknown"
        r"|invalid|is invalid)|return address|sender verify",
    ),
    ("sender blocked", r"my name was rejected|helo (?:command )?rejected|(?:bad|invalid) (?:helo|ehlo)"),
    (
        "network error",
        r"malformed or unexpected name server reply|server failure|servfail|temporary (?:dns|name)"
        r"|dns timeout"
        r"|host not found, try again",
    ),
    (
        "mailbox full",
        r"mailbox (?:is |was )?full|mail ?box.{0,20}\b(?:is |was )?full\b|quota|disk full"
        r"|exceed\w* (?:the )?(?:storage|mailbox|disk|message store|allocat)|insufficient (?:disk|storage"
        r"|space)"
        r"|mailbox size limit|not enough (?:storage|space)|mailfolder is full|too many messages in"
        r"|storage (?:limit|allocation)|user(?:'s)? (?:mailbox|inbox) is (?:full|over)|mailbox.{0,30}exceed",
    ),
    (
        "message too big",
        r"message (?:size |length )?(?:exceeds|too (?:big|large))|too large|size limit|mesg too big"
        r"|message is larger than|exceeds (?:the )?(?:maximum|max) (?:message )?size|message size",
    ),
    (
        "address moved",
        r"has moved|no longer (?:with|at|employed|works|valid at)|has left (?:the|our) (?:company|organi)"
        r"|address has changed|changed (?:his|her|their) (?:e-?mail )?address",
    ),
    (
        "domain accepts no mail",
        r"does not accept (?:any )?(?:e-?)?mail|accepts no mail|null mx|not accept(?:ing)? mail",
    ),
    (
        "user unknown",
        r"user(?:name)? (?:is )?unknown|unknown (?:user|recipient|local|mailbox|address|e-?mail)"
        r"|no such (?:user|recipient|mailbox|address|local|account|person|e-?mail)"
        r"|(?:user|recipient|mailbox|address|account|e-?mail|addressee)(?: name)? (?:does not|doesn't"
        r"|not) exist"
        r"|(?<!may )(?<!might )(?:does not|doesn't) exist|(?<!may )(?<!might )not exist|invalid (?:recipient"
        r"|mailbox|user|e-?mail|local)"
        r"|(?:recipient|user|mailbox|addressee|account)(?: address)? (?:not found|unknown|not listed|invalid)"
        r"|not (?:a )?(?:valid|known) (?:user|recipient|mailbox|address)|unroutable address"
        r"|unrouteable address"
        r"|bad destination mailbox|mailbox not found|user not found|(?:couldn't|could not|can't"
        r"|cannot) be found"
        r"|not our customer|illegal user|unknown or illegal|inexistent|non-?existent|not a known user"
        r"|(?:no|not a) valid recipient|destination (?:address|mailbox) (?:unknown|invalid)"
        r"|not listed in (?:the )?"
        r"(?:public|domino|address)|(?:doesn't|does not) have an? .{0,40}account|no mailbox (?:here"
        r"|by that name)"
        r"|address (?:not found|unknown|is invalid)|(?:recipient )?name is not recognized"
        r"|5\.4\.1 .{0,80}recipient address rejected: access denied"  # Exchange Online: no such recipient
        r"|check (?:if |whether |that )?(?:the )?(?:recipient'?s? )?(?:e-?mail )?address is (?:correct"
        r"|valid)",
    ),
    (
        "host unknown",
        r"host (?:or domain name )?not found|host unknown|unknown host|domain (?:name )?not found"
        r"|no such domain"
        r"|domain (?:does not|doesn't) exist|unrouteable (?:mail )?domain|unroutable (?:mail )?domain"
        r"|name service error|nxdomain|no mx|mx (?:record )?(?:not found|lookup failed)|unknown domain"
        r"|dns (?:error|lookup fail)|domain (?:is )?(?:invalid|unknown)|no (?:such )?host|hostname (?:not"
        r"|lookup)"
        r"|could not be resolved|not a valid domain|invalid domain|domain is not reachable",
    ),
    (
        "mailbox disabled",
        r"disabled|deactivated|suspended|inactive|not active|no longer active|expired account"
        r"|account (?:has been )?"
        r"(?:closed|locked|blocked|terminated|frozen)|mailbox (?:is )?(?:locked|closed|frozen)|is blocked"
        r"|temporar\w* locked",
    ),
    (
        "authentication failed",
        r"\bspf\b|\bdkim\b|\bdmarc\b|authenticat|unauthenticated|not authorized to send|sender id",
    ),
    ("encryption required", r"starttls|\btls\b|encryption required|secure connection"),
    (
        "spam",
        r"\bspam(?!haus|cop|trap)|junk ?mail|bulk mail|unsolicited|content (?:was |is )?(?:rejected|filtered"
        r"|blocked|looks)|mail content"
        r"|message (?:content )?rejected|filtered|phish|scam",
    ),
    (
        "sender blocked",
        r"blocked|black ?list|block ?list|deny ?list|denylist|\brbl\b|dnsbl|spamhaus|spamcop|barracuda"
        r"|(?<!not )listed (?:at|in|on|by)|reputation|reverse dns|\bptr\b|rdns|client host .{0,60}rejected"
        r"|refused to talk|banned|not allowed to send|access denied|sender (?:is )?rejected|your ip"
        r"|ip (?:address )?(?:has been )?(?:blocked|listed)|mail from .{0,40} (?:rejected|refused)",
    ),
    (
        "relay denied",
        r"relay(?:ing)? (?:access )?(?:denied|not permitted|not allowed|prohibited)|not permitted to relay"
        r"|open relay|we do not relay|no relay|unable to relay|relay not",
    ),
    (
        "rate limited",
        r"too many|rate limit|rate-limit|throttl|try (?:again )?later|exceeded (?:the )?(?:sending|rate)"
        r"|limit exceeded|connection limit|frequency|temporarily deferred|greylist|graylist|please retry",
    ),
    (
        "delivery expired",
        r"expired|retry time|retry timeout|timed? ?out.{0,40}(?:queue|deliver)|too long in (?:the )?queue"
        r"|give up|gave up|giving up|could not be delivered (?:for|within)|was not delivered for|maximum time"
        r"|for \d+ (?:hours|days)|delayed|has not yet been delivered|still trying|will (?:continue"
        r"|keep) (?:trying|to try)",
    ),
    (
        "network error",
        r"connection (?:refused|timed out|reset|lost|closed|dropped)|timed out|timeout|network|unreachable"
        r"|routing loop|mail loop|loop detected|too many hops|hop count|could not connect|can't connect"
        r"|cannot connect|no route|lost connection|broken pipe|did not respond|not responding|reset by peer",
    ),
    (
        "policy",
        r"policy|not permitted|not allowed|prohibited|forbidden|refused|restricted|administrativ|denied",
    ),
    (
        "user unknown",
        r"mailbox unavailable|invalid address|no mailbox|undeliverable address|account (?:is )?unavailable"
        r"|(?:was|were) not found|no account|no such",
    ),
    (
        "system error",
        r"system error|local error|internal error|server error|configuration error|permission denied"
        r"|i/o error"
        r"|resources|service unavailable|temporary failure|system not|mail system|unavailable",
    ),
    ("syntax error", r"syntax|malformed|invalid command|not rfc|rfc ?\d{3,4}|bad sequence|line too long"),
    # Postfix prefixes any refusal of a recipient with "Recipient address rejected:"; with no known cause
    # after it, the address may well exist: soft.
    ("rejected", r"reject|refus|not accept|undeliver|failed|denied|unable to deliver"),
)
_SENDER_STATUS = frozenset({"1.7", "1.8"})
_ADDRESS_STATUS = frozenset({"1.1", "1.2", "1.6", "1.10"})
# Causes the words name precisely enough to overrule an address status code sent along with them.
_NAMED_OTHERWISE = frozenset({"mailbox full", "message too big", "sender rejected", "system error", "policy"})
REASONS = frozenset({reason for reason, _ in _TEXT_RULES} | {"filtered"})
"""Every reason a bounce can carry."""
# Matched against lower-cased text: case-sensitive patterns run several times faster than IGNORECASE ones.
_COMPILED = tuple((reason, re.compile(pattern)) for reason, pattern in _TEXT_RULES)

# Enhanced status code (class.subject.detail, class-free) to reason, when the text says nothing clearer.
_BY_STATUS: dict[str, str] = {
    "1.0": "user unknown",
    "1.1": "user unknown",
    "1.2": "host unknown",
    "1.3": "syntax error",
    "1.4": "user unknown",
    "1.6": "address moved",
    "1.7": "sender rejected",
    "1.8": "sender rejected",
    "1.10": "user unknown",
    "2.0": "mailbox disabled",
    "2.1": "mailbox disabled",
    "2.2": "mailbox full",
    "2.3": "message too big",
    "2.4": "system error",
    "3.0": "system error",
    "3.1": "system error",
    "3.2": "system error",
    "3.4": "message too big",
    "3.5": "system error",
    "4.0": "network error",
    "4.1": "network error",
    "4.2": "network error",
    "4.3": "host unknown",
    "4.4": "host unknown",
    "4.5": "network error",
    "4.6": "network error",
    "4.7": "delivery expired",
    "5.0": "syntax error",
    "5.1": "syntax error",
    "5.2": "syntax error",
    "5.3": "rate limited",
    "5.4": "syntax error",
    "6.0": "policy",
    "7.0": "policy",
    "7.1": "policy",
    "7.7": "spam",
    "7.8": "authentication failed",
    "7.9": "authentication failed",
    "7.10": "encryption required",
    "7.23": "authentication failed",
    "7.24": "authentication failed",
    "7.25": "sender blocked",
    "7.26": "authentication failed",
    "7.27": "domain accepts no mail",
    "7.28": "spam",
}


@dataclass(frozen=True, slots=True)
class Verdict:
    """The reason for one failed recipient and whether it is hard."""

    reason: str
    hard: bool


def status_code(text: str) -> str | None:
    """The first enhanced status code (`5.1.1`) in a text, or None."""
    match = _STATUS.search(text)
    return ".".join(match.groups()) if match else None


def reply_code(text: str) -> str | None:
    """The first SMTP reply code (`550`) in a text, or None."""
    match = _REPLY.search(text)
    return match.group(1) if match else None


def judge(
    diagnostic: str,
    status: str | None,
    permanent: bool | None = None,
    stage: Literal["mail", "data"] | None = None,
) -> Verdict:
    """The reason and hard flag for one recipient from the server's words and the status code.

    `permanent` is the failure class when known from elsewhere (the DSN `Action`, the bounce's wording);
    else the status or reply code decides, and a bounce with neither counts as permanent. `stage` is the
    SMTP command the server refused, when the notice says: `mail` (our sender was refused, not the
    recipient) or `data` (the message was refused after the recipient was accepted, so it exists)."""
    if permanent is None:
        code = status or reply_code(diagnostic)
        permanent = code is None or code.startswith("5")
    said = _from_text(diagnostic) if diagnostic else None
    detail = status.split(".", 1)[1] if status else "0.0"
    coded = _BY_STATUS.get(detail)
    if detail in _SENDER_STATUS:
        reason = "sender rejected"
    elif detail in _ADDRESS_STATUS and said not in _NAMED_OTHERWISE:
        reason = coded or "user unknown"  # precise address codes outrank loose words
    elif said == "user unknown" and detail.startswith("7."):
        reason = "filtered"  # refused by a security or policy rule, whatever the words say
    elif stage == "data" and said in ("user unknown", "host unknown"):
        reason = "filtered"  # the recipient was accepted before the message was refused
    elif stage == "mail" and (said is None or said in HARD_REASONS or said == "rejected"):
        reason = "sender rejected"
    else:
        reason = said or coded or "rejected"
    return Verdict(reason, permanent and reason in HARD_REASONS)


def _from_text(text: str) -> str | None:
    sample = text[:4000].lower()
    for reason, pattern in _COMPILED:
        if pattern.search(sample):
            return reason
    return None
