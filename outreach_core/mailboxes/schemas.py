"""Wire models of mailboxes (spec: Mailbox resource and the Mailboxes endpoints; docs/mailboxes.md)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import (
    AfterValidator,
    ConfigDict,
    Field,
    SecretStr,
    StringConstraints,
    WithJsonSchema,
    model_validator,
)

from outreach_core.deliverability.schemas import MailboxDns
from outreach_core.kernel.urls import LOWERCASE_HOST_SCHEMA, normal_host
from outreach_core.kernel.wire import SINGLE_LINE, TIME_ZONE, EmailAddress, Omittable, Timestamp, WireModel

Provider = Literal["google_app", "google_oauth", "microsoft", "smtp"]
Status = Literal["active", "paused", "error", "quarantined"]
Security = Literal["tls", "starttls"]

GOOGLE_APP_PASSWORD_MAX = 64
DisplayName = Annotated[str, StringConstraints(max_length=120), SINGLE_LINE]  # the From name: a header


def _host_form(host: str) -> str:
    """A DNS name or an IPv4 address in dotted-decimal form; never a legacy numeric form such as 127.1 or
    2130706433 (`urls.normal_host`). Whether the server may connect to it is the login test's answer."""
    normal_host(host)
    return host


Host = Annotated[
    str,
    StringConstraints(min_length=1, max_length=253, pattern=r"^[a-z0-9.-]+$"),
    AfterValidator(_host_form),
    # the document states the whole rule (the pattern above lets through what `_host_form` refuses)
    WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 253, **LOWERCASE_HOST_SCHEMA}),
]
Port = Annotated[int, Field(ge=1, le=65535)]
User = Annotated[str, StringConstraints(min_length=1, max_length=320)]
Password = Annotated[SecretStr, Field(min_length=1, max_length=512)]
DailyLimit = Annotated[int, Field(ge=1, le=500)]


class ServerIn(WireModel):
    host: Host = Field(
        description="Server host name (lowercase letters, digits, dots and hyphens; each part between dots "
        "1 to 63 characters, not starting or ending with a hyphen), or an IPv4 address written a.b.c.d. "
        "Numeric forms such as 127.1 or 2130706433 are refused."
    )
    port: Port = Field(description="The server's port, e.g. 465 or 587 for SMTP, 993 or 143 for IMAP.")
    security: Security = Field(description="tls = implicit TLS (465, 993); starttls = upgrade (587, 143).")
    user: User = Field(description="Login name, usually the full email address.")


class ServerOut(WireModel):
    host: str
    port: int
    security: Security
    user: str


def _shapes(schema: dict[str, Any]) -> None:
    """The document shows the spec's two shapes; the model checks the same rules (`_one_shape`)."""
    schema["oneOf"] = [
        {
            "properties": {
                "provider": {"const": "google_app"},
                "password": {"maxLength": GOOGLE_APP_PASSWORD_MAX},
            },
            "not": {"anyOf": [{"required": ["smtp"]}, {"required": ["imap"]}]},
        },
        {"properties": {"provider": {"const": "smtp"}}, "required": ["smtp", "imap"]},
    ]


class CreateMailboxIn(WireModel):
    """Body of create_mailbox and test_mailbox: `google_app` (an app password; Gmail's servers are used) or
    `smtp` (your own SMTP and IMAP servers)."""

    model_config = ConfigDict(json_schema_extra=_shapes)

    provider: Literal["google_app", "smtp"] = Field(
        description="google_app: a Google account with an app password; smtp: any SMTP + IMAP servers."
    )
    email: EmailAddress = Field(description="The mailbox's email address.")
    password: Password = Field(
        description="The mailbox password (google_app: the 16-letter app password, at most 64 characters)."
    )
    smtp: Omittable[ServerIn] = Field(
        default=None, description="Required for provider smtp; not accepted for google_app."
    )
    imap: Omittable[ServerIn] = Field(
        default=None, description="Required for provider smtp; not accepted for google_app."
    )
    daily_limit: DailyLimit = Field(
        default=30,
        description=(
            "Most emails the mailbox sends a day, 1 to 500 (default 30); the ramp-up starts below it."
        ),
    )
    display_name: DisplayName | None = Field(default=None, description="Sender name shown to recipients.")

    @model_validator(mode="after")
    def _one_shape(self) -> Self:
        given = self.model_fields_set
        if self.provider == "google_app":
            extra = [name for name in ("smtp", "imap") if name in given]
            if extra:
                raise ValueError(f"{' and '.join(extra)} are not accepted for provider google_app")
            if len(self.password.get_secret_value()) > GOOGLE_APP_PASSWORD_MAX:
                raise ValueError(f"a google_app password has at most {GOOGLE_APP_PASSWORD_MAX} characters")
        elif self.smtp is None or self.imap is None:
            raise ValueError("provider smtp needs both smtp and imap settings")
        return self


class ImportMailboxRow(WireModel):
    email: EmailAddress = Field(description="The mailbox's email address.")
    display_name: DisplayName | None = Field(default=None, description="Sender name shown to recipients.")
    password: Password = Field(description="The mailbox password.")
    smtp: ServerIn = Field(description="The SMTP server that sends.")
    imap: ServerIn = Field(description="The IMAP server that reads replies.")
    daily_limit: DailyLimit = Field(
        default=30, description=("Most emails the mailbox sends a day, 1 to 500 (default 30).")
    )


class ImportMailboxesIn(WireModel):
    rows: list[ImportMailboxRow] = Field(
        min_length=1,
        max_length=200,
        description=(
            "The mailboxes to connect (1 to 200), each with its email, password, SMTP and IMAP servers."
        ),
    )


class LimitsIn(WireModel):
    """All six together; minGapS must not exceed maxGapS."""

    daily_limit: DailyLimit = Field(
        description=("Most emails the mailbox sends a day once ramped up, 1 to 500.")
    )
    ramp_enabled: bool = Field(description="true: start low and raise the daily limit day by day (warm-up).")
    ramp_start: int = Field(ge=1, le=500, description="Emails on the first day of the ramp, 1 to 500.")
    ramp_increment: int = Field(ge=1, le=100, description="Emails added each day of the ramp, 1 to 100.")
    min_gap_s: int = Field(
        ge=30, le=3600, description=("Fewest seconds between two emails of the mailbox, 30 to 3600.")
    )
    max_gap_s: int = Field(ge=30, le=7200, description="Not less than minGapS.")

    @model_validator(mode="after")
    def _gaps(self) -> Self:
        if self.min_gap_s > self.max_gap_s:
            raise ValueError("minGapS must not be greater than maxGapS")
        return self


class CredentialsIn(WireModel):
    password: Password = Field(description="The new password (for google_app the app password).")
    smtp: Omittable[ServerIn] = Field(
        default=None, description="New SMTP settings (smtp mailboxes only); the stored ones when absent."
    )
    imap: Omittable[ServerIn] = Field(
        default=None, description="New IMAP settings (smtp mailboxes only); the stored ones when absent."
    )


class WarmupIn(WireModel):
    """Warmup settings (docs/warmup.md); every field optional, the stored value kept when absent."""

    enabled: Omittable[bool] = Field(
        default=None,
        description="true: the mailbox joins the server's warmup pool and exchanges warmup emails with the "
        "other mailboxes in it; false: it leaves the pool.",
    )
    target: Omittable[int] = Field(
        default=None, ge=1, le=100, description="Warmup emails a day once the ramp is complete (default 20)."
    )
    ramp_start: Omittable[int] = Field(
        default=None, ge=1, le=50, description="Warmup emails on the first day (default 2)."
    )
    ramp_increment: Omittable[int] = Field(
        default=None, ge=1, le=20, description="Warmup emails added each day until target (default 2)."
    )
    reply_rate: Omittable[int] = Field(
        default=None,
        ge=0,
        le=100,
        description="Percent of the warmup emails it receives that it answers (default 30).",
    )


class UpdateMailboxIn(WireModel):
    display_name: DisplayName | None = Field(
        default=None, description=("Sender name shown to recipients; null clears it.")
    )
    signature: Annotated[str, StringConstraints(max_length=5000)] | None = Field(
        default=None, description=("The signature put into emails (up to 5,000 characters); null clears it.")
    )
    timezone: Omittable[Annotated[str, StringConstraints(min_length=1, max_length=64), TIME_ZONE]] = Field(
        default=None,
        description="IANA time zone, e.g. Europe/Berlin: the mailbox's day for limits. Case is corrected, "
        "and common abbreviations (EST) and whole-hour offsets (UTC+2) are accepted too.",
    )
    status: Omittable[Literal["active", "paused"]] = Field(
        default=None, description=("active: the mailbox sends; paused: it sends nothing.")
    )
    limits: Omittable[LimitsIn] = Field(
        default=None,
        description=(
            "Sending limits: dailyLimit, the ramp-up (rampEnabled, rampStart, rampIncrement) and the "
            "gap between emails (minGapS, maxGapS)."
        ),
    )
    restart_ramp: Omittable[bool] = Field(
        default=None, description="true: start the ramp again from day 1 today."
    )
    inbox_poll: Omittable[bool] = Field(
        default=None,
        description="true: read the inbox every 60 s instead of keeping an IMAP connection open.",
    )
    credentials: Omittable[CredentialsIn] = Field(
        default=None, description="New password (and servers); tested before anything is saved."
    )
    warmup: Omittable[WarmupIn] = Field(
        default=None,
        description="Warmup: {enabled, target, rampStart, rampIncrement, replyRate}, each optional.",
    )


class DetectQuery(WireModel):
    email: EmailAddress = Field(description="The email address to connect.")


# --- responses ---------------------------------------------------------------------------------------------


class SendingIp(WireModel):
    route: Literal["direct", "shared", "dedicated", "own", "waiting"]
    country: str | None = None
    ip: str | None = None


class Warmup(WireModel):
    enabled: bool = False
    score: float | None = Field(
        default=None,
        description="Share of its warmup emails that landed in the inbox over 7 days (0 to 100); null until "
        "at least 10 of them were found or went missing.",
    )
    sent_today: int = Field(default=0, description="Warmup emails (and warmup replies) sent today.")
    target_today: int = Field(default=0, description="Warmup emails planned today, on the warmup ramp.")
    target: int = 0
    ramp_start: int = 0
    ramp_increment: int = 0
    reply_rate: float = Field(default=0, description="Percent of received warmup emails it answers.")
    reason: str | None = Field(
        default=None,
        description="Why warmup is not sending (the pool has no other mailbox, the mailbox is not active, "
        "it was removed from the pool because warmup emails to it bounced); null while it runs.",
    )


class Mailbox(WireModel):
    id: str
    email: str
    domain: str
    display_name: str | None
    provider: Provider
    status: Status
    status_reason: str | None
    daily_limit: int
    effective_limit: int = Field(description="Today's limit after the ramp-up.")
    ramp_enabled: bool
    ramp_start: int
    ramp_increment: int
    ramp_day: int = Field(description="Day of the ramp, from 1.")
    ramp_days_left: int = Field(description="Days until the ramp reaches dailyLimit (0 once there).")
    sent_today: int = Field(description="Emails sent today, in the mailbox's time zone.")
    min_gap_s: int
    max_gap_s: int
    timezone: str
    signature: str | None
    smtp: ServerOut | None
    imap: ServerOut | None
    last_tested_at: Timestamp | None
    last_synced_at: Timestamp | None
    sync_error: str | None
    inbox_poll: bool
    sending_ip: SendingIp
    warmup: Warmup
    created_at: Timestamp
    dns: MailboxDns | None


class MailboxList(WireModel):
    mailboxes: list[Mailbox] = Field(description="Every mailbox of the workspace, oldest first.")
    microsoft_enabled: bool = Field(
        description="Whether Microsoft 365 mailboxes can connect with OAuth here."
    )
    slots_left: int | None = Field(description="Mailboxes the plan still allows; null = no limit.")


class LoginTest(WireModel):
    ok: bool = Field(description="true when both logins passed.")
    smtp: str | None = Field(description="Why the SMTP login failed; null when it passed.")
    imap: str | None = Field(description="Why the IMAP login failed; null when it passed.")


class CreateMailboxOut(WireModel):
    mailbox: Mailbox | None = Field(description="The saved mailbox; null when a login failed.")
    test: LoginTest
    waiting: bool = Field(
        description="true: saved and tested, but no sending IP has room yet; it starts sending when one "
        "has (the server's operator adds sending IPs). Always false on a server without sending IPs."
    )


class ImportResult(WireModel):
    email: str
    status: Literal["added", "exists", "failed", "skipped"]
    error: str | None = None


class ImportMailboxesOut(WireModel):
    added: int
    results: list[ImportResult] = Field(description="One per row, in the order given.")


class UpdateMailboxOut(WireModel):
    mailbox: Mailbox
    test: LoginTest | None = Field(
        default=None, description="The test of new credentials; when ok is false nothing was changed."
    )


class RetestOut(WireModel):
    ok: bool
    error: str | None = None


class ServerSettings(WireModel):
    host: str
    port: int
    security: Security


class PasswordHint(WireModel):
    text: str
    url: str


class DetectOut(WireModel):
    domain: str
    provider: Literal["google", "microsoft", "other", "none"]
    provider_label: str
    smtp: ServerSettings | None
    imap: ServerSettings | None
    password_hint: PasswordHint | None


# --- Google and Microsoft mailboxes over OAuth (issue 32 item 3) --------------------------------------------


class StartMailboxOAuthIn(WireModel):
    provider: Literal["google_oauth", "microsoft"] = Field(
        description="google_oauth: a Google account (Gmail, Google Workspace); microsoft: Microsoft 365 / "
        "Outlook (only when GET /mailboxes says microsoftEnabled)."
    )


class MailboxOAuthUrl(WireModel):
    url: str = Field(description="Open this URL in a browser and sign in; the mailbox is saved afterwards.")
