"""Pure rules of webhook delivery: the event catalogue, signing, URLs, the retry schedule, when an endpoint is
turned off, and the exact bytes of a body. No I/O (docs/webhooks.md explains each decision)."""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from outreach_core.events.data import iso_z
from outreach_core.kernel.urls import ALLOW_PRIVATE_HINT, url_problem

EVENT_CATALOGUE: tuple[tuple[str, str], ...] = (
    ("lead.replied", "A lead answered a campaign email (read from the mailbox by the inbox worker)."),
    (
        "lead.labeled",
        "A label was put on a lead: by a person or tool, a label trigger, or the reply classifier.",
    ),
    ("lead.bounced", "An email to the lead bounced: refused while sending, or a bounce message came back."),
    ("lead.unsubscribed", "The lead unsubscribed: through the unsubscribe link, or by asking in a reply."),
    ("lead.won", "The lead was marked won (POST /leads/{id}/won), with the deal value if given."),
    (
        "campaign.paused",
        "A campaign was paused: by a person, after its endOn date, or at its bounce threshold.",
    ),
)

SECRET_PREFIX = "whsec_"
SECRET_PURPOSE = b"outreach webhook secret v1"
"""The encryption purpose of stored signing secrets (`outreach_core.kernel.crypto`)."""
ROTATION_OVERLAP = timedelta(hours=24)
"""After a rotation the previous secret still signs (a second v1=) for this long."""
MAX_WEBHOOKS = 20
"""Endpoints per workspace."""
KEEP_DELIVERIES = timedelta(days=30)
COUNT_WINDOW = timedelta(days=7)
DISABLE_AFTER = timedelta(days=3)
DISABLE_MIN_ATTEMPTS = 20
"""An endpoint whose every attempt failed for `DISABLE_AFTER`, with at least this many attempts, is off."""
MAX_RESPONSE_BYTES = 16 * 1024
"""How much of an endpoint's answer is read; the rest is never downloaded."""
TEST_BODY_CHARS = 4096
ERROR_CHARS = 500
JITTER = 0.2
"""Each retry delay is stretched or shrunk at random by up to this fraction, so that endpoints that failed
together are not all retried in the same second."""


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """HMAC-SHA256 (hex) of `<timestamp>.<body>` with the secret's UTF-8 bytes (the whole `whsec_...`)."""
    return hmac.new(secret.encode(), str(timestamp).encode() + b"." + body, hashlib.sha256).hexdigest()


def signature_header(timestamp: int, body: bytes, secrets: list[str]) -> str:
    """`t=<unix>,v1=<hex>[,v1=<hex>]`: one v1 per secret, the current one first."""
    return ",".join([f"t={timestamp}", *(f"v1={sign(s, timestamp, body)}" for s in secrets)])


def delivery_headers(
    event_id: str, event_type: str, timestamp: int, body: bytes, secrets: list[str]
) -> dict[str, str]:
    return {
        "Content-Type": "application/json",
        "Service-Signature": signature_header(timestamp, body, secrets),
        "Service-Event-Id": event_id,
        "Service-Event-Type": event_type,
    }


def webhook_url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why `url` cannot be a webhook endpoint, in a sentence for the person who typed it; None when it can.

    https is required (http only when the server allows private URLs, as tests and on-premises set-ups do);
    the host is checked as every outgoing host is (`urls.url_problem`: its form as the HTTP client reads it,
    and unless private URLs are allowed a public address or a registrable, non-local name; names are
    checked again, once resolved, on every delivery); credentials in the URL are refused."""
    problem = url_problem(url, allow_private=allow_private)
    if problem is not None:
        return problem
    parts = urlsplit(url)
    if parts.scheme != "https" and not allow_private:
        return f"the URL must start with https:// ({ALLOW_PRIVATE_HINT} to allow http)"
    if parts.username is not None or parts.password is not None:
        return "the URL must not hold a user name or password; verify the Service-Signature header instead"
    if any(c.isspace() for c in url):
        return "the URL must not contain spaces"
    return None


def retry_delay(round_attempts: int, schedule: list[float], rng: random.Random | None = None) -> float | None:
    """Seconds to wait before the next attempt after `round_attempts` failed attempts (of this round:
    since the delivery was queued or redelivered); None when the schedule is used up (the delivery fails)."""
    if round_attempts < 1 or round_attempts > len(schedule):
        return None
    spread = (rng or random).uniform(-JITTER, JITTER)
    return max(0.0, schedule[round_attempts - 1] * (1.0 + spread))


def is_delivered(status: int) -> bool:
    return 200 <= status < 300


def attempt_error(status: int, answer: bytes) -> str | None:
    """What went wrong with one attempt, for the delivery log; None when it was delivered."""
    if is_delivered(status):
        return None
    if status == 0:
        return (answer.decode("utf-8", "replace") or "no answer")[:ERROR_CHARS]
    if 300 <= status < 400:
        return f"HTTP {status}: redirects are not followed; use the final URL"
    snippet = " ".join(answer[:200].decode("utf-8", "replace").split())
    return (f"HTTP {status}: {snippet}" if snippet else f"HTTP {status}")[:ERROR_CHARS]


def long_failure(failing_since: datetime | None, failed_attempts: int, now: datetime) -> bool:
    """Every attempt since `failing_since` failed, long enough and often enough to turn the endpoint off."""
    return (
        failing_since is not None
        and failed_attempts >= DISABLE_MIN_ATTEMPTS
        and now - failing_since >= DISABLE_AFTER
    )


def gone_reason(now: datetime) -> str:
    return f"The endpoint answered 410 Gone on {iso_z(now)}; the service turned it off."


def long_failure_reason(failing_since: datetime, attempts: int) -> str:
    days = DISABLE_AFTER.days
    return (
        f"Every delivery attempt failed for more than {days} days ({attempts} attempts since "
        f"{iso_z(failing_since)}); the service turned it off."
    )


def lease_seconds(timeout_s: float) -> float:
    """How long a claimed delivery stays with the worker that claimed it: it may wait for a free slot of
    its endpoint (at most one timeout, since a worker claims at most twice the endpoint's concurrency)
    and then POST (one more timeout); a worker that died meanwhile lets it become due again."""
    return 2 * timeout_s + 5


MAX_ROUNDS = 25
"""An endpoint that answers fast may have up to this many times its concurrency claimed and queued in one
process (fewer, down to 2 times, the slower it answers): see `held_cap`."""


def held_cap(concurrency: int, timeout_s: float, average_s: float | None) -> int:
    """How many deliveries of an endpoint one process may hold (POSTing or queued for a slot): twice its
    concurrency, or for an endpoint that answers fast (`average_s`, the moving average of its POSTs'
    duration) as many rounds as fit four times in one timeout (at most `MAX_ROUNDS`), so a fast endpoint is
    never starved by the time a cycle takes."""
    if average_s is None:
        return 2 * concurrency
    rounds = int(timeout_s / max(4 * average_s, 0.001))
    return concurrency * max(2, min(MAX_ROUNDS, rounds))


def waited_too_long(waited_s: float, timeout_s: float) -> bool:
    """A claimed delivery that waited `waited_s` for a free slot is left alone (to become due again when
    its lease ends, never POSTed twice at once): its lease (`lease_seconds`) must outlast the POST."""
    return waited_s > timeout_s + 4


def body_bytes(
    event_id: str, kind: str, created_at: datetime, workspace_id: str, data: Any, test: bool = False
) -> bytes:
    """The exact body POSTed for an event (DESIGN section 9), compact UTF-8 JSON in a fixed key order."""
    envelope = {
        "id": event_id,
        "type": kind,
        "createdAt": iso_z(created_at),
        "workspaceId": workspace_id,
        "test": test,
        "data": data,
    }
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":")).encode()


def sample_reply_data() -> dict[str, Any]:
    """The `data` of the sample `lead.replied` event `test_webhook` sends (made-up ids and people)."""
    return {
        "lead": {
            "id": "lead_sample",
            "email": "jane.doe@example.com",
            "firstName": "Jane",
            "lastName": "Doe",
            "company": "Example Inc",
            "status": "replied",
        },
        "campaign": {"id": "cmp_sample", "name": "Sample campaign"},
        "thread": {"id": "thr_sample", "subject": "Re: Quick question"},
        "step": {"id": "stp_sample", "position": 0},
        "variant": {"id": "var_sample", "label": "A"},
        "message": {
            "id": "msg_sample",
            "from": "jane.doe@example.com",
            "subject": "Re: Quick question",
            "text": "Thanks for reaching out. Could we talk next week?",
            "receivedAt": "2026-01-01T09:30:00.000Z",
        },
    }
