from __future__ import annotations

from typing import Annotated

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import NAME, Timestamp, WireModel


class CreatedBy(WireModel):
    id: str
    name: str


class ApiKeyItem(WireModel):
    id: str
    name: str | None
    start: str | None = Field(description="The first characters of the key, to recognise it.")
    created_at: Timestamp
    last_used_at: Timestamp | None
    expires_at: Timestamp | None
    created_by: CreatedBy | None


class CreateApiKeyIn(WireModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=60), NAME] = Field(
        description=("A name to recognise the key by (1 to 60 characters).")
    )
    expires_in_days: int | None = Field(
        default=None,
        ge=1,
        le=365,
        description=(
            "Days until the key stops working (1 to 365); leave out for a key that does not expire."
        ),
    )


class CreatedApiKey(WireModel):
    id: str
    key: str = Field(description="The full secret. Shown once; store it now.")


class RevokeApiKeyIn(WireModel):
    id: str = Field(
        min_length=1, max_length=64, description=("The id of the API key to revoke (from list_api_keys).")
    )
