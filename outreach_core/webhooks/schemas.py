"""Wire models of webhook endpoints and their deliveries (spec: Webhook endpoints; DESIGN section 9)."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from outreach_core.events.outbox import EventKind
from outreach_core.kernel.wire import NamedPattern, Omittable, Timestamp, WireModel

DeliveryStatus = Literal["pending", "delivered", "failed"]
MAX_DESCRIPTION = 500
MAX_URL = 2000


def _unique(kinds: list[EventKind]) -> list[EventKind]:
    return list(dict.fromkeys(kinds))


EventKinds = Annotated[list[EventKind], Field(min_length=1, max_length=20), AfterValidator(_unique)]
"""At least one event kind; repeats are dropped."""
_PORT = "(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
_LABEL = "[a-z0-9]{1,20}(?:-[a-z0-9]{1,20})?"


@functools.cache
def public_host_pattern() -> str:
    """A host name under a top-level domain of the public suffix list (ICANN section) that registers names
    directly (`example.com`; not `*.bd`): at most five labels of at most 41 characters before a top-level
    domain of letters, so that the host stays within DNS's 253 characters (no anchors: a part of patterns)."""
    import tldextract

    extractor = tldextract.TLDExtract(
        suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True, include_psl_private_domains=False
    )
    rules = set(extractor.tlds)
    tlds = sorted(
        r
        for r in rules
        if "." not in r
        and r.isascii()
        and r.isalpha()
        and r not in ("arpa", "onion")
        and f"*.{r}" not in rules
    )
    return f"(?:{_LABEL}\\.){{1,5}}(?:{'|'.join(tlds)})"


def _public_https_url() -> str:
    """https, a public host name (`public_host_pattern`), an optional port, and a path, query or fragment of
    visible ASCII. Hosts with longer labels, IDN hosts and, on servers that allow private URLs, http and IP
    addresses are accepted too (the field's description); this is the form any server accepts."""
    return f"^https://{public_host_pattern()}(?::{_PORT})?(?:[/?#][!-~]*)?$"


def public_website_pattern() -> str:
    """A website as a person types it: `public_host_pattern` with an optional http:// or https://, port
    and path (the form any server accepts; the field's description says what else is)."""
    return f"^(?:https?://)?{public_host_pattern()}(?::{_PORT})?(?:[/?#][!-~]*)?$"


PUBLIC_HTTPS_URL = NamedPattern("public-https-url", _public_https_url)
Url = Annotated[str, Field(min_length=1, max_length=MAX_URL), PUBLIC_HTTPS_URL]
Description = Annotated[str, Field(max_length=MAX_DESCRIPTION)]


class Webhook(WireModel):
    id: str
    url: str
    description: str | None
    events: list[EventKind] = Field(description="The event kinds delivered to this endpoint.")
    enabled: bool
    disabled_reason: str | None = Field(
        description="Why the service turned the endpoint off (410 Gone, or every attempt failing for 3 "
        "days); null when it is on or a person turned it off."
    )
    last_delivery_at: Timestamp | None = Field(description="When the last delivery attempt was made.")
    last_status: int | None = Field(
        description="HTTP status of the last attempt, 0 when the endpoint did not answer; null before any."
    )
    delivered: int = Field(description="Deliveries of the last 7 days that were delivered.")
    failed: int = Field(description="Deliveries of the last 7 days that failed after every retry.")
    pending: int = Field(description="Deliveries of the last 7 days still being tried.")
    created_at: Timestamp


class EventType(WireModel):
    type: EventKind
    description: str


class WebhookList(WireModel):
    webhooks: list[Webhook] = Field(description="Every endpoint of the workspace, oldest first.")
    events: list[EventType] = Field(description="The event kinds an endpoint can subscribe to.")


class CreateWebhookIn(WireModel):
    url: Url = Field(
        description="Where events are POSTed: an https URL on a public host name (http, IP addresses and "
        "private hosts only on servers that allow private URLs)."
    )
    description: Description | None = Field(
        default=None, description=("A note to recognise the endpoint by (optional).")
    )
    events: EventKinds = Field(description="The event kinds sent to the endpoint.")


class WebhookCreated(WireModel):
    webhook: Webhook
    secret: str = Field(
        description="The signing secret (whsec_...). Shown once: store it now to verify Service-Signature."
    )


class UpdateWebhookIn(WireModel):
    url: Omittable[Url] = Field(
        default=None, description=("Where events are POSTed: an https URL on a public host name.")
    )
    description: Description | None = Field(default=None, description="null clears it.")
    events: Omittable[EventKinds] = Field(default=None, description="Replaces the list.")
    enabled: Omittable[bool] = Field(
        default=None,
        description="true turns the endpoint on again and clears its failure count; false turns it off "
        "(its pending deliveries fail, and can be redelivered once it is on).",
    )


class TestResult(WireModel):
    delivered: bool = Field(description="The endpoint answered with a 2xx status in time.")
    status: int = Field(description="The endpoint's HTTP status; 0 when it did not answer.")
    error: str | None = Field(description="What went wrong, when it was not delivered.")
    body: str = Field(description="The endpoint's answer (the first 4,096 characters).")
    ms: int = Field(description="How long the request took, in milliseconds.")


class Try(WireModel):
    at: Timestamp
    status: int = Field(description="HTTP status; 0 when the endpoint did not answer.")
    ms: int
    error: str | None


class Delivery(WireModel):
    id: str
    event_id: str = Field(description="The event's id, also sent as Service-Event-Id (the receiver's key).")
    type: EventKind
    status: DeliveryStatus
    attempts: int = Field(description="POSTs made so far, redeliveries included.")
    last_status: int | None
    last_error: str | None
    next_attempt_at: Timestamp | None = Field(description="When the next attempt is due (pending only).")
    created_at: Timestamp
    delivered_at: Timestamp | None
    payload: dict[str, Any] = Field(description="The JSON body as it was sent.")
    tries: list[Try] = Field(description="Every attempt, oldest first.")


class DeliveriesQuery(WireModel):
    limit: int = Field(default=50, ge=1, le=200, description="How many deliveries, newest first.")


class DeliveryList(WireModel):
    deliveries: list[Delivery] = Field(description="Newest first, from the last 30 days.")


class SecretRotated(WireModel):
    secret: str = Field(description="The new signing secret. Shown once: store it now.")
    previous_valid_until: Timestamp = Field(
        description="Until then each request is signed with both secrets (two v1= values)."
    )
