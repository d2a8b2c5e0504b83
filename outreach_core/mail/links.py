"""Links in emails: the signed one-click unsubscribe link.

The token names the workspace, lead and campaign and is signed with the server secret, so it cannot be
forged or guessed from another lead's link. It does not expire: an unsubscribe link must keep working, also
after a key rotation (verified against `OUTREACH_SECRET_KEY_PREVIOUS` too).
Links use the workspace's link base (`tracking.base.tracking_base_url`: its link domain, else
`OUTREACH_PUBLIC_URL`; see docs/tracking.md).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from outreach_core.kernel.settings import Settings
from outreach_core.kernel.signing import sign, verify

PURPOSE = "unsubscribe"
UNSUBSCRIBE_PATH = "/u/"
_NEVER = dt.datetime(9999, 1, 1, tzinfo=dt.UTC)


def unsubscribe_url(
    settings: Settings,
    *,
    workspace_id: str,
    lead_id: str,
    campaign_id: str | None,
    base_url: str | None = None,
) -> str:
    """The one-click unsubscribe link for one lead (RFC 8058 `List-Unsubscribe` and `{{unsubscribe}}`), under
    `base_url` (the workspace's `tracking_base_url`; the public URL when not given)."""
    payload = {"w": workspace_id, "l": lead_id, "c": campaign_id}
    token = sign(settings.resolved_secret_key(), PURPOSE, payload, _NEVER)
    return f"{base_url or settings.public_url}{UNSUBSCRIBE_PATH}{token}"


def read_unsubscribe_token(settings: Settings, token: str, now: dt.datetime) -> dict[str, Any]:
    """The payload of an unsubscribe token signed with the current secret key or an earlier one (links in
    emails sent before a key rotation keep working); raises `InvalidSignature` for anything forged or
    altered."""
    return verify(settings.signing_keys(), PURPOSE, token, now)
