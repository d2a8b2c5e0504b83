"""Asking the AI port for a JSON object, validating the answer, and retrying once (DESIGN section 9: the
answer is parsed and validated, never trusted).

One retry: when the first answer is unusable (no answer, not JSON, not the shape asked for, too long, a
variable that does not exist ...), the model is told what was wrong and asked once more. When the second
answer is unusable too, the caller gets the problems and nothing to save.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from outreach_core.kernel.ports import AiChat

T = TypeVar("T")
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class Unusable(Exception):
    """What is wrong with an answer, in a sentence the model (and then the person) can act on."""


def json_object(content: str) -> dict[str, Any]:
    """The JSON object an answer holds (a ```json fence is allowed); `Unusable` otherwise."""
    fenced = _FENCE.match(content)
    try:
        value = json.loads(fenced.group(1) if fenced else content)
    except ValueError:
        raise Unusable("the answer was not valid JSON") from None
    if not isinstance(value, dict):
        raise Unusable("the answer was not a JSON object")
    return value


@dataclass
class Asked(Generic[T]):
    """The validated result (None when both answers were unusable), the problems met, and how many calls
    reached the provider (an answer came back, usable or not)."""

    result: T | None
    problems: list[str] = field(default_factory=list)
    calls: int = 0


async def ask_json(
    chat: AiChat,
    messages: list[dict[str, str]],
    validate: Callable[[dict[str, Any]], T],
    *,
    attempts: int = 2,
) -> Asked[T]:
    """Ask `chat` for a JSON object and `validate` it (raising `Unusable`), with one retry."""
    asked: Asked[T] = Asked(None)
    conversation = list(messages)
    for attempt in range(1, attempts + 1):
        answer = await chat.complete(conversation, json_answer=True)
        if answer.content is None:
            asked.problems.append(f"AI answer {attempt}: no answer ({answer.error or 'unknown error'})")
            continue
        asked.calls += 1
        try:
            asked.result = validate(json_object(answer.content))
            return asked
        except Unusable as exc:
            asked.problems.append(f"AI answer {attempt}: {exc}")
            conversation = [
                *messages,
                {"role": "assistant", "content": answer.content[:20_000]},
                {
                    "role": "user",
                    "content": f"That answer cannot be used: {exc}. Answer again with only the JSON object, "
                    "following every rule above.",
                },
            ]
    return asked
