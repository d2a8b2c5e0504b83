"""Pure rules of lead verification: local checks, the verifier API's answer, and the claim/retry markers.

No I/O here. The worker (`workers/verify.py`) gathers the facts (the mail-server lookup from
`outreach_core.enrichment`, the verifier API's answer through the HTTP port) and these functions turn them
into a verification status and reason. The table of statuses and reasons is in `docs/verification.md`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Literal

from disposable_email_domains import blocklist as _DISPOSABLE

from outreach_core.targets.rules import normalize_email

FinalStatus = Literal["unknown", "valid", "risky", "invalid", "catch_all"]
API_STATUSES: frozenset[str] = frozenset({"valid", "invalid", "risky", "catch_all", "unknown"})

# Reasons we write ourselves (the verifier API may give its own).
SYNTAX = "syntax"
DISPOSABLE = "disposable domain"
NO_MAIL_SERVER = "no mail server"
LOOKUP_FAILED = "mail server lookup failed"
ROLE_ACCOUNT = "role account"
LOCAL_ONLY = "local checks only"

MAX_REASON = 200
MAX_API_REASON = 120
MAX_ATTEMPTS = 4
"""A lead is tried at most this many times when the verifier API or DNS fails; then the best local answer
is written (see `RETRY_DELAYS`)."""
RETRY_DELAYS: tuple[timedelta, ...] = (
    timedelta(minutes=1),
    timedelta(minutes=5),
    timedelta(minutes=30),
)
"""Wait after failed attempt 1, 2, 3. Attempt 4 is the last: its failure is final."""

# Local parts that address a function or a team rather than a person. Compared after `_role_key`
# (lower case, `+tag` dropped, dots, dashes and underscores removed), so `no-reply`, `no_reply` and
# `noreply` are one entry. Keep it to names that are almost never a person's own mailbox.
ROLE_LOCAL_PARTS: frozenset[str] = frozenset(
    {
        "abuse",
        "accounting",
        "accounts",
        "admin",
        "administrator",
        "admissions",
        "alerts",
        "all",
        "billing",
        "booking",
        "bookings",
        "bounce",
        "bounces",
        "careers",
        "community",
        "compliance",
        "contact",
        "contactus",
        "customercare",
        "customerservice",
        "customersupport",
        "donotreply",
        "dpo",
        "enquiries",
        "enquiry",
        "events",
        "everyone",
        "feedback",
        "finance",
        "frontdesk",
        "gdpr",
        "general",
        "hello",
        "help",
        "helpdesk",
        "hiring",
        "hostmaster",
        "hr",
        "info",
        "information",
        "inquiries",
        "inquiry",
        "investorrelations",
        "investors",
        "ir",
        "it",
        "jobs",
        "legal",
        "list",
        "listserv",
        "mail",
        "mailerdaemon",
        "mailer",
        "majordomo",
        "marketing",
        "media",
        "news",
        "newsletter",
        "noc",
        "noreply",
        "notifications",
        "office",
        "operations",
        "orders",
        "partners",
        "payments",
        "postmaster",
        "pr",
        "press",
        "privacy",
        "purchasing",
        "reception",
        "recruiting",
        "recruitment",
        "reservations",
        "root",
        "sales",
        "security",
        "service",
        "services",
        "shop",
        "social",
        "spam",
        "staff",
        "store",
        "subscribe",
        "support",
        "sysadmin",
        "team",
        "tech",
        "techsupport",
        "unsubscribe",
        "webmaster",
        "welcome",
        "www",
    }
)


@dataclass(frozen=True)
class Verdict:
    """A verification result: the lead's new `verifyStatus` and `verifyReason`."""

    status: FinalStatus
    reason: str | None

    @property
    def is_final_locally(self) -> bool:
        """Invalid by local checks alone: the verifier API is not asked (it would only cost a credit)."""
        return self.status == "invalid"


@dataclass(frozen=True)
class MailServer:
    """What the mail-server lookup found for a domain (from the enrichment cache or DNS)."""

    has_mx: bool
    lookup_failed: bool


def verifier_enabled(verifier_url: str | None) -> bool:
    """Whether a verifier API is configured (`verifierEnabled`, the `api` flag of `verify_leads`)."""
    return bool(verifier_url and verifier_url.strip())


def _role_key(local: str) -> str:
    return re.sub(r"[._-]", "", local.split("+", 1)[0].lower())


def is_role_account(local_part: str) -> bool:
    """`info@`, `sales+eu@`, `no-reply@`: an address of a function or team, not of a person."""
    return _role_key(local_part) in ROLE_LOCAL_PARTS


def is_disposable(domain: str) -> bool:
    """The domain, or a domain it belongs to, is on the `disposable-email-domains` block list."""
    labels = domain.lower().rstrip(".").split(".")
    return any(".".join(labels[i:]) in _DISPOSABLE for i in range(len(labels) - 1))


def precheck(email: str) -> tuple[str | None, Verdict | None]:
    """Checks that need no network: `(domain to look up, None)`, or `(None, final invalid verdict)`.

    Order: syntax (the address must normalise, see `leads.rules.normalize_email`), then disposable domains.
    """
    normalized = normalize_email(email)
    if normalized is None:
        return None, Verdict("invalid", SYNTAX)
    _, domain = normalized
    if is_disposable(domain):
        return None, Verdict("invalid", DISPOSABLE)
    return domain, None


def local_verdict(email: str, server: MailServer) -> Verdict:
    """The result of the local checks for an address that passed `precheck`, given its domain's lookup.

    - no MX record (including NXDOMAIN and a null MX): invalid, "no mail server". Implicit MX through an A
      record is deliberately not accepted: real mailbox providers always publish MX records;
    - the lookup itself failed (timeout, SERVFAIL): unknown, "mail server lookup failed" (retried first);
    - a role account: risky, "role account";
    - otherwise valid, "local checks only".
    """
    if server.lookup_failed:
        return Verdict("unknown", LOOKUP_FAILED)
    if not server.has_mx:
        return Verdict("invalid", NO_MAIL_SERVER)
    if is_role_account(email.rsplit("@", 1)[0]):
        return Verdict("risky", ROLE_ACCOUNT)
    return Verdict("valid", LOCAL_ONLY)


# --- the verifier API -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ApiFailure:
    """The verifier API gave no usable answer; `what` says why (for the lead's reason)."""

    what: str


def api_request_body(email: str) -> bytes:
    """The request body of the verifier API protocol: `{"email": "..."}`."""
    return json.dumps({"email": email}, separators=(",", ":")).encode()


def api_request_headers(api_key: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def parse_api_answer(status: int, body: bytes) -> Verdict | ApiFailure:
    """The verifier API's answer: a 2xx with `{"status": one of API_STATUSES, "reason": string?}`.

    Anything else (no answer, non-2xx, not JSON, an unknown status) is an `ApiFailure`."""
    if status == 0:
        detail = _clean(body.decode("utf-8", "replace"), 60) if body else ""
        return ApiFailure(f"no answer: {detail}" if detail else "no answer")
    if not 200 <= status < 300:
        return ApiFailure(f"HTTP {status}")
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return ApiFailure("malformed answer")
    if not isinstance(data, dict):
        return ApiFailure("malformed answer")
    value = data.get("status")
    if not isinstance(value, str) or value.strip().lower() not in API_STATUSES:
        return ApiFailure("malformed answer")
    reason = data.get("reason")
    text = _clean(reason, MAX_API_REASON) if isinstance(reason, str) else ""
    if text.startswith(MARKER_PREFIX):  # never let an answer look like one of our claim markers
        text = "API: " + text
    api_status: FinalStatus = value.strip().lower()  # type: ignore[assignment]
    return Verdict(api_status, text or None)


def combine(local: Verdict, api: Verdict) -> Verdict:
    """The verifier API decides, except that it cannot clear a role account: `valid` stays risky."""
    if api.status == "valid" and local.status == "risky":
        return local
    return api


def with_api_failure(local: Verdict, failure: ApiFailure) -> Verdict:
    """The local result, its reason saying the verifier API could not be used."""
    base = local.reason or LOCAL_ONLY
    return Verdict(local.status, _clip(f"{base}; verifier API failed ({failure.what})"))


@dataclass(frozen=True)
class Retry:
    """Not decided yet: the lead stays `verifying` and `reason` (a retry marker) says when to try again."""

    reason: str


def decide(local: Verdict, api: Verdict | ApiFailure | None, attempt: int, now: datetime) -> Verdict | Retry:
    """The outcome of attempt `attempt` for one lead.

    `local` is the local checks' verdict; `api` the verifier API's answer, or None when it was not asked
    (not configured, not requested for this lead, or the address is already invalid locally).

    - An answer from the API decides (see `combine`).
    - A failed API call, or a failed mail-server lookup the API did not settle, is retried after
      `RETRY_DELAYS[attempt - 1]`; after the last attempt the local verdict is written, its reason saying
      what failed.
    - Otherwise the local verdict is final.
    """
    if isinstance(api, Verdict):
        return combine(local, api)
    if isinstance(api, ApiFailure):
        what = f"verifier API: {api.what}"
    elif local.reason == LOOKUP_FAILED:
        what = LOOKUP_FAILED
    else:
        return local
    delay = retry_delay(attempt)
    if delay is not None:
        return Retry(retry_marker(now + delay, attempt, what))
    return with_api_failure(local, api) if isinstance(api, ApiFailure) else local


# --- claims and retries ---------------------------------------------------------------------------------
#
# There is no claim column: while a lead is `verifying`, its `verify_reason` carries the claim, as
#   "checking; next try after 2026-11-21T15:10:00.000000Z (attempt 2)"              (a worker has it)
#   "checking; next try after 2026-11-21T15:11:00.000000Z (attempt 2 failed: ...)"  (waiting to retry)
# The timestamp has a fixed width, so "is the time up" is one string comparison in SQL, and the whole marker
# is unique per claim, so a worker's write-back can check that the lead is still its own.

MARKER_PREFIX = "checking; next try after "
_TS_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_MARKER = re.compile(
    r"^checking; next try after (?P<ts>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z) \(attempt (?P<n>\d+)"
)


def marker_time(when: datetime) -> str:
    """The fixed-width UTC timestamp used in markers (orders as text exactly as in time)."""
    return when.astimezone(UTC).strftime(_TS_FORMAT)


def due_bound(now: datetime) -> str:
    """Markers that sort below this string are due (their time is up)."""
    return MARKER_PREFIX + marker_time(now)


def claim_marker(until: datetime, attempt: int) -> str:
    return f"{MARKER_PREFIX}{marker_time(until)} (attempt {attempt})"


def retry_marker(after: datetime, attempt: int, what: str) -> str:
    return _clip(f"{MARKER_PREFIX}{marker_time(after)} (attempt {attempt} failed: {what})")


def previous_attempts(reason: str | None) -> int:
    """How many attempts a lead has had, from its reason (0 when it carries no marker)."""
    match = _MARKER.match(reason or "")
    return int(match.group("n")) if match else 0


def retry_delay(attempt: int) -> timedelta | None:
    """Wait after failed attempt `attempt`, or None when that attempt was the last."""
    return RETRY_DELAYS[attempt - 1] if 1 <= attempt <= len(RETRY_DELAYS) else None


def _clean(value: str, limit: int) -> str:
    return re.sub(r"[\x00-\x1f\x7f]+", " ", value).strip()[:limit]


def _clip(value: str) -> str:
    return value if len(value) <= MAX_REASON else value[: MAX_REASON - 1] + "…"
