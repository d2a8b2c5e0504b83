"""What a classified message puts on its thread: the thread kind and the label, with who decided and why.

The rules label the kinds they recognise (out of office, auto-reply, unsubscribe request, complaint report
as an unsubscribe request, bounce) with the matching built-in label. A person's reply is labelled by the AI
port when the workspace has `aiLabels` on and the server has an AI endpoint (`ai_labels.py`); otherwise
it is left without a label (`labelSource` `rules`, the reason says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from outreach_core.inbox.rules import Classification

ThreadKind = Literal["reply", "auto_reply", "out_of_office", "bounce", "unsubscribe_request"]

THREAD_KIND: dict[str, ThreadKind] = {
    "reply": "reply",
    "auto_reply": "auto_reply",
    "out_of_office": "out_of_office",
    "bounce": "bounce",
    "unsubscribe_request": "unsubscribe_request",
    "complaint": "unsubscribe_request",  # a spam complaint (ARF) unsubscribes like a request; reason says so
}
"""Classifier kind -> thread and message kind. `delivery_report` has none: it is not stored."""

RULE_LABELS: dict[str, str] = {
    "out_of_office": "out_of_office",
    "auto_reply": "auto_reply",
    "unsubscribe_request": "unsubscribe_request",
    "complaint": "unsubscribe_request",
    "bounce": "bounce",
}
"""Classifier kind -> the built-in label the rules put on it."""


@dataclass(frozen=True)
class LabelVerdict:
    """The label one message gets: a label id (None: no label), who decided, and why (at most 500 chars)."""

    label_id: str | None
    source: Literal["rules", "ai"]
    reason: str


def rule_label(verdict: Classification, builtin: dict[str, str], ai_note: str | None = None) -> LabelVerdict:
    """The rules' label for a message: the built-in label of its kind, or none for a person's reply
    (`ai_note` says why the AI did not label it, when it was asked or could not be)."""
    key = RULE_LABELS.get(verdict.kind)
    if key is None:
        why = ai_note or "replies are labelled by AI only (aiLabels off or no AI endpoint)"
        return LabelVerdict(None, "rules", f"{verdict.reason}; no label: {why}"[:500])
    return LabelVerdict(builtin.get(key), "rules", verdict.reason[:500])
