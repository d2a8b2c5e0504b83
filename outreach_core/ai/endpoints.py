from __future__ import annotations

from outreach_core.ai.operations import delete_ai_key, set_ai_key
from outreach_core.ai.prepare import prepare_set_ai_key
from outreach_core.ai.schemas import AiKey, SetAiKeyIn
from outreach_core.kernel.endpoint import Endpoint

ENDPOINTS = (
    Endpoint(
        "PUT",
        "/settings/ai-key",
        set_ai_key,
        AiKey,
        body=SetAiKeyIn,
        prepare=prepare_set_ai_key,
        idempotent=True,
        destructive=True,  # replaces the key set before
        open_world=True,
        role="admin",
        tag="settings",
    ),
    Endpoint(
        "DELETE",
        "/settings/ai-key",
        delete_ai_key,
        AiKey,
        destructive=True,
        idempotent=True,
        role="admin",
        tag="settings",
    ),
)
