"""The one check of an outgoing host (`outreach_core.kernel.urls.host_problem`, issue 25 item 2), as the HTTP
client reads the host: property tests over Unicode spellings of IPv4 addresses, the legacy numeric IPv4 forms
the system resolver accepts and the IPv6 forms that carry an IPv4 address or a zone, compared with what
aiohttp's URL library (yarl) makes of each host; the same check on the address of every socket aiohttp opens,
on mail servers stored before the check existed (a real SMTP server on loopback sees nothing), and on the
verifier URL at start-up."""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import idna
import jsonschema
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from yarl import URL

from outreach_app.adapters import MailLoginClient, SmtpMailSender
from outreach_app.adapters.http import GuardedHttpClient
from outreach_app.outgoing import NotContacted
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.urls import (
    LOWERCASE_HOST_SCHEMA,
    NotAHost,
    address_kind,
    host_problem,
    normal_host,
    url_problem,
)
from tests.mail_servers import MailServers

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _spellings(digit: int) -> list[str]:
    """Characters that UTS-46 maps to `digit`: full-width, circled, mathematical, super- and subscript."""
    candidates = [
        chr(0x30 + digit),
        chr(0xFF10 + digit),
        "\u24ea" if digit == 0 else chr(0x2460 + digit - 1),
        *(chr(base + digit) for base in (0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6)),
        chr(0x2080 + digit),
        {0: "\u2070", 1: "\u00b9", 2: "\u00b2", 3: "\u00b3"}.get(digit, chr(0x2070 + digit)),
    ]
    return [c for c in candidates if idna.uts46_remap(c, std3_rules=True) == str(digit)]


DIGITS = {str(d): _spellings(d) for d in range(10)}
DOTS = [".", "\u3002", "\uff0e", "\uff61"]  # ideographic, full-width, half-width ideographic full stops
NOT_GLOBAL_V4 = [
    ipaddress.ip_network(n)
    for n in (
        *("127.0.0.0/8", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "0.0.0.0/8"),
        *("100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4"),
    )
]


def test_every_digit_has_several_unicode_spellings() -> None:
    assert all(len(spellings) >= 6 for spellings in DIGITS.values()), DIGITS


@st.composite
def ipv4_addresses(draw: st.DrawFn) -> ipaddress.IPv4Address:
    """Mostly addresses that are not globally routable, some of any kind."""
    if draw(st.booleans()):
        return ipaddress.IPv4Address(draw(st.integers(0, 2**32 - 1)))
    net = draw(st.sampled_from(NOT_GLOBAL_V4))
    return ipaddress.IPv4Address(int(net.network_address) + draw(st.integers(0, net.num_addresses - 1)))


@st.composite
def unicode_spellings(draw: st.DrawFn) -> tuple[ipaddress.IPv4Address, str]:
    """An IPv4 address written with at least one Unicode digit or dot."""
    ip = draw(ipv4_addresses())
    text = "".join(
        draw(st.sampled_from(DOTS if c == "." else DIGITS[c])) for c in str(ip)
    )  # fmt: skip
    assume(not text.isascii())
    return ip, text


# One client per setting for the whole module: building one loads the system's trust store (about 25 ms of
# CPU, 90 % of what an example cost when each call built its own), and a refusal leaves no state behind
# (`_client_refuses` checks that no session was opened).
_CLIENTS = {allow: GuardedHttpClient(allow_private_urls=allow) for allow in (False, True)}


def _client_refuses(url: str, *, allow_private: bool) -> bool:
    """Whether `GuardedHttpClient.post_json` refuses `url` before connecting (no network is touched: the
    client never opened a session)."""
    client = _CLIENTS[allow_private]
    status, body = asyncio.run(client.post_json(url, b"{}", {}, 1.0))
    assert client._session is None, url  # nothing was connected, not even a connection pool made
    return status == 0 and body.startswith(b"refused: ")


@PROPERTY
@given(unicode_spellings())
def test_a_unicode_spelling_of_an_ip_address_is_refused_whatever_the_setting(
    spelled: tuple[ipaddress.IPv4Address, str],
) -> None:
    ip, host = spelled
    url = f"https://{host}:8443/hook"
    assert URL(url).raw_host == str(ip)  # the bypass is real: the HTTP client connects to this address
    for allow_private in (False, True):
        problem = url_problem(url, allow_private=allow_private)
        assert problem is not None and f"spells the IP address {ip}" in problem
        assert _client_refuses(url, allow_private=allow_private)


@PROPERTY
@given(ipv4_addresses())
def test_the_plain_spelling_is_judged_by_the_address(ip: ipaddress.IPv4Address) -> None:
    url = f"https://{ip}/hook"
    refused = url_problem(url, allow_private=False)
    assert (refused is not None) == (address_kind(ip) is not None)
    assert url_problem(url, allow_private=True) is None


@st.composite
def legacy_forms(draw: st.DrawFn) -> tuple[ipaddress.IPv4Address, str]:
    """An IPv4 address in 1 to 4 parts (the last part holds the remaining bits), each part in decimal, octal
    (leading 0) or hex (0x, any case), with optional leading zeros: what `inet_aton` and the system resolver
    accept."""
    value = draw(st.integers(0, 2**32 - 1))
    count = draw(st.integers(1, 4))
    shifts = {1: [], 2: [24], 3: [24, 16], 4: [24, 16, 8]}[count]
    parts, rest = [], value
    for shift in shifts:
        parts.append(rest >> shift)
        rest &= (1 << shift) - 1
    parts.append(rest)
    texts = []
    for part in parts:
        base = draw(st.sampled_from(["dec", "oct", "hex"]))
        pad = "0" * draw(st.integers(0, 3))
        if base == "dec":
            texts.append(str(part) if part else pad + "0")
        elif base == "oct":
            texts.append("0" + pad + format(part, "o"))
        else:
            texts.append(
                draw(st.sampled_from(["0x", "0X"])) + pad + format(part, draw(st.sampled_from("xX")))
            )
    return ipaddress.IPv4Address(value), ".".join(texts)


@PROPERTY
@given(legacy_forms())
def test_legacy_numeric_forms_are_refused_unless_they_are_the_dotted_decimal_form(
    form: tuple[ipaddress.IPv4Address, str],
) -> None:
    ip, host = form
    assert socket.inet_aton(host) == ip.packed  # the system resolver reads the form as this address
    url = f"http://{host}:8080/hook"
    if host == str(ip):
        assert normal_host(host) == host
        return
    with pytest.raises(NotAHost, match=r"written as four decimal numbers"):
        normal_host(host)
    for allow_private in (False, True):
        assert url_problem(url, allow_private=allow_private) is not None
        assert _client_refuses(url, allow_private=allow_private)


@st.composite
def ipv6_forms(draw: st.DrawFn) -> tuple[str, bool]:
    """An IPv6 literal (as in a URL, with brackets) carrying an IPv4 address, or with a zone; whether it is
    allowed on a server without private URLs (only a mapped, NAT64 or 6to4 form of a public address)."""
    ip = draw(ipv4_addresses())
    public = address_kind(ip) is None
    hi, lo = int(ip) >> 16, int(ip) & 0xFFFF
    kind = draw(st.sampled_from(["mapped", "mapped-hex", "mapped-long", "compat", "nat64", "6to4", "zone"]))
    text = {
        "mapped": f"::ffff:{ip}",
        "mapped-hex": f"::ffff:{hi:x}:{lo:x}",
        "mapped-long": f"0:0:0:0:0:FFFF:{ip}",
        "compat": f"::{ip}",
        "nat64": f"64:ff9b::{ip}",
        "6to4": f"2002:{hi:x}:{lo:x}::1",
        "zone": f"fe80::{hi:x}:{lo:x}%25eth0",
    }[kind]
    if draw(st.booleans()):
        text = text.upper()
    return f"[{text}]", public and kind not in ("compat", "zone")


@PROPERTY
@given(ipv6_forms())
def test_ipv6_forms_are_judged_by_the_address_they_carry(form: tuple[str, bool]) -> None:
    host, allowed = form
    url = f"https://{host}/hook"
    assert (url_problem(url, allow_private=False) is None) == allowed, url
    if not allowed:  # (an allowed one would be a request to a public address: not made from tests)
        assert _client_refuses(url, allow_private=False)
    assert url_problem(url, allow_private=True) is None


HOST_CHARS = st.sampled_from(
    [*"abcxyz019-.", "\uff21", "\uff5a", "\u00e9", "\u00fc", "\u00df", "\u03c2", "\u0130", "\ufb01"]
    + [s for spellings in DIGITS.values() for s in spellings[1:3]]
    + [*DOTS[1:], "\u200b", "\u00ad", "\u2488", "\u2474", "_", "%"]
)


@PROPERTY
@given(st.text(HOST_CHARS, min_size=1, max_size=24))
def test_an_accepted_host_is_the_host_the_http_client_connects_to(host: str) -> None:
    """Whatever the spelling: when the check accepts a host, the URL library aiohttp uses reads the same host
    from the URL (so the check judged the host that is connected to), and accepts it too."""
    assume(host_problem(host, allow_private=True) is None)
    raw = URL(f"http://{host}/x").raw_host
    assert raw is not None and raw.rstrip(".") == normal_host(host)
    for allow_private in (False, True):
        if host_problem(host, allow_private=allow_private) is None:
            assert host_problem(raw, allow_private=allow_private) is None


@pytest.mark.parametrize(
    ("host", "why"),
    [
        ("example.com", None),
        ("mail.example.co.uk", None),
        ("b\u00fccher.de", None),
        ("\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\u3002com", None),  # full-width EXAMPLE, ideographic dot
        ("example.com.", None),
        ("com", "not a public host name"),
        ("co.uk", "not a public host name"),
        ("intranet", "not a public host name"),
        ("hooks.internal", "not a public host name"),
        ("x.onion", "not a public host name"),
        ("1.0.0.127.in-addr.arpa", "not a public host name"),
        ("localhost", "local host name"),
        ("\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54", "local host name"),  # full-width
        ("a..example.com", "not a valid host name"),
        ("-a.example.com", "not a valid host name"),
        ("exa_mple.com", "not a valid host name"),
        ("ex\u200bample.com", "invisible character"),
        ("x" * 64 + ".com", "not a valid host name"),
        (("a" * 63 + ".") * 4 + "com", "longer than 253"),
        ("\u2488\u2489\u248a\u248b", "not a valid host name"),  # DIGIT ONE FULL STOP ...: IDNA 2008 refuses
        ("foo.0x10", "four decimal numbers"),
    ],
)
def test_names(host: str, why: str | None) -> None:
    problem = host_problem(host, allow_private=False)
    assert (problem is None) if why is None else (problem is not None and why in problem), problem


LOWERCASE_LABELS = st.lists(
    st.one_of(
        st.text(st.sampled_from("0123456789abcfx-"), min_size=0, max_size=4),
        st.text(st.sampled_from("0123456789abcdefghijklmnopqrstuvwxyz-"), min_size=60, max_size=66),
        st.integers(0, 300).map(str),
        st.sampled_from(["0x", "0x7f", "00", "0177", "xn--bcher-kva", "a-", "-a"]),
    ),
    min_size=1,
    max_size=6,
)


@PROPERTY
@given(LOWERCASE_LABELS, st.booleans())
def test_the_documented_host_schema_accepts_exactly_the_hosts_the_check_accepts(
    labels: list[str], final_dot: bool
) -> None:
    """The OpenAPI document's schema of a mail server host (`LOWERCASE_HOST_SCHEMA`, judged by a standard
    JSON Schema validator) and `normal_host` agree on every lower-case ASCII host, so a client built from the
    document sends only hosts the server accepts."""
    host = ".".join(labels) + ("." if final_dot else "")
    assume(0 < len(host) <= 253)
    documented = jsonschema.Draft202012Validator({"type": "string", **LOWERCASE_HOST_SCHEMA}).is_valid(host)
    try:
        normal_host(host)
        accepted = True
    except NotAHost:
        accepted = False
    assert documented == accepted, host


async def test_every_socket_the_http_client_opens_is_checked_even_without_the_resolver() -> None:
    """aiohttp connects to an IP address in a URL without asking a resolver. The URL checks are skipped
    here (the private `_post`) to show that the socket itself still refuses: no connection is made."""
    connections: list[str] = []

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append("connected")
        writer.close()

    server = await asyncio.start_server(accept, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    client = GuardedHttpClient()
    try:
        with pytest.raises(NotContacted, match=r"^refused: 127\.0\.0\.1 is a loopback address"):
            await client._post(f"http://127.0.0.1:{port}/x", b"{}", {}, 1000)
        allowed = GuardedHttpClient(allow_private_urls=True)
        try:
            status, _ = await allowed.post_json(f"http://127.0.0.1:{port}/x", b"{}", {}, 2.0)
        finally:
            await allowed.aclose()
    finally:
        await client.aclose()
        server.close()
        await server.wait_closed()
    assert status == 0 and connections == ["connected"]  # only the client allowed to connect did


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f.0.0.1", "0177.0.0.1", "127.0.0.1."])
async def test_a_mail_server_stored_in_a_legacy_numeric_form_is_never_contacted(
    host: str, mail_servers: MailServers
) -> None:
    """Written before the check existed; the login test, the sender and the login of a server that allows
    private addresses (where 127.0.0.1 itself would work) all refuse it before connecting."""
    smtp = mail_servers.smtp["tls"]
    user, password = mail_servers.add_user()
    logins = MailLoginClient(timeout_s=2.0, allow_private=True, tls_ca_file=str(mail_servers.ca.ca_file))
    assert await logins.test_smtp(MailServer("127.0.0.1", smtp.port, "tls", user), password) is None
    before = len(smtp.messages)
    server = MailServer(host, smtp.port, "tls", user)
    for problem in (await logins.test_smtp(server, password), await logins.test_imap(server, password)):
        assert problem is not None and problem.startswith(f"refused: {host} is neither a host name"), problem
    sender = SmtpMailSender(timeout_s=2.0, allow_private=True, tls_ca_file=str(mail_servers.ca.ca_file))
    try:
        delivery = await sender.send(server, password, user, "lead@example.com", b"Subject: x\r\n\r\nx\r\n")
    finally:
        await sender.aclose()
    assert (delivery.ok, delivery.phase) == (False, "connect") and "neither a host name" in delivery.reason
    assert len(smtp.messages) == before


@pytest.mark.parametrize(
    "url",
    [
        "https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/verify",
        "https://\u2460\u2461\u2466.\u24ea.\u24ea.\u2461/verify",
        "https://2130706433/verify",
        "https://127.1/verify",
        "https://[::ffff:127.0.0.1]/verify",
        "https://verifier.internal/verify",
    ],
)
def test_a_verifier_url_the_client_would_refuse_stops_the_server_at_start_up(url: str) -> None:
    with pytest.raises(ValidationError, match="OUTREACH_VERIFIER_URL cannot be used"):
        Settings(verifier_url=url)
    assert Settings(verifier_url="https://api.verifier.example.com/v1").verifier_url is not None
    if "127.1" not in url and "2130706433" not in url and "\u2460" not in url and "\uff11" not in url:
        assert Settings(verifier_url=url, allow_private_urls=True).verifier_url == url
