"""Wire models of the workspace's own AI key."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import SINGLE_LINE, WireModel

AiProvider = Literal["openai", "google"]


class SetAiKeyIn(WireModel):
    provider: AiProvider = Field(description="Whose key it is: openai or google.")
    key: Annotated[
        str, StringConstraints(min_length=8, max_length=500, strip_whitespace=True), SINGLE_LINE
    ] = Field(description="The API key from the provider's console. Stored encrypted, never shown again.")


class AiKey(WireModel):
    own_ai_key: AiProvider | None = Field(
        description="The provider of the workspace's own AI key; null when the server's AI is used."
    )
