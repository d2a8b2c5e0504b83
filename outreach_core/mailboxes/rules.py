"""Pure mailbox rules: the ramp-up, today's sends, the sender's daily limit and gaps (shared by the sender and
the campaign forecast), and the provider catalogue used by detect (no I/O)."""

from __future__ import annotations

import functools
import math
import random
import zoneinfo
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal

# Defaults of a new mailbox (docs/mailboxes.md): a gentle ramp and a few minutes between sends.
DEFAULT_RAMP_ENABLED = True
DEFAULT_RAMP_START = 5
DEFAULT_RAMP_INCREMENT = 2
DEFAULT_MIN_GAP_S = 60
DEFAULT_MAX_GAP_S = 180
DEFAULT_TIMEZONE = "UTC"
IMPORT_CONCURRENCY = 10


@functools.lru_cache(maxsize=512)
def local_day(now: datetime, timezone: str) -> date:
    """The calendar day `now` falls on in `timezone` (UTC when the zone is unknown). Cached: a sending pass
    asks it three times for each of its mailboxes at one `now`, and mailboxes share a few zones."""
    try:
        zone: zoneinfo.ZoneInfo = zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        zone = zoneinfo.ZoneInfo("UTC")
    return now.astimezone(zone).date()


def ramp_day(started_on: str, today: date) -> int:
    """Day of the ramp: 1 on `started_on` (YYYY-MM-DD in the mailbox's zone), 2 the day after, ..."""
    return max(1, (today - date.fromisoformat(started_on)).days + 1)


def effective_limit(
    daily_limit: int, ramp_enabled: bool, ramp_start: int, ramp_increment: int, day: int
) -> int:
    """Today's limit: rampStart + rampIncrement * (rampDay - 1), never above dailyLimit; dailyLimit when the
    ramp is off."""
    if not ramp_enabled:
        return daily_limit
    return min(daily_limit, ramp_start + ramp_increment * (day - 1))


def ramp_days_left(
    daily_limit: int, ramp_enabled: bool, ramp_start: int, ramp_increment: int, day: int
) -> int:
    """Days until the ramp reaches dailyLimit: 0 when it is there already (or the ramp is off)."""
    if not ramp_enabled or ramp_start >= daily_limit:
        return 0
    days_to_reach = math.ceil((daily_limit - ramp_start) / ramp_increment)  # from day 1
    return max(0, days_to_reach - (day - 1))


def sent_today(sent_day: str | None, sent_count: int, today: date) -> int:
    """Sends counted today: the sender keeps (`sent_day`, `sent_count`) for the mailbox's current day."""
    return sent_count if sent_day == today.isoformat() else 0


# --- the sender's limits and gaps (used by the sender and by the campaign forecast) -------------------------


@dataclass(frozen=True)
class MailboxLimits:
    daily_limit: int
    ramp_enabled: bool
    ramp_start: int
    ramp_increment: int
    ramp_started_on: str
    timezone: str
    sent_day: str | None
    sent_count: int


def limit_on(m: MailboxLimits, day: date) -> int:
    """The mailbox's `effectiveLimit` on `day` (a day in its own time zone; ramp from `ramp_started_on`)."""
    return effective_limit(
        m.daily_limit, m.ramp_enabled, m.ramp_start, m.ramp_increment, ramp_day(m.ramp_started_on, day)
    )


def today_limit(m: MailboxLimits, now: datetime) -> int:
    """The mailbox's `effectiveLimit` today (its own time zone's day, ramp from `ramp_started_on`)."""
    return limit_on(m, local_day(now, m.timezone))


def sends_left(m: MailboxLimits, now: datetime) -> int:
    """How many more emails the mailbox may send today."""
    return max(0, today_limit(m, now) - sent_today(m.sent_day, m.sent_count, local_day(now, m.timezone)))


def next_local_midnight(now: datetime, timezone: str) -> datetime:
    """The start of the mailbox's next day, when a full mailbox may send again."""
    tz = _zone(timezone)
    tomorrow = now.astimezone(tz).date() + timedelta(days=1)
    return datetime.combine(tomorrow, time(), tzinfo=tz).astimezone(UTC)


def next_gap(min_gap_s: int, max_gap_s: int, rng: random.Random | None = None) -> timedelta:
    """A random wait between `minGapS` and `maxGapS` before the mailbox's next send."""
    low, high = min(min_gap_s, max_gap_s), max(min_gap_s, max_gap_s)
    return timedelta(seconds=(rng or random).uniform(low, high))


def mean_gap_s(min_gap_s: int, max_gap_s: int) -> float:
    """The average of `next_gap` (uniform between the two): how far apart a mailbox's sends are."""
    return (min_gap_s + max_gap_s) / 2


def _zone(timezone: str) -> zoneinfo.ZoneInfo:
    try:
        return zoneinfo.ZoneInfo(timezone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return zoneinfo.ZoneInfo("UTC")


# --- provider catalogue ------------------------------------------------------------------------------------

Security = Literal["tls", "starttls"]
DetectedProvider = Literal["google", "microsoft", "other", "none"]


@dataclass(frozen=True)
class KnownProvider:
    key: str
    provider: DetectedProvider
    label: str
    smtp: tuple[str, int, Security]
    imap: tuple[str, int, Security]
    hint: tuple[str, str] | None  # (text, url): where to make an app password
    domains: tuple[str, ...] = ()  # email domains served by it
    mx_suffixes: tuple[str, ...] = ()  # MX host suffixes of domains hosted by it


_GOOGLE_HINT = (
    "Turn on 2-Step Verification for the Google account, then create an app password for Mail and paste "
    "its 16 letters as the password.",
    "https://myaccount.google.com/apppasswords",
)

PROVIDERS: tuple[KnownProvider, ...] = (
    KnownProvider(
        "gmail",
        "google",
        "Gmail",
        ("smtp.gmail.com", 465, "tls"),
        ("imap.gmail.com", 993, "tls"),
        _GOOGLE_HINT,
        domains=("gmail.com", "googlemail.com"),
    ),
    KnownProvider(
        "google_workspace",
        "google",
        "Google Workspace",
        ("smtp.gmail.com", 465, "tls"),
        ("imap.gmail.com", 993, "tls"),
        _GOOGLE_HINT,
        mx_suffixes=("google.com", "googlemail.com"),
    ),
    KnownProvider(
        "outlook",
        "microsoft",
        "Outlook.com",
        ("smtp-mail.outlook.com", 587, "starttls"),
        ("outlook.office365.com", 993, "tls"),
        (
            "Turn on two-step verification for the Microsoft account, then create an app password.",
            "https://account.live.com/proofs/AppPassword",
        ),
        domains=("outlook.com", "hotmail.com", "live.com", "msn.com", "hotmail.co.uk", "outlook.de"),
    ),
    KnownProvider(
        "microsoft365",
        "microsoft",
        "Microsoft 365",
        ("smtp.office365.com", 587, "starttls"),
        ("outlook.office365.com", 993, "tls"),
        (
            "SMTP AUTH must be allowed for the mailbox by the Microsoft 365 admin; with multi-factor "
            "sign-in, create an app password under Security info.",
            "https://mysignins.microsoft.com/security-info",
        ),
        mx_suffixes=("mail.protection.outlook.com",),
    ),
    KnownProvider(
        "yahoo",
        "other",
        "Yahoo Mail",
        ("smtp.mail.yahoo.com", 465, "tls"),
        ("imap.mail.yahoo.com", 993, "tls"),
        ("Create an app password under Account security.", "https://login.yahoo.com/account/security"),
        domains=("yahoo.com", "ymail.com", "rocketmail.com", "yahoo.co.uk", "yahoo.fr", "yahoo.de"),
        mx_suffixes=("yahoodns.net",),
    ),
    KnownProvider(
        "aol",
        "other",
        "AOL Mail",
        ("smtp.aol.com", 465, "tls"),
        ("imap.aol.com", 993, "tls"),
        ("Create an app password under Account security.", "https://login.aol.com/account/security"),
        domains=("aol.com",),
    ),
    KnownProvider(
        "zoho",
        "other",
        "Zoho Mail",
        ("smtp.zoho.com", 465, "tls"),
        ("imap.zoho.com", 993, "tls"),
        (
            "With two-factor authentication on, create an application-specific password.",
            "https://accounts.zoho.com/home#security/app_password",
        ),
        domains=("zoho.com", "zohomail.com"),
        mx_suffixes=("zoho.com",),
    ),
    KnownProvider(
        "zoho_eu",
        "other",
        "Zoho Mail (EU)",
        ("smtp.zoho.eu", 465, "tls"),
        ("imap.zoho.eu", 993, "tls"),
        (
            "With two-factor authentication on, create an application-specific password.",
            "https://accounts.zoho.eu/home#security/app_password",
        ),
        domains=("zohomail.eu",),
        mx_suffixes=("zoho.eu",),
    ),
    KnownProvider(
        "icloud",
        "other",
        "iCloud Mail",
        ("smtp.mail.me.com", 587, "starttls"),
        ("imap.mail.me.com", 993, "tls"),
        (
            "Sign in to your Apple Account and create an app-specific password.",
            "https://account.apple.com/account/manage",
        ),
        domains=("icloud.com", "me.com", "mac.com"),
        mx_suffixes=("icloud.com",),
    ),
    KnownProvider(
        "fastmail",
        "other",
        "Fastmail",
        ("smtp.fastmail.com", 465, "tls"),
        ("imap.fastmail.com", 993, "tls"),
        (
            "Create an app password under Settings → Privacy & Security → Manage app passwords.",
            "https://app.fastmail.com/settings/security/apps",
        ),
        domains=("fastmail.com", "fastmail.fm"),
        mx_suffixes=("messagingengine.com",),
    ),
    KnownProvider(
        "godaddy",
        "other",
        "GoDaddy Workspace Email",
        ("smtpout.secureserver.net", 465, "tls"),
        ("imap.secureserver.net", 993, "tls"),
        None,
        mx_suffixes=("secureserver.net",),
    ),
    KnownProvider(
        "ionos",
        "other",
        "IONOS",
        ("smtp.ionos.com", 587, "starttls"),
        ("imap.ionos.com", 993, "tls"),
        None,
        mx_suffixes=("ionos.com", "ionos.de", "1and1.com", "kundenserver.de"),
    ),
    KnownProvider(
        "yandex",
        "other",
        "Yandex Mail",
        ("smtp.yandex.com", 465, "tls"),
        ("imap.yandex.com", 993, "tls"),
        ("Create an app password for Mail.", "https://id.yandex.com/security/app-passwords"),
        domains=("yandex.com", "yandex.ru", "ya.ru"),
        mx_suffixes=("yandex.net", "yandex.ru"),
    ),
    KnownProvider(
        "gmx",
        "other",
        "GMX",
        ("mail.gmx.com", 587, "starttls"),
        ("imap.gmx.com", 993, "tls"),
        None,
        domains=("gmx.com", "gmx.net", "gmx.de"),
        mx_suffixes=("gmx.net", "gmx.com"),
    ),
)

GMAIL = PROVIDERS[0]


def provider_by_domain(domain: str) -> KnownProvider | None:
    """A provider that serves addresses of `domain` itself (gmail.com, outlook.com, ...)."""
    return next((p for p in PROVIDERS if domain in p.domains), None)


def provider_by_mx(mx_hosts: list[str]) -> KnownProvider | None:
    """The provider hosting a domain, from its MX hosts (best preference first)."""
    for host in mx_hosts:
        host = host.rstrip(".").lower()
        for p in PROVIDERS:
            if any(host == s or host.endswith("." + s) for s in p.mx_suffixes):
                return p
    return None


def mx_hosts(answers: list[str]) -> list[str]:
    """MX answers as text (`"10 mx.example.com."`) to host names by preference; the null MX is dropped."""
    parsed: list[tuple[int, str]] = []
    for answer in answers:
        parts = answer.split()
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        host = parts[1].rstrip(".").lower()
        if host:
            parsed.append((int(parts[0]), host))
    return [host for _, host in sorted(parsed)]
