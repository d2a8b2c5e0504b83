"""Which hosts the server may connect to (DESIGN section 7: only globally routable addresses), in one place.

`host_problem` is the one check of a host the server is asked to connect to, whatever asks: a webhook URL
or a website when it is saved (`url_problem`), a mailbox's SMTP and IMAP servers, the verifier API, and
again at every connection (`outreach_app/outgoing.py`, which also checks every address a name resolves to
and connects to the one it checked). Fetchers still to come (RDAP, websites) call `url_problem` /
`host_problem` and connect through `outreach_app/outgoing.py`; they need nothing of their own.

The host is judged as a client connects to it, not as it was typed (`normal_host`): URL libraries map a host
through IDNA/UTS-46 (the URL standard; aiohttp's yarl does it), so 127.0.0.1 written in full-width or
circled digits, or with ideographic full stops (U+3002), is 127.0.0.1 to them. Such Unicode spellings of an
address, and the legacy numeric forms the system resolver still reads as IPv4 (`2130706433`, `0x7f.0.0.1`,
`127.1`, `0177.0.0.1`), are refused outright: a host is a DNS name of letters, digits and hyphens
(international names allowed, as their A-labels) or an IP address written the standard way. Unless private
URLs are allowed, a name must also be registrable (under a public suffix such as `.com` or `.co.uk`) and not
local.

The address rule is an allowlist: an address is accepted only when it is globally routable (`ipaddress`'s
`is_global`, plus the IANA special-purpose ranges older Python versions still call global), after
unwrapping the IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`
and 6to4 `2002::/16`): `::ffff:127.0.0.1` is loopback, whatever its spelling.
`OUTREACH_ALLOW_PRIVATE_URLS=1` lifts the rules that name it (addresses, local and non-public names) for
tests and on-premises setups; the form of a host is checked whatever the setting.
"""

from __future__ import annotations

import ipaddress
import re
from functools import cache, lru_cache
from urllib.parse import urlsplit

import idna
import tldextract

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


class NotAHost(ValueError):
    """Text that is neither a DNS host name nor an IP address written the standard way; the message says
    why, in a sentence for the person who typed it."""


MAX_NAME = 253
_LABEL = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
# The URL standard's "ends in a number": a host whose last label is decimal digits or 0x-hex is read as an
# IPv4 address (and the system resolver reads 127.1, 0x7f.1, 2130706433 the same way), never as a name.
_NUMBER = re.compile(r"^(?:[0-9]+|0x[0-9a-f]*)$")
_ZONE = re.compile(r"^[A-Za-z0-9._~-]+$")
_SPECIAL_USE = ("arpa", "onion")  # in the public suffix list, but never a host to send a request to


def normal_host(host: str) -> str:
    """`host` as a client connects to it: a DNS name in lower-case A-labels without the final dot (IDNA 2008
    with the UTS-46 mapping of the URL standard, as aiohttp's yarl maps it: full-width letters and digits,
    ideographic dots), an IPv4 address in dotted-decimal form, or an IPv6 address (brackets removed,
    compressed, a zone kept after `%`).

    Raises `NotAHost` for anything else: the legacy numeric forms of IPv4 (`2130706433`, `0x7f.0.0.1`,
    `127.1`, `0177.0.0.1`, `127.000.000.001`); an IP address spelled with other characters than ASCII
    digits and dots (full-width or circled digits, ideographic full stops); invisible characters that the
    mapping would drop; labels that are empty, longer than 63 characters or not letters, digits and
    hyphens; names over 253 characters. (An ASCII label starting `xn--` is not decoded: a name that is
    not valid punycode is only a name that does not resolve.)
    """
    if not host:
        raise NotAHost("the host is empty")
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if ":" in text:
        return _normal_ipv6(host, text)
    ascii_host = text.lower() if text.isascii() else _mapped(host, text)
    name = ascii_host[:-1] if ascii_host.endswith(".") else ascii_host
    labels = name.split(".")
    if _NUMBER.match(labels[-1]):
        return _ipv4(host, text, ascii_host)
    if len(name) > MAX_NAME:
        raise NotAHost(f"{host} is longer than {MAX_NAME} characters, too long for a host name")
    for label in labels:
        if not _LABEL.match(label):
            raise NotAHost(
                f"{host} is not a valid host name: each part between dots must be 1 to 63 letters, digits or "
                "hyphens, not starting or ending with a hyphen"
            )
    return name


_OCTET = "(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9][0-9]|[0-9])"
_LDH = "[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
LOWERCASE_HOST_SCHEMA: dict[str, object] = {
    "anyOf": [
        {"pattern": f"^(?:{_OCTET}\\.){{3}}{_OCTET}$"},
        {
            "pattern": f"^(?:{_LDH}\\.)*{_LDH}\\.?$",
            "not": {"pattern": "(?:^|\\.)(?:[0-9]+|0x[0-9a-f]*)\\.?$"},
        },
    ]
}
"""JSON Schema (ECMA-262 patterns) of exactly the lower-case ASCII hosts `normal_host` accepts: an IPv4
address in dotted-decimal form, or labels of letters, digits and hyphens whose last is not a number. For
OpenAPI documents, so clients and fuzzers build the hosts the server accepts (length limits apart)."""


def _normal_ipv6(host: str, text: str) -> str:
    address, percent, zone = text.partition("%")
    try:
        ip = ipaddress.IPv6Address(address)
    except ValueError:
        raise NotAHost(f"{host} is not a valid IPv6 address") from None
    if percent and not _ZONE.match(zone):
        raise NotAHost(f"{host} has an empty or invalid IPv6 zone")
    return f"{ip.compressed}%{zone}" if percent else ip.compressed


def _mapped(host: str, text: str) -> str:
    """A Unicode host mapped and encoded as IDNA 2008 with UTS-46 (what the URL standard and yarl do)."""
    for char in text:
        try:
            dropped = not char.isascii() and idna.uts46_remap(char, std3_rules=True) == ""
        except idna.IDNAError:
            dropped = False  # refused below, with the encoder's reason
        if dropped:
            raise NotAHost(f"{host!r} contains an invisible character (U+{ord(char):04X}); type it again")
    try:
        return idna.encode(text, uts46=True, std3_rules=True).decode("ascii")
    except idna.IDNAError as exc:
        raise NotAHost(f"{host} is not a valid host name ({exc})") from None


def _ipv4(host: str, text: str, ascii_host: str) -> str:
    try:
        ip = ipaddress.IPv4Address(ascii_host)  # four decimal numbers, no leading zeros, no final dot
    except ValueError:
        raise NotAHost(
            f"{host} is neither a host name nor an IPv4 address written as four decimal numbers (a.b.c.d)"
        ) from None
    if not text.isascii():
        raise NotAHost(f"{host} spells the IP address {ip} with other characters than ASCII digits and dots")
    return str(ip)


@cache
def _suffixes() -> tldextract.TLDExtract:
    """The public suffix list bundled with tldextract: no fetch, no disk cache."""
    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, fallback_to_snapshot=True)


def is_registrable(name: str) -> bool:
    """A name under a public suffix of the ICANN section (`example.com`, `mail.example.co.uk`), not the
    suffix itself (`com`, `co.uk`) nor a name under none (`intranet`, `mail.internal`, `hooks.test`)."""
    parts = _suffixes()(name, include_psl_private_domains=False)
    return bool(parts.suffix and parts.domain) and parts.suffix.rsplit(".", 1)[-1] not in _SPECIAL_USE


@lru_cache(maxsize=4096)
def host_problem(host: str, *, allow_private: bool) -> str | None:
    """Why the server must not connect to `host` (a URL's host or a mail server), in a sentence for the
    person who typed it; None when it may (its addresses, once resolved, are checked at each connection).

    The host's form is checked whatever the setting (`normal_host`). Unless `allow_private`: an IP address
    must be globally routable and carry no IPv6 zone, and a name must be registrable and not local
    (`localhost`, `*.localhost`). Refusals that `OUTREACH_ALLOW_PRIVATE_URLS=1` would lift say so."""
    try:
        name = normal_host(host)
    except NotAHost as exc:
        return str(exc)
    if allow_private:
        return None
    ip = parse_ip(name)
    shown = host.strip("[]")
    if ip is not None:
        if "%" in name:
            return f"{shown} names a network interface of this server (IPv6 zone); {ALLOW_PRIVATE_HINT}"
        kind = address_kind(ip)
        if kind is not None:
            return f"{shown} is a {kind} address, not a public one; {ALLOW_PRIVATE_HINT}"
        return None
    if is_local_name(name):
        return f"{host} is a local host name (this server itself); {ALLOW_PRIVATE_HINT}"
    if not is_registrable(name):
        return (
            f"{host} is not a public host name (not under a public suffix such as .com or .co.uk); "
            f"{ALLOW_PRIVATE_HINT}"
        )
    return None


def url_problem(url: str, *, allow_private: bool) -> str | None:
    """Why the server must not send a request to `url`, or None when it may (before name resolution).

    Only `http` and `https` with a host are accepted, with no backslash, space or control character in the
    part before the path (URL parsers disagree on those); the host must pass `host_problem`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        _ = parts.port  # raises ValueError for a port out of range
    except ValueError:
        return "not a valid URL"
    if parts.scheme not in ("http", "https"):
        return "only http and https URLs are allowed"
    if any(c == "\\" or c.isspace() or ord(c) < 32 or ord(c) == 127 for c in parts.netloc):
        return "the URL's host part must not contain backslashes, spaces or control characters"
    if not host:
        return "the URL has no host"
    return host_problem(host, allow_private=allow_private)


def is_local_name(host: str) -> bool:
    """`localhost` and names under `.localhost` (RFC 6761: always the machine itself)."""
    name = host.rstrip(".").lower()
    return name in _LOCAL_NAMES or name.endswith(".localhost")
