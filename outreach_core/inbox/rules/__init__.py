"""The inbox's pure rules: parse received mail and say what it is.

No I/O, no database, no other domain package (of the service only the mail layer's HTML-to-text converter,
`mail/plaintext.py`): raw bytes in, typed immutable values out. The inbox worker
(IMAP), matching against the send ledger, threads, labels and effects are built on these:

    parsed = parse_message(raw)                 # ParsedMessage: ids, addresses, bodies, reports
    verdict = classify(parsed, arrived_at)      # Classification: kind, reason, bounce/complaint details

`parsed.in_reply_to`, `parsed.references` and, for bounces and complaints, `parsed.original_message_ids`
are what the worker matches against the Message-IDs of the send ledger. See docs/inbox.md.
"""

from outreach_core.inbox.rules.autoreply import AutoReply, detect_auto_reply
from outreach_core.inbox.rules.bounces import BounceRecipient, BounceReport, read_bounce
from outreach_core.inbox.rules.classify import Classification, Kind, classify
from outreach_core.inbox.rules.complaints import Complaint, read_complaint
from outreach_core.inbox.rules.mime import (
    BODY_LIMIT,
    Attachment,
    OriginalMessage,
    ParsedMessage,
    parse_message,
)
from outreach_core.inbox.rules.quotes import own_text
from outreach_core.inbox.rules.reasons import HARD_REASONS, REASONS
from outreach_core.inbox.rules.return_date import return_date
from outreach_core.inbox.rules.unsubscribe import find_unsubscribe_request

__all__ = [
    "BODY_LIMIT",
    "HARD_REASONS",
    "REASONS",
    "Attachment",
    "AutoReply",
    "BounceRecipient",
    "BounceReport",
    "Classification",
    "Complaint",
    "Kind",
    "OriginalMessage",
    "ParsedMessage",
    "classify",
    "detect_auto_reply",
    "find_unsubscribe_request",
    "own_text",
    "parse_message",
    "read_bounce",
    "read_complaint",
    "return_date",
]
