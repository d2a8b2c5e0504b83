"""Which tracking hits are people's, and why the others are flagged (docs/tracking.md, "Scanners").

Pure. A hit is flagged, in this order:

- `head`: a HEAD request (link checkers and prefetchers ask for headers; a person's mail client or browser
  sends GET);
- `scanner`: the user agent names a security scanner, link checker, bot or HTTP library, or is missing, or
  the address is in `OUTREACH_TRACKING_SCANNER_NETWORKS`;
- `apple_privacy` (opens): Apple Mail Privacy Protection loads every image of every email through Apple's
  proxies whether or not the person reads it: its requests come from Apple's network (17.0.0.0/8) with the
  bare user agent `Mozilla/5.0`;
- `too_soon` (clicks): within `OUTREACH_TRACKING_SCANNER_WINDOW_S` seconds (default 10) of the email's
  hand-off to SMTP; receiving, opening, reading and clicking takes a person longer, and gateways (Microsoft
  Defender Safe Links, Proofpoint, Mimecast, Barracuda) follow every link on arrival, often with an
  ordinary browser's user agent.

Anything else counts as a person. Gmail's image proxy (`GoogleImageProxy`) fetches the pixel when the
person opens the email, so it counts.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

Flag = Literal["head", "scanner", "apple_privacy", "too_soon"]
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

_SCANNER_WORDS = (
    "bot/", "bot;", "bot)", "bot ", "crawler", "spider", "scanner", "preview", "checker", "validator",
    "monitor", "barracuda", "mimecast", "proofpoint", "ppops", "symantec", "messagelabs", "trendmicro",
    "trend micro", "forcepoint", "fireeye", "ironport", "sophos", "zscaler", "safelinks", "safe links",
    "urldefense", "cisco", "paloalto", "fortiguard", "bitdefender", "kaspersky", "python-", "python/",
    "aiohttp", "httpx", "curl/", "wget/", "go-http-client", "java/", "okhttp", "libwww", "apache-httpclient",
    "node-fetch", "axios", "headless", "phantomjs", "facebookexternalhit", "slackbot", "whatsapp",
    "skypeuripreview",
)  # fmt: skip
"""Lower-case parts of the user agents of scanners, link checkers, bots and HTTP libraries."""
APPLE_NETWORK = ipaddress.ip_network("17.0.0.0/8")
APPLE_PROXY_AGENT = "Mozilla/5.0"


@dataclass(frozen=True)
class Hit:
    """One request to a tracking link, as the server saw it."""

    kind: Literal["open", "click"]
    send_id: str
    at: dt.datetime
    url: str | None  # a click's target
    head: bool
    user_agent: str
    address: str | None  # the client's address (the proxy's, unless it forwards the client's)
    id: str | None = None  # its `tracking_events` row's id, given when it is journaled (replays skip it)


@lru_cache(maxsize=4096)
def is_scanner_agent(user_agent: str) -> bool:
    """A missing user agent, or one naming a scanner, link checker, bot or HTTP library (a word of
    `_SCANNER_WORDS`, or ending in `bot`)."""
    agent = user_agent.strip().lower()
    return not agent or agent.endswith("bot") or any(word in agent for word in _SCANNER_WORDS)


@lru_cache(maxsize=8)
def parse_networks(text: str) -> tuple[Network, ...]:
    """`OUTREACH_TRACKING_SCANNER_NETWORKS`: CIDRs, comma-separated (blank: none)."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in text.split(",") if part.strip())


def _in(address: str | None, networks: Sequence[Network]) -> bool:
    if not address or not networks:
        return False
    ip = _parsed(address)
    return ip is not None and any(ip in net for net in networks)


@lru_cache(maxsize=4096)
def _parsed(address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """A client's address, parsed once per address (each hit is checked against one or two networks)."""
    try:
        return ipaddress.ip_address(address)
    except ValueError:
        return None


def flag_of(
    hit: Hit, sent_at: dt.datetime | None, *, window_s: float, scanner_networks: Sequence[Network]
) -> Flag | None:
    """Why `hit` is not a person's (see the module docstring), or None when it counts as one."""
    if hit.head:
        return "head"
    if is_scanner_agent(hit.user_agent) or _in(hit.address, scanner_networks):
        return "scanner"
    if hit.kind == "open":
        if hit.user_agent.strip() == APPLE_PROXY_AGENT or _in(hit.address, (APPLE_NETWORK,)):
            return "apple_privacy"
        return None
    if sent_at is not None and (hit.at - sent_at).total_seconds() <= window_s:
        return "too_soon"
    return None
