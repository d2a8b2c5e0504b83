"""Which hosts the server may connect to (DESIGN section 7: only globally routable addresses).

Pure checks, shared by the outgoing-connection guard (`outreach_app/outgoing.py`, which checks every address
a host name resolves to and connects to the one it checked) and by operations that validate a URL when it
is saved (webhooks, websites). `OUTREACH_ALLOW_PRIVATE_URLS=1` turns the address checks off for tests and
on-premises setups.

The rule is an allowlist: an address is accepted only when it is globally routable (`ipaddress`'s
`is_global`, plus the IANA special-purpose ranges older Python versions still call global), after
unwrapping the IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`
and 6to4 `2002::/16`): `::ffff:127.0.0.1` is loopback, whatever its spelling.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

ALLOW_PRIVATE_HINT = (
    "set OUTREACH_ALLOW_PRIVATE_URLS=1 to allow private and loopback servers (tests, on-premises)"
)
"""What a person can do about a refused address; every refusal names it."""

_LOCAL_NAMES = ("localhost", "localhost.localdomain")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
# Special-purpose ranges (IANA registries) that are not globally reachable but that `is_global` of some
# Python versions accepts (3.11 calls 192.0.0.8 global, for instance), and multicast, which it calls global.
_NOT_GLOBAL = tuple(
    ipaddress.ip_network(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",
        "192.0.0.0/24",
        "192.0.2.0/24",
        "192.88.99.0/24",
        "198.18.0.0/15",
        "198.51.100.0/24",
        "203.0.113.0/24",
        "224.0.0.0/3",
        "::/8",
        "64:ff9b:1::/48",
        "100::/64",
        "2001::/23",
        "2001:db8::/32",
        "3fff::/20",
        "5f00::/16",
        "fc00::/7",
        "fe80::/10",
        "ff00::/8",
    )
)
# Inside 192.0.0.0/24, two anycast addresses are global (RFC 7723 PCP, RFC 8155 TURN).
_GLOBAL_EXCEPTIONS = (ipaddress.ip_address("192.0.0.9"), ipaddress.ip_address("192.0.0.10"))


def parse_ip(text: str) -> IPAddress | None:
    """`text` as an IP address (IPv6 zone and URL brackets ignored), or None when it is not one."""
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def unwrap(ip: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 form carries (IPv4-mapped, NAT64 well-known prefix, 6to4), else `ip`."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour is not None:
            return ip.sixtofour
    return ip


def address_kind(ip: IPAddress) -> str | None:
    """None for a globally routable address; otherwise what it is ("loopback", "private" ...), in words."""
    ip = unwrap(ip)
    if ip.is_global and not any(ip in net for net in _NOT_GLOBAL if net.version == ip.version):
        return None
    if ip in _GLOBAL_EXCEPTIONS:
        return None
    if ip.is_loopback:
        return "loopback"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_link_local:
        return "link-local"
    if ip.is_multicast:
        return "multicast"
    if isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.ip_network("100.64.0.0/10"):
        return "shared (carrier-grade NAT)"
    if ip.is_private:
        return "private"
    return "reserved"


def is_blocked_address(address: str) -> bool:
    """True for every IP address that is not globally routable (loopback, private, link-local, shared,
    special-purpose, documentation, multicast, reserved, unspecified), in any IPv6 spelling. Not an IP
    address at all (a host name): False; names are checked once resolved."""
    ip = parse_ip(address)
    return ip is not None and address_kind(ip) is not None


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why the server must not send a request to `url`, or None when it may (before name resolution).

    Only `http` and `https` with a host are accepted; unless `allow_private`, a host that is a non-public
    address, or a local name (`localhost`, `*.localhost`), is refused."""
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
    if is_local_name(name):
        return "local host names are not allowed"
    if is_blocked_address(name):
        return "private and loopback addresses are not allowed"
    return None


def is_local_name(host: str) -> bool:
    """`localhost` and names under `.localhost` (RFC 6761: always the machine itself)."""
    name = host.rstrip(".").lower()
    return name in _LOCAL_NAMES or name.endswith(".localhost")
