"""Which URLs the server may fetch or post to (DESIGN section 7: private ranges are refused).

Pure checks, shared by the HTTP adapter (which also checks every address a host name resolves to) and by
operations that validate a URL when it is saved (webhooks, websites). `OUTREACH_ALLOW_PRIVATE_URLS=1`
turns the address checks off for tests and on-premises setups.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

_CGNAT = ipaddress.ip_network("100.64.0.0/10")
_LOCAL_NAMES = ("localhost", "localhost.localdomain")


def is_blocked_address(address: str) -> bool:
    """True for loopback, private, link-local, shared (CGNAT), multicast, reserved and unspecified
    addresses, IPv4-mapped or not. Not an IP address at all: False."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_loopback
        or ip.is_private
        or ip.is_link_local
        or ip.is_multicast
        or ip.is_reserved
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv4Address) and ip in _CGNAT)
    )


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why the server must not send a request to `url`, or None when it may (before name resolution).

    Only `http` and `https` with a host are accepted; unless `allow_private`, a host that is a private
    or loopback address, or a local name (`localhost`, `*.localhost`), is refused."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError for a port out of range
    except ValueError:
        return "not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "only http and https URLs are allowed"
    if not host:
        return "the URL has no host"
    if allow_private:
        return None
    name = host.rstrip(".").lower()
    if name in _LOCAL_NAMES or name.endswith(".localhost"):
        return "local host names are not allowed"
    if is_blocked_address(name):
        return "private and loopback addresses are not allowed"
    return None
