"""The webhook endpoints' pre-transaction step: the test POST of `test_webhook`, network I/O that never runs
inside a transaction (`Endpoint.prepare`)."""

from __future__ import annotations

import time
from typing import Any

from outreach_core.kernel.crypto import UndecryptableSecret, decrypt
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.ids import new_id
from outreach_core.webhooks import rules
from outreach_core.webhooks.schemas import TestResult
from outreach_core.webhooks.store import webhook_row


async def prepare_test_webhook(outside: Outside, id: str) -> TestResult:
    """The test POST, with no transaction open."""
    row = await outside.read(webhook_row, id)
    now = outside.now()
    event_id = new_id("evt")
    workspace_id = outside.principal.workspace_id
    body = rules.body_bytes(event_id, "lead.replied", now, workspace_id, rules.sample_reply_data(), True)
    try:
        secrets = _signing_secrets(outside, row, now)
    except UndecryptableSecret:
        error = "the signing secret cannot be decrypted with the server's keys; rotate it"
        return TestResult(delivered=False, status=0, error=error, body="", ms=0)
    http = outside.ports.http
    if http is None:
        raise RuntimeError("no HTTP client is configured (Ports.http): webhooks cannot be sent")
    headers = rules.delivery_headers(event_id, "lead.replied", int(now.timestamp()), body, secrets)
    started = time.monotonic()
    status, answer = await http.post_json(
        row.url, body, headers, outside.settings.webhook_timeout_s, max_bytes=rules.MAX_RESPONSE_BYTES
    )
    ms = round((time.monotonic() - started) * 1000)
    text = "" if status == 0 else answer.decode("utf-8", "replace")[: rules.TEST_BODY_CHARS]
    return TestResult(
        delivered=rules.is_delivered(status),
        status=status,
        error=rules.attempt_error(status, answer),
        body=text,
        ms=ms,
    )


def _signing_secrets(outside: Outside, row: Any, now: Any) -> list[str]:
    found = [decrypt(outside.settings, row.secret_encrypted, rules.SECRET_PURPOSE)]
    if row.previous_secret_encrypted and row.previous_secret_until and row.previous_secret_until > now:
        found.append(decrypt(outside.settings, row.previous_secret_encrypted, rules.SECRET_PURPOSE))
    return found
