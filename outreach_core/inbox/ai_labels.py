"""AI labels for replies: one chat completion picks one of the workspace's labels, with a reason.

The answer is parsed and validated, never trusted: it must be a JSON object `{"label": <one of the names
offered, or null>, "reason": <text>}`. An unknown label, malformed JSON, an error or a timeout of the
provider all fall back to the rules, and the reason says so. Only the reply's own words (quotes removed,
at most `TEXT_LIMIT` characters) and its subject are sent, and only for messages already matched to a lead
(a person's private mail in the same mailbox never goes to the provider).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from outreach_core.kernel.ports import AiChat

TEXT_LIMIT = 4000
REASON_LIMIT = 300

_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)

SYSTEM_PROMPT = (
    "You label replies to cold sales emails for the sender's team. Read the reply and choose the one label "
    "from the list that fits it best, or null when none fits. Answer with a JSON object only: "
    '{"label": "<a label name exactly as listed, or null>", "reason": "<one short sentence why>"}.'
)


@dataclass(frozen=True)
class LabelChoice:
    id: str
    name: str
    type: str


@dataclass(frozen=True)
class AiLabel:
    """The AI's verdict: `ok` false means the provider failed or answered wrongly (`reason` says how) and the
    rules decide instead."""

    ok: bool
    label_id: str | None
    reason: str


def prompt(choices: Sequence[LabelChoice], subject: str, text: str) -> list[dict[str, str]]:
    """The messages sent to the provider."""
    listed = "\n".join(f"- {c.name} ({c.type})" for c in choices)
    body = text.strip()[:TEXT_LIMIT] or "(empty)"
    user = f"Labels:\n{listed}\n\nSubject: {subject[:300]}\n\nReply (quoted text removed):\n{body}"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def read_answer(content: str, choices: Sequence[LabelChoice]) -> AiLabel:
    """Validate the model's answer against the label list."""
    fenced = _FENCE.match(content)
    try:
        answer: Any = json.loads(fenced.group(1) if fenced else content)
    except ValueError:
        return AiLabel(False, None, "AI answer was not JSON")
    if not isinstance(answer, dict):
        return AiLabel(False, None, "AI answer was not a JSON object")
    name, reason = answer.get("label"), answer.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        return AiLabel(False, None, "AI answer had no reason")
    reason = " ".join(reason.split())[:REASON_LIMIT]
    if name is None or (isinstance(name, str) and name.strip().lower() in ("", "null", "none")):
        return AiLabel(True, None, f"AI: no label fits: {reason}")
    if not isinstance(name, str):
        return AiLabel(False, None, "AI answer's label was not text")
    by_name = {c.name.strip().lower(): c for c in choices}
    chosen = by_name.get(name.strip().lower())
    if chosen is None:
        return AiLabel(False, None, f"AI answered an unknown label {name.strip()[:60]!r}")
    return AiLabel(True, chosen.id, f"AI: {reason}")


async def ai_label(ai: AiChat, choices: Sequence[LabelChoice], subject: str, text: str) -> AiLabel:
    """Ask the provider for one of `choices`; never raises for what the provider does."""
    answer = await ai.complete(prompt(choices, subject, text), json_answer=True)
    if answer.content is None:
        return AiLabel(False, None, f"AI unavailable: {answer.error or 'no answer'}"[:200])
    return read_answer(answer.content, choices)
