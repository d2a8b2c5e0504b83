"""Checking a new AI key with its provider before it is saved (no transaction open meanwhile)."""

from __future__ import annotations

from outreach_core.ai.schemas import SetAiKeyIn
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import InvalidInput

_PROBE = [
    {"role": "system", "content": 'Answer with the JSON object {"ok": true} and nothing else.'},
    {"role": "user", "content": "ping"},
]


async def prepare_set_ai_key(outside: Outside, *, body: SetAiKeyIn) -> None:
    """Refuse (422) a key its provider rejects (HTTP 401 or 403). Other failures (a timeout, the provider
    down) do not block saving: the key may well be right."""
    keys = outside.ports.ai_keys
    if keys is None:
        return
    answer = await keys.client(body.provider, body.key).complete(_PROBE, json_answer=True)
    if answer.error in ("HTTP 401", "HTTP 403"):
        raise InvalidInput.field("key", f"{body.provider} refused this key ({answer.error})")
