"""Runtime configuration, read from `OUTREACH_*` environment variables (DESIGN section 3)."""

from __future__ import annotations

import hashlib
import os
import secrets
import threading
import time
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict
from sqlalchemy.engine import make_url

from outreach_core.kernel.urls import url_problem

DEFAULT_DATABASE_URL = "sqlite+aiosqlite:///./outreach.db"
DEFAULT_PORT = 8000
KEY_FILE_NAME = ".outreach-secret-key"
_LOOPBACK_NAMES = {"localhost": "localhost", "::1": "[::1]", "127.0.0.1": "127.0.0.1"}


class ConfigurationError(RuntimeError):
    """The machine or the settings cannot run the service as configured; the message says what to set.
    The CLI prints it in one line (exit 2) instead of a traceback."""


class Settings(BaseSettings):
    """Every knob of the service. All optional; defaults give a working local SQLite server."""

    # `./.env` (the working directory's) is read when present; environment variables win over it.
    model_config = SettingsConfigDict(
        env_prefix="OUTREACH_", extra="ignore", env_file=".env", env_file_encoding="utf-8"
    )

    database_url: str = DEFAULT_DATABASE_URL
    secret_key: str | None = None
    # Earlier secret keys (comma-separated), still accepted after a rotation to decrypt stored mailbox
    # passwords and to verify signed tokens (unsubscribe links, consent requests); new values are always
    # encrypted and signed with `secret_key`. See docs/mailboxes.md.
    secret_key_previous: str | None = None
    # Without a configured value, `outreach serve` derives it from --host/--port (`served_at`).
    public_url: str = f"http://127.0.0.1:{DEFAULT_PORT}"
    dns_nameservers: str | None = None
    tls_ca_file: str | None = None
    allow_private_urls: bool = False
    link_target: str | None = None
    # Billing (docs/billing.md): `local` (plans set by the operator or on the service's own checkout page) or
    # `stripe` (OUTREACH_STRIPE_API_KEY, OUTREACH_STRIPE_WEBHOOK_SECRET; OUTREACH_STRIPE_API_BASE for tests).
    billing: Literal["local", "stripe"] = "local"
    stripe_api_key: str | None = None
    stripe_webhook_secret: str | None = None
    stripe_api_base: str | None = None
    stripe_timeout_s: float = Field(default=20.0, gt=0, le=120)
    ai_provider: str | None = None
    ai_api_key: str | None = None
    ai_base_url: str | None = None
    # The AI port (docs/inbox.md, "AI labels"): an OpenAI-compatible Chat Completions endpoint at
    # `{ai_base_url}/chat/completions`; one request as a whole may take `ai_timeout_s`.
    ai_model: str | None = None
    ai_timeout_s: float = Field(default=20.0, gt=0, le=300)
    # A workspace's own AI key (PUT /settings/ai-key) is used with its provider's OpenAI-compatible endpoint
    # and model (docs/writing.md); the base URLs are settings so tests and proxies can point elsewhere.
    ai_openai_base_url: str = "https://api.openai.com/v1"
    ai_openai_model: str = "gpt-4o-mini"
    ai_google_base_url: str = "https://generativelanguage.googleapis.com/v1beta/openai"
    ai_google_model: str = "gemini-2.0-flash"

    # Website fetches for the offer draft (docs/onboarding.md): the whole fetch, redirects included, and the
    # largest page read.
    web_timeout_s: float = Field(default=10.0, gt=0, le=120)
    web_max_bytes: int = Field(default=2 * 1024 * 1024, ge=64 * 1024, le=64 * 1024 * 1024)

    # Email verifier API (optional; without it only local checks run). See docs/verification.md.
    verifier_url: str | None = None
    verifier_api_key: str | None = None
    verifier_timeout_s: float = Field(default=10.0, gt=0, le=120)

    # Mailbox login tests (SMTP AUTH and IMAP LOGIN): the whole exchange of one login, per server.
    mail_login_timeout_s: float = Field(default=10.0, gt=0, le=120)

    # The sender worker (docs/sending.md): one SMTP hand-off as a whole; a ledger row still `sending` after
    # `sender_stale_after_s` is a hand-off lost in a crash and becomes `unknown` (never repeated).
    sender_smtp_timeout_s: float = Field(default=60.0, gt=0, le=600)
    sender_stale_after_s: float = Field(default=600.0, gt=0)
    sender_batch_mailboxes: int = Field(default=1000, ge=1, le=10_000)
    sender_concurrency: int = Field(default=50, ge=1, le=1000)
    # a mailbox that found nothing to send is looked at again after this long (0 = every pass)
    sender_idle_nap_s: float = Field(default=30.0, ge=0)

    # Webhook delivery (docs/webhooks.md): one POST as a whole; the delays between attempts of one delivery
    # (seconds, comma-separated: 9 retries over about 28 hours by default; each delay gets +-20 % jitter);
    # how many POSTs one worker process runs at once for one endpoint.
    webhook_timeout_s: float = Field(default=10.0, gt=0, le=60)
    webhook_retry_schedule: str = "30,120,600,1800,3600,7200,14400,28800,43200"
    webhook_concurrency_per_endpoint: int = Field(default=4, ge=1, le=64)

    # The inbox worker (docs/inbox.md, "The inbox worker"): seconds between polls (mailboxes with inboxPoll on
    # or servers without IDLE) and the longest IDLE before the junk folder is looked at and IDLE renewed; one
    # IMAP step; how much of one message is fetched; messages per batch (one transaction each); how long a
    # worker process holds a mailbox without renewing (another process takes it over after that); at most
    # this many mailboxes per worker process.
    inbox_poll_s: float = Field(default=60.0, gt=0, le=1500)
    inbox_timeout_s: float = Field(default=30.0, gt=0, le=600)
    inbox_fetch_max_bytes: int = Field(default=2 * 1024 * 1024, ge=64 * 1024, le=64 * 1024 * 1024)
    inbox_batch_size: int = Field(default=25, ge=1, le=1000)
    inbox_lease_s: float = Field(default=60.0, ge=1, le=3600)
    inbox_max_mailboxes: int = Field(default=1000, ge=1, le=100_000)

    # Warmup pool (issue 32 item 1, docs/warmup.md): mailboxes sending a warmup email per pass at most
    # (`warmup_batch`, up to `warmup_concurrency` hand-offs at once); at least `warmup_min_gap_s` between
    # two warmup emails of a mailbox; a recipient's folders are looked at over IMAP for warmup emails sent
    # at least `warmup_tend_after_s` ago, at most every `warmup_tend_interval_s` per mailbox.
    warmup_batch: int = Field(
        default=200,
        ge=1,
        le=10_000,
        description="Mailboxes sending a warmup email in one warmup pass, at most.",
    )
    warmup_concurrency: int = Field(
        default=20, ge=1, le=1000, description="Warmup emails handed to SMTP at once, at most."
    )
    warmup_min_gap_s: float = Field(
        default=300.0, ge=0, description="Seconds between two warmup emails of one mailbox, at least."
    )
    warmup_tend_after_s: float = Field(
        default=60.0, ge=0, description="Seconds after sending before the recipient's folders are looked at."
    )
    warmup_tend_interval_s: float = Field(
        default=300.0, ge=0, description="Seconds between two looks at one recipient's folders, at least."
    )

    # Google and Microsoft mailboxes over OAuth (issue 32 item 3, docs/mailboxes.md "OAuth"): a provider is
    # offered when its client id and secret are set; `*_auth_base` replaces the provider's endpoint base
    # (tests); `oauth_smtp` / `oauth_imap` (host:port:security) replace Gmail's and Office 365's mail servers
    # for both (tests); access tokens are refreshed `oauth_refresh_ahead_s` before they expire.
    google_client_id: str = Field(
        default="", description="Google OAuth client id: enables google_oauth mailboxes."
    )
    google_client_secret: str = Field(default="", description="Google OAuth client secret.")
    google_auth_base: str = Field(
        default="", description="Replaces Google's OAuth endpoints' base URL (tests); empty: Google's own."
    )
    microsoft_client_id: str = Field(
        default="", description="Microsoft OAuth client id: enables microsoft mailboxes (microsoftEnabled)."
    )
    microsoft_client_secret: str = Field(default="", description="Microsoft OAuth client secret.")
    microsoft_auth_base: str = Field(
        default="",
        description="Replaces Microsoft's OAuth endpoints' base URL (tests); empty: Microsoft's own.",
    )
    microsoft_tenant: str = Field(
        default="common", description="The Microsoft Entra tenant in the OAuth URLs (common: any account)."
    )
    oauth_smtp: str = Field(
        default="", description="host:port:security replacing Gmail's and Office 365's SMTP servers (tests)."
    )
    oauth_imap: str = Field(
        default="", description="host:port:security replacing Gmail's and Office 365's IMAP servers (tests)."
    )
    oauth_refresh_ahead_s: float = Field(
        default=300.0, ge=0, le=3000, description="Seconds before expiry an OAuth access token is refreshed."
    )
    oauth_http_timeout_s: float = Field(
        default=20.0,
        gt=0,
        le=120,
        description="Seconds an OAuth provider's token endpoint may take to answer.",
    )

    # Imports (docs/leads.md, "Import"): an import whose final chunk has not come this many seconds after its
    # last chunk ends `failed` (its stored rows stay).
    import_abandon_s: float = Field(default=3600.0, ge=1, le=30 * 86400)

    # Deliverability (docs/deliverability.md, issue 27): blocklist zones asked for the MX hosts' addresses
    # (DNSBL) and for the domain itself (DBL), comma-separated; the RDAP URL with `{domain}` for the domain's
    # age (unset: not checked); one DNS question of a domain check, and the RDAP request, as a whole.
    dnsbl_zones: str | None = Field(
        default=None,
        description="DNS blocklist zones for mail servers' IPs, comma-separated (zen.spamhaus.org).",
    )
    dbl_zones: str | None = Field(
        default=None, description="Domain blocklist zones, comma-separated (e.g. dbl.spamhaus.org)."
    )
    rdap_url: str | None = Field(
        default=None,
        description="RDAP URL with {domain} for the domain age check; unset: that check is info.",
    )
    domain_check_dns_timeout_s: float = Field(
        default=2.0, gt=0, le=30, description="Seconds each DNS question of a domain check may take."
    )
    domain_check_rdap_timeout_s: float = Field(
        default=5.0, gt=0, le=60, description="Seconds the RDAP request of a domain check may take."
    )
    # Link domain (docs/link-domain.md): the TLS handshake that makes a link domain active goes to
    # <host>:link_tls_port (the reverse proxy, e.g. Caddy with on-demand TLS); one DNS + TLS check as a whole
    # may take link_check_timeout_s; with link_domain_required an active link domain is a required launch
    # checklist item; the host gate reads the link domains of every workspace at most every link_host_cache_s.
    link_tls_port: int = Field(
        default=443, ge=1, le=65535, description="The port a link domain's TLS handshake is checked on."
    )
    link_check_timeout_s: float = Field(
        default=10.0, gt=0, le=120, description="Seconds one DNS and TLS check of a link domain may take."
    )
    link_domain_required: bool = Field(
        default=False, description="An active link domain is a required launch checklist item."
    )
    link_host_cache_s: float = Field(
        default=5.0, ge=0, le=3600, description="Seconds the link domains' host names are kept in memory."
    )
    # MCP tool sets (issue 30; docs/mcp.md, "Tool sets"): the comma-separated set names the MCP server lists
    # and allows (empty: every set), and read-only mode (only read-only tools).
    mcp_toolsets: str = Field(
        default="",
        description="MCP tool sets listed and allowed, comma-separated (leads,campaigns,...); empty: all.",
    )
    mcp_read_only: bool = Field(default=False, description="MCP lists and allows only read-only tools.")

    # Protection (generous defaults; see docs/protection.md).
    rate_limit_per_minute: int = Field(default=1200, ge=1)
    rate_limit_burst: int = Field(default=300, ge=1)
    max_request_bytes: int = Field(default=16 * 1024 * 1024, ge=1024)
    log_level: str = "INFO"
    # JSON lines for log collectors; unset: JSON unless stderr is a terminal (then a readable format).
    log_json: bool | None = None

    # Click and open tracking (docs/tracking.md): a click this many seconds or less after the email was
    # handed to SMTP is a security scanner's, not a person's; networks (CIDRs, comma-separated) whose requests
    # are scanners'; how long a tracking request waits for its hit to be committed before it answers anyway
    # (the hit stays queued); how long the recorder gathers hits into one transaction; the most hits kept in
    # memory while the database is unreachable.
    tracking_scanner_window_s: float = Field(
        default=10.0,
        ge=0,
        le=3600,
        description="A click this many seconds after the hand-off is a scanner's.",
    )
    tracking_scanner_networks: str = Field(
        default="", description="CIDRs (comma-separated) whose tracking requests are scanners', not people."
    )
    tracking_commit_wait_ms: float = Field(
        default=50.0,
        ge=0,
        le=10_000,
        description="Without a journal, how long a tracking request waits for its commit.",
    )
    tracking_batch_ms: float = Field(
        default=10.0, ge=0, le=1000, description="Milliseconds tracking hits are gathered per transaction."
    )
    tracking_max_queued: int = Field(
        default=100_000,
        ge=100,
        description="Tracking hits kept in memory while the database cannot be written.",
    )
    # Where each server process journals its hits before answering (`auto`: a directory `tracking-journal`
    # beside a SQLite database; with PostgreSQL one per database in the server's state directory,
    # `tracking_journal_dir`; `off`: none, requests wait for the commit instead).
    tracking_journal: str = Field(
        default="auto",
        description="Where tracking hits are journaled before the answer: auto (beside a SQLite database; "
        "with PostgreSQL, $XDG_STATE_HOME/outreach/tracking-journal/<database>, ~/.local/state without "
        "XDG_STATE_HOME), a directory, or off.",
    )

    # OAuth token lifetimes.
    oauth_access_ttl_s: int = Field(default=3600, ge=60)
    oauth_refresh_ttl_s: int = Field(default=60 * 24 * 3600, ge=3600)
    # Anonymous dynamic client registration (docs/oauth.md): registrations per client address per hour,
    # and how long a client that never completed a grant is kept.
    oauth_registrations_per_hour: int = Field(default=20, ge=1)
    oauth_unused_client_ttl_s: int = Field(default=24 * 3600, ge=60)

    # Self-hosting kit (issue 30): `GET /metrics` needs `Authorization: Bearer <token>` when this is set.
    metrics_token: str | None = None

    @field_validator("database_url")
    @classmethod
    def _async_driver(cls, v: str) -> str:
        return normalise_database_url(v)

    @field_validator("google_auth_base", "microsoft_auth_base")
    @classmethod
    def _auth_base(cls, v: str) -> str:
        """An OAuth endpoint base the operator set: refused at start-up unless it is an http(s) URL with a
        host, rather than failing the first time a user connects a mailbox."""
        if v.strip():
            problem = url_problem(v.strip(), allow_private=True)
            if problem is not None:
                raise ValueError(f"{v!r} cannot be used: {problem}")
        return v.strip()

    @field_validator("oauth_smtp", "oauth_imap")
    @classmethod
    def _mail_server(cls, v: str) -> str:
        parse_mail_server(v)
        return v

    @field_validator("webhook_retry_schedule")
    @classmethod
    def _retry_schedule(cls, v: str) -> str:
        parse_retry_schedule(v)
        return v

    @property
    def webhook_retry_delays(self) -> list[float]:
        """`webhook_retry_schedule` as seconds: the wait before the 2nd, 3rd ... attempt."""
        return parse_retry_schedule(self.webhook_retry_schedule)

    @model_validator(mode="after")
    def _verifier_url_allowed(self) -> Self:
        """The verifier API is an outgoing URL like any other (docs/protection.md): refused at start-up when
        every request to it would be refused."""
        if self.verifier_url and self.verifier_url.strip():
            problem = url_problem(self.verifier_url.strip(), allow_private=self.allow_private_urls)
            if problem is not None:
                raise ValueError(f"OUTREACH_VERIFIER_URL cannot be used: {problem}")
        return self

    @property
    def mcp_toolset_names(self) -> list[str] | None:
        """`mcp_toolsets` as names; None means every set."""
        names = [n.strip() for n in self.mcp_toolsets.split(",") if n.strip()]
        return names or None

    @field_validator("public_url")
    @classmethod
    def _strip_slash(cls, v: str) -> str:
        return v.rstrip("/")

    @property
    def public_url_configured(self) -> bool:
        """Whether OUTREACH_PUBLIC_URL (or an explicit `public_url`) was given."""
        return "public_url" in self.model_fields_set

    def served_at(self, host: str, port: int) -> Settings:
        """These settings for a server bound to `host`:`port`.

        A configured public URL is kept. Otherwise it becomes `http://<host>:<port>` for a loopback host
        (127.0.0.1, localhost, ::1) and `http://127.0.0.1:<port>` for any other (0.0.0.0, ::, a LAN
        address): OAuth accepts plain http only on loopback, so a server reached from elsewhere needs
        OUTREACH_PUBLIC_URL=https://... anyway (docs/oauth.md).
        """
        if self.public_url_configured:
            return self
        public_host = _LOOPBACK_NAMES.get(host.strip("[]").lower(), "127.0.0.1")
        return self.model_copy(update={"public_url": f"http://{public_host}:{port}"})

    @property
    def tracking_journal_dir(self) -> Path | None:
        """The directory of the tracking journal (docs/tracking.md), or None when there is none.

        `auto`: `tracking-journal` beside a SQLite database (none for an in-memory one); with another engine,
        `<state home>/tracking-journal/<16 hex digits>`, the digits those of the SHA-256 of the database URL
        without its password, so that the servers of two databases on one machine never replay each
        other's hits, and a changed password keeps the directory."""
        if self.tracking_journal == "off":
            return None
        if self.tracking_journal != "auto":
            return Path(self.tracking_journal)
        if self.is_sqlite:
            database = sqlite_path(self.database_url)
            return database.parent / "tracking-journal" if database is not None else None
        return state_home() / "tracking-journal" / database_digest(self.database_url)

    @property
    def is_sqlite(self) -> bool:
        return self.database_url.startswith("sqlite")

    @property
    def mcp_resource_url(self) -> str:
        """The RFC 8707 resource identifier of the MCP endpoint; OAuth tokens are bound to it."""
        return f"{self.public_url}/mcp"

    def resolved_secret_key(self) -> str:
        """The secret used to sign and encrypt.

        With SQLite and no explicit key, one is generated once and stored beside the database file so
        restarts keep decrypting what was stored (`generated_secret_key`: read once per process, created
        atomically). PostgreSQL deployments must set it explicitly.
        """
        if self.secret_key:
            return self.secret_key
        if not self.is_sqlite:
            raise ConfigurationError("OUTREACH_SECRET_KEY is required with PostgreSQL")
        path = sqlite_path(self.database_url)
        return generated_secret_key((path.parent if path else Path.cwd()) / KEY_FILE_NAME)

    def previous_secret_keys(self) -> list[str]:
        """Earlier secret keys from `OUTREACH_SECRET_KEY_PREVIOUS`, newest first."""
        return [k.strip() for k in (self.secret_key_previous or "").split(",") if k.strip()]

    def signing_keys(self) -> list[str]:
        """The keys signed tokens are verified against: the current one (which signs), then earlier ones."""
        return [self.resolved_secret_key(), *self.previous_secret_keys()]


_generated_keys: dict[Path, str] = {}
_generated_keys_lock = threading.Lock()


def generated_secret_key(key_file: Path) -> str:
    """The secret stored in `key_file`, created there first when there is none.

    Read once per process and kept: it signs every link of every email the sender builds and decrypts every
    stored password, so it must neither cost a file read each time nor change under a running process.
    Created atomically, so processes starting together on a new database (`outreach serve` beside
    `outreach worker`) all end with the same key: each writes a complete candidate to a file of its own,
    links it to `key_file` (an exclusive create: it fails when the name exists), then reads back whichever
    candidate won.
    """
    with _generated_keys_lock:
        key = _generated_keys.get(key_file)
        if key is None:
            key = _generated_keys[key_file] = _read_or_create_key(key_file)
        return key


def _read_or_create_key(key_file: Path) -> str:
    if not key_file.exists():
        key_file.parent.mkdir(parents=True, exist_ok=True)
        candidate = key_file.with_name(f"{key_file.name}.{os.getpid()}.{secrets.token_hex(8)}")
        fd = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_urlsafe(48))
                out.flush()
                os.fsync(out.fileno())
            try:
                os.link(candidate, key_file)
            except FileExistsError:
                pass  # another process won: its key is the one read back below
            except OSError:
                # no hard links on this file system: create the name itself exclusively (a reader may
                # then see it empty for a moment, which _read_key waits out)
                _create_exclusively(key_file, candidate.read_text())
        finally:
            candidate.unlink(missing_ok=True)
    return _read_key(key_file)


def _create_exclusively(key_file: Path, key: str) -> None:
    try:
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as out:
        out.write(key)
        out.flush()
        os.fsync(out.fileno())


def _read_key(key_file: Path) -> str:
    deadline = time.monotonic() + 2.0
    while not (key := key_file.read_text().strip()):
        if time.monotonic() > deadline:
            raise ConfigurationError(f"{key_file} is empty: delete it or set OUTREACH_SECRET_KEY")
        time.sleep(0.01)
    return key


def parse_mail_server(value: str) -> tuple[str, int, Literal["tls", "starttls"]] | None:
    """`host:port:security` (security `tls` or `starttls`) as a tuple; None for an empty value."""
    if not value.strip():
        return None
    host, _, rest = value.strip().rpartition(":")
    host, _, port = host.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or rest not in ("tls", "starttls"):
        raise ValueError(f"{value!r} is not host:port:security (security tls or starttls)")
    return host, int(port), "tls" if rest == "tls" else "starttls"


def state_home() -> Path:
    """The directory of this machine's local state of the service (import progress, tracking journals):
    `$XDG_STATE_HOME/outreach`, else `~/.local/state/outreach` (an XDG_STATE_HOME that is not absolute is
    ignored, as the XDG base directory specification says)."""
    base = os.environ.get("XDG_STATE_HOME", "")
    if os.path.isabs(base):
        return Path(base) / "outreach"
    try:
        home = Path.home()
    except RuntimeError:  # HOME unset and no passwd entry: a container run as an arbitrary uid
        raise ConfigurationError(
            "no home directory for this user (HOME is unset and the user has no passwd entry): "
            "set XDG_STATE_HOME (or HOME) to a writable absolute directory for the service's local state"
        ) from None
    return home / ".local" / "state" / "outreach"


def database_digest(url: str) -> str:
    """16 hex digits naming a database: of the SHA-256 of its URL without the password."""
    public = make_url(url)._replace(password=None).render_as_string(hide_password=False)
    return hashlib.sha256(public.encode()).hexdigest()[:16]


def sqlite_path(url: str) -> Path | None:
    """The absolute file of a SQLite database URL; None for an in-memory database or another engine."""
    return _resolved(sqlite_file(url))


def sqlite_file(url: str) -> str | None:
    """The file of a SQLite database URL as written in it (`./outreach.db`); None when there is none."""
    if not url.startswith("sqlite"):
        return None
    marker = ":///"
    if marker not in url:
        return None
    rest = url.split(marker, 1)[1].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return rest


def _resolved(file: str | None) -> Path | None:
    return Path(file).resolve() if file is not None else None


_ASYNC_SCHEMES = {
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "postgresql+asyncpg": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
    "sqlite+aiosqlite": "sqlite+aiosqlite",
}


def normalise_database_url(url: str) -> str:
    """A database URL with the async driver the service runs on (self-hosting kit, issue 30).

    `postgresql://`, `postgres://` (as hosting providers write them) become `postgresql+asyncpg://`, and
    `sqlite://` becomes `sqlite+aiosqlite://`; any other scheme or driver is refused with a one-line reason
    (a ValueError, which the CLI prints as one line).
    """
    url = url.strip()
    scheme, sep, rest = url.partition("://")
    if not sep:
        raise ValueError(
            f"not a database URL: {url[:40]!r}; use postgresql://USER:PASSWORD@HOST/DB or sqlite:///FILE"
        )
    driver = _ASYNC_SCHEMES.get(scheme.lower())
    if driver is None:
        raise ValueError(
            f"unsupported database URL scheme {scheme!r}: use postgresql:// (or postgresql+asyncpg://) "
            "or sqlite:// (or sqlite+aiosqlite://)"
        )
    return f"{driver}://{rest}"


def parse_retry_schedule(text: str) -> list[float]:
    """`"30,120,600"` -> `[30.0, 120.0, 600.0]`; an empty text means no retries. Each delay is a number of
    seconds, at least 0 and at most 7 days; at most 30 of them."""
    delays: list[float] = []
    for part in text.split(","):
        if not part.strip():
            continue
        try:
            delay = float(part)
        except ValueError:
            raise ValueError(f"not a number of seconds: {part.strip()!r}") from None
        if not 0 <= delay <= 7 * 86400:
            raise ValueError(f"a retry delay must be between 0 and 604800 seconds, got {part.strip()}")
        delays.append(delay)
    if len(delays) > 30:
        raise ValueError(f"at most 30 retries, got {len(delays)}")
    return delays
