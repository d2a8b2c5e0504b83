"""Connected apps on the wire, and the records the OAuth door gets from the core."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from pydantic import Field

from outreach_core.kernel.wire import RowRecord, Timestamp, WireModel

# --- wire models ------------------------------------------------------------------------------------------


class ConnectedAppUser(WireModel):
    id: str
    name: str


class ConnectedApp(WireModel):
    """An AI app (OAuth client) a member connected to this workspace."""

    id: str = Field(description="The connection's id; pass it to disconnect_app.")
    name: str = Field(description="The app's registered name, or its client id when it gave none.")
    uri: str | None = Field(default=None, description="The app's home page, as the app registered it.")
    user: ConnectedAppUser | None = Field(default=None, description="The member who connected the app.")
    connected_at: Timestamp
    last_used_at: Timestamp | None = None
    mine: bool = Field(description="True when you connected this app yourself.")


# --- records for the OAuth door (never serialized to callers) ---------------------------------------------


@dataclass(frozen=True)
class AuthorizationCodeRecord(RowRecord):
    """An authorization code that is unused, unexpired and belongs to the asking client."""

    client_id: str
    grant_id: str
    user_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    scopes: list[str]
    resource: str | None
    expires_at: datetime


@dataclass(frozen=True)
class RefreshTokenRecord(RowRecord):
    """A refresh token that is unrevoked, unexpired, of a live grant and belongs to the asking client."""

    client_id: str
    grant_id: str
    user_id: str
    scopes: list[str]
    resource: str | None
    expires_at: datetime


@dataclass(frozen=True)
class IssuedTokens:
    """A new access/refresh token pair. The raw tokens exist only here; the database keeps their hashes."""

    access_token: str
    refresh_token: str
    expires_in: int
    scopes: list[str]
    grant_id: str
