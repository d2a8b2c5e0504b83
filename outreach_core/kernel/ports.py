"""Ports: the protocols through which the core reaches the outside world.

Adapters live at the edge (`outreach_app`, `workers`) or in tests. The clock is the only port that tests
replace with a fake; every other port is exercised against a real server on loopback.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any, Literal, Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


class FixedClock:
    """A clock that only moves when told to (tests, simulations)."""

    def __init__(self, start: datetime) -> None:
        if start.tzinfo is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._now = start.astimezone(UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, **delta: float) -> datetime:
        self._now += timedelta(**delta)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when.astimezone(UTC)


@dataclass(frozen=True)
class DnsAnswer:
    """Answers as text (empty for NXDOMAIN or no answer) and how long they may be cached: the answer's TTL,
    or for an empty answer the negative TTL of RFC 2308 (the smaller of the SOA record's TTL and its
    MINIMUM field, from the authority section); None when the server sent no SOA with an empty answer."""

    records: list[str]
    ttl_s: int | None


class DnsResolver(Protocol):
    async def lookup(self, name: str, rdtype: str) -> list[str]:
        """Answers for `name`/`rdtype` as text; empty for NXDOMAIN or no answer."""
        ...

    async def lookup_answer(self, name: str, rdtype: str) -> DnsAnswer:
        """Like `lookup`, with the TTL the answer may be cached for."""
        ...


class HttpClient(Protocol):
    async def post_json(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        timeout_s: float,
        *,
        max_bytes: int | None = None,
    ) -> tuple[int, bytes]:
        """POST raw JSON; returns (status, body), the body read up to `max_bytes` (the adapter's own limit
        when None). Status 0 when the peer did not answer; the body then says why in a few words."""
        ...

    async def get(
        self, url: str, headers: dict[str, str], timeout_s: float, *, max_bytes: int | None = None
    ) -> tuple[int, bytes]:
        """GET `url` (redirects not followed), as `post_json` answers: (status, body) or (0, why)."""
        ...


@dataclass(frozen=True)
class MailServer:
    """Where and as whom to log in to an SMTP or IMAP server."""

    host: str
    port: int
    security: Literal["tls", "starttls"]  # tls = implicit TLS from the first byte; starttls = upgrade
    user: str
    proxy: str | None = None  # the sending IP's proxy (socks5://...) SMTP connects through; None: directly
    # how to log in: with the password, or (google_oauth, microsoft mailboxes) with SASL XOAUTH2, the
    # "password" then being a fresh access token (`mailboxes/oauth_tokens.py:login_for`)
    auth: Literal["password", "xoauth2"] = "password"


class MailLogin(Protocol):
    """Login tests against a mailbox's servers. Each returns None when the login passed, else a short,
    human-readable reason (authentication failed, connection refused, TLS error, timeout...) that never
    contains the password or an exception's text."""

    async def test_smtp(self, server: MailServer, password: str) -> str | None: ...

    async def test_imap(self, server: MailServer, password: str) -> str | None: ...


Phase = Literal["connect", "tls", "auth", "mail", "rcpt", "data", "credentials", "sender", "message", "token"]


@dataclass(frozen=True)
class Delivery:
    """What happened to one hand-off. `ok` = the server accepted the message (250 after DATA). Otherwise
    `phase` says where it failed (connect, tls, auth, mail, rcpt, data; `credentials`: the stored password
    is unusable; `sender`: the mailbox's own settings make every email unbuildable; `message`: this email
    cannot be built or cannot go to this address through this server; `token`: an OAuth mailbox's access
    token could not be refreshed for a passing reason, tried again later), `code` is the server's reply code
    (None when there was no reply: refused, TLS, timeout) and `reason` a short fixed phrase plus the server's
    own reply text (never the password or an exception's text)."""

    ok: bool
    phase: Phase = "data"
    code: int | None = None
    reason: str = ""


class MailSender(Protocol):
    """Hands finished messages to a mailbox's SMTP server (AUTH with its password). Connections may be kept
    and reused for the same server and user; `close_idle` closes those unused for a while."""

    async def send(
        self, server: MailServer, password: str, mail_from: str, rcpt_to: str, message: bytes
    ) -> Delivery: ...

    async def close_idle(self) -> None: ...

    async def aclose(self) -> None: ...


class MailReader(Protocol):
    """IMAP access to a mailbox's server (AUTH with its password): the inbox worker's sessions and the copy of
    a reply sent from a thread. Like `MailLogin`, a failure is a short reason, never an exception's text."""

    async def append_sent(
        self, server: MailServer, password: str, message: bytes, when: datetime
    ) -> str | None:
        """Store `message` in the mailbox's Sent folder (SPECIAL-USE `\\Sent`, else the usual names), flagged
        `\\Seen`, with `when` as its INTERNALDATE. None when stored, else why not."""
        ...


class InboxError(Exception):
    """An inbox session failed. `reason` is a short fixed phrase (never an exception's text); `login` is true
    when the server refused the user name or password (what counts toward a mailbox's `error` status)."""

    def __init__(self, reason: str, *, login: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.login = login


@dataclass(frozen=True)
class InboxFolder:
    """A folder the inbox worker reads: its name as the server spells it and what it is."""

    name: str
    role: Literal["inbox", "junk"]


@dataclass(frozen=True)
class FolderStatus:
    """What EXAMINE says about a folder."""

    uidvalidity: int
    uidnext: int | None  # None when the server did not say
    exists: int


@dataclass(frozen=True)
class FetchedMessage:
    """One message of `InboxSession.fetch`: UID, INTERNALDATE (aware), RFC822.SIZE, and its first bytes."""

    uid: int
    arrived_at: datetime
    size: int
    raw: bytes


class InboxSession(Protocol):
    """One logged-in IMAP connection of the inbox worker. Folders are opened read-only (EXAMINE) and bodies
    fetched with BODY.PEEK, so nothing is ever marked read. Every method is bounded by the connector's
    timeout and raises `InboxError` when the server fails or the connection is lost."""

    @property
    def can_idle(self) -> bool: ...

    async def folders(self) -> list[InboxFolder]:
        """INBOX and, when there is one, the junk folder (SPECIAL-USE `\\Junk`, else the usual names)."""
        ...

    async def examine(self, folder: str) -> FolderStatus: ...

    async def uids_from(self, first_uid: int) -> list[int]:
        """UIDs >= `first_uid` in the open folder, ascending (UID SEARCH UID n:*)."""
        ...

    async def uids_since(self, day: date) -> list[int]:
        """UIDs of messages that arrived on or after `day` (UID SEARCH SINCE: INTERNALDATE, server's day)."""
        ...

    async def fetch(self, uids: Sequence[int], max_bytes: int) -> list[FetchedMessage]:
        """The messages of `uids` that the server returned and that could be read, ascending; a message it
        could not read is logged with its UID and left out."""
        ...

    async def idle(self, seconds: float) -> bool:
        """IDLE on the open folder for at most `seconds`; True as soon as the server reports new mail."""
        ...

    async def close(self) -> None:
        """LOGOUT (best effort) and close the connection; never raises."""
        ...


class InboxConnector(Protocol):
    """Opens inbox sessions: connect (TLS or STARTTLS as configured), log in, read the capabilities."""

    async def connect(self, server: MailServer, password: str) -> InboxSession:
        """A logged-in session; raises `InboxError` (`login=True` when the credentials were refused)."""
        ...


@dataclass(frozen=True)
class ChatAnswer:
    """What an AI chat completion gave: the assistant's message text, or why there is none (`error`: a short
    reason such as "timeout after 10s" or "HTTP 429", never a key or an exception's text)."""

    content: str | None
    error: str | None = None


class AiChat(Protocol):
    """The one AI port (DESIGN section 9): an OpenAI-compatible Chat Completions endpoint. The answer is text
    to be parsed and validated by the caller, never trusted."""

    async def complete(self, messages: list[dict[str, str]], *, json_answer: bool = True) -> ChatAnswer:
        """One chat completion of `messages` (`{role, content}`); with `json_answer` the model is asked for
        a JSON object (`response_format: json_object`)."""
        ...


class AiKeys(Protocol):
    """Chat clients on a workspace's own AI key (DESIGN section 9: `ownAiKey` replaces the server's key)."""

    def client(self, provider: str, key: str) -> AiChat:
        """The AI port of `provider` (openai, google) with `key`: its OpenAI-compatible endpoint and model."""
        ...


@dataclass(frozen=True)
class WebPage:
    """A fetched web page: the URL it was finally read from (after redirects), its HTML as text, and the
    `X-Robots-Tag` header (None when absent)."""

    url: str
    html: str
    robots: str | None = None


class WebFetchError(Exception):
    """A page could not be fetched: `reason` is a sentence for the person who gave the URL (refused address,
    not found, too large, not HTML, timed out ...), never an exception's text."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class WebFetcher(Protocol):
    """GETs web pages for people (the website of the offer draft) under the outgoing-address rules."""

    async def fetch_page(self, url: str) -> WebPage:
        """The HTML page at `url`, redirects followed only to public addresses; raises `WebFetchError`."""
        ...


@dataclass(frozen=True)
class Subscription:
    """A workspace's subscription as the billing provider reports it. `plan`/`interval` are None when the
    provider's prices are not ours; `event_at` is when the provider made the report (events can arrive out
    of order: an older one never overwrites a newer one)."""

    customer_id: str
    subscription_id: str | None
    workspace_id: str | None
    plan: str | None
    interval: str | None
    status: str | None
    period_start: datetime | None
    period_end: datetime | None
    cancel_at_period_end: bool
    dedicated_ip_addons: int
    payer_id: str | None = None
    event_at: datetime | None = None


@dataclass(frozen=True)
class BillingEvent:
    """A verified provider event: its id (applied once), kind, and the subscription it carries (None for
    kinds that change nothing here)."""

    id: str
    kind: str
    subscription: Subscription | None


class BillingProviderError(Exception):
    """The provider refused or did not answer; `reason` is a short sentence without keys or raw errors."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BillingProvider(Protocol):
    """A payment provider (OUTREACH_BILLING=stripe). Every method raises `BillingProviderError` on failure."""

    async def checkout(
        self,
        *,
        workspace_id: str,
        payer_id: str,
        email: str,
        customer_id: str | None,
        plan: str,
        interval: str,
        success_url: str,
        cancel_url: str,
    ) -> str:
        """A hosted checkout page's URL for a new subscription to `plan` billed every `interval`."""
        ...

    async def change_plan(self, *, subscription_id: str, plan: str, interval: str) -> Subscription:
        """Move an existing subscription to another plan or interval (prorated); no page to visit."""
        ...

    async def portal(self, *, customer_id: str, return_url: str) -> str:
        """A hosted customer portal's URL (payment method, invoices, cancellation)."""
        ...

    async def find(self, *, workspace_id: str, customer_id: str | None, email: str) -> Subscription | None:
        """The workspace's current subscription, looked up at the provider; None when there is none."""
        ...

    async def set_dedicated_ips(self, *, subscription_id: str, quantity: int, interval: str) -> Subscription:
        """Set the dedicated IP add-on quantity of the subscription (0 removes it)."""
        ...

    def read_event(self, payload: bytes, signature: str | None) -> BillingEvent:
        """A webhook request's event, its signature verified (raises `BillingProviderError` otherwise)."""
        ...


# --- warmup (issue 32 item 1, docs/warmup.md) ---------------------------------------------------------------


@dataclass(frozen=True)
class Tended:
    """What `WarmupMail.tend` found: each token found, with the folder it was found in (`inbox`, or `spam`
    for the junk folder, from where it was moved to INBOX); `error` when the mailbox could not be read."""

    found: dict[str, Literal["inbox", "spam"]]
    error: str | None = None


class WarmupMail(Protocol):
    """The receiving side of warmup over IMAP (AUTH with the mailbox's password)."""

    async def tend(self, server: MailServer, password: str, tokens: Sequence[str]) -> Tended:
        """Find the warmup emails carrying `tokens` (header `X-Outreach-Warmup`) in INBOX and the junk
        folder; move the ones in junk to INBOX; flag every one found `\\Seen` and `\\Flagged` (important).
        Never raises: a failure is `Tended({}, error)` with a short reason."""


@dataclass(frozen=True)
class TlsHandshake:
    """What a TLS handshake to a link domain showed (docs/link-domain.md). `ok`: the certificate was verified
    for the name. Otherwise `problem` says which side failed: `unreachable` (no connection, refused, timed
    out, or the server ended the handshake: a certificate may still be coming) or `certificate` (a
    certificate was presented and refused: wrong name, expired, not trusted); `reason` is a short phrase
    for the person, never an exception's text."""

    ok: bool
    problem: Literal["unreachable", "certificate"] | None = None
    reason: str = ""


class TlsProbe(Protocol):
    """Real TLS handshakes to a host, verified against the system store plus `OUTREACH_TLS_CA_FILE`."""

    async def handshake(self, host: str, port: int, timeout_s: float) -> TlsHandshake:
        """Connect to `host`:`port` (its addresses resolved through the DNS port), send `host` as SNI, verify
        the certificate chain and name, and close."""
        ...


# --- OAuth mailboxes (issue 32 item 3, docs/mailboxes.md "OAuth") ------------------------------------------


@dataclass(frozen=True)
class OAuthApp:
    """This server's client at an OAuth provider (Google, Microsoft): its credentials, the provider's
    endpoints, the scope and further parameters of the authorization request, and the callback URL."""

    client_id: str
    client_secret: str
    authorize_url: str
    token_url: str
    scope: str
    redirect_uri: str
    extra: Mapping[str, str] = field(default_factory=dict)


class OAuthRefused(Exception):
    """The token endpoint answered with an OAuth error (RFC 6749 section 5.2): `error` is its code
    (`invalid_grant`, `invalid_client` ...), never its description or a token."""

    def __init__(self, error: str) -> None:
        super().__init__(error)
        self.error = error


class OAuthUnavailable(Exception):
    """No usable answer from the token endpoint: no connection, a timeout, a 5xx, an unreadable body.
    `status` is the HTTP status when there was one; `kind` a short name of what failed (for logs)."""

    def __init__(self, kind: str, status: int | None = None) -> None:
        super().__init__(kind)
        self.kind = kind
        self.status = status


class OAuthClient(Protocol):
    """The authorization-code flow with PKCE (S256) and refreshes against a provider's endpoints, client
    credentials sent in the body (`client_secret_post`). Token answers are the endpoint's JSON object;
    failures raise `OAuthRefused` or `OAuthUnavailable`."""

    def authorization_url(self, app: OAuthApp, *, state: str, code_verifier: str) -> str:
        """The URL of the provider's authorization page for `state`, with the S256 challenge of
        `code_verifier`, the app's scope, callback and `extra` parameters (no request is made)."""
        ...

    async def exchange_code(self, app: OAuthApp, *, code: str, code_verifier: str) -> dict[str, Any]:
        """Trade an authorization code for tokens (grant `authorization_code`, with the PKCE verifier)."""
        ...

    async def refresh(self, app: OAuthApp, *, refresh_token: str) -> dict[str, Any]:
        """New tokens for a refresh token (grant `refresh_token`)."""
        ...


@dataclass
class Ports:
    """The adapters an operation may use. Fields are optional so each door wires only what it has."""

    clock: Clock = field(default_factory=SystemClock)
    dns: DnsResolver | None = None
    http: HttpClient | None = None
    mail: MailLogin | None = None
    smtp: MailSender | None = None
    imap: MailReader | None = None
    inbox: InboxConnector | None = None
    ai: AiChat | None = None
    ai_keys: AiKeys | None = None
    web: WebFetcher | None = None
    billing: BillingProvider | None = None
    warmup_mail: WarmupMail | None = None  # warmup (issue 32 item 1)
    tls: TlsProbe | None = None  # the link domain's TLS check
    oauth: OAuthClient | None = None  # Google and Microsoft mailboxes over OAuth (issue 32 item 3)
