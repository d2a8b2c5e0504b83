"""The two checks of a link domain, through the ports and with no transaction open: its DNS (the CNAME to
the link target, through `OUTREACH_DNS_NAMESERVERS`) and, once that is right, a real TLS handshake to
`<host>:OUTREACH_LINK_TLS_PORT` with that SNI (`ports.TlsProbe`)."""

from __future__ import annotations

import asyncio

import dns.exception

from outreach_core.kernel.ports import DnsResolver, Ports
from outreach_core.kernel.settings import Settings
from outreach_core.link_domain.rules import Dns, Tls


def _name(record: str) -> str:
    return record.strip().rstrip(".").lower()


async def look_up(resolver: DnsResolver | None, hostname: str, target: str | None) -> Dns:
    """Whether `hostname` has a CNAME record to `target`.

    A CNAME to the target is `ok`, to anything else `wrong`. Without a CNAME, addresses equal to the
    target's are `ok` too (DNS providers that flatten CNAMEs answer with the target's addresses); other
    addresses are `wrong`, none at all `missing`. A timeout or server failure is `unknown`, never a wrong
    verdict."""
    if target is None:
        return Dns("unknown", "this server has no link target (OUTREACH_LINK_TARGET)")
    if resolver is None:
        return Dns("unknown", "no DNS resolver is configured on this server")
    try:
        cnames = [_name(r) for r in await resolver.lookup(hostname, "CNAME")]
        if cnames:
            if target in cnames:
                return Dns("ok")
            return Dns("wrong", f"its CNAME points at {cnames[0]}, not {target}")
        mine, theirs = await asyncio.gather(_addresses(resolver, hostname), _addresses(resolver, target))
    except (dns.exception.DNSException, OSError):
        return Dns("unknown", "the DNS server did not answer (timeout or server failure)")
    if not mine:
        return Dns("missing", f"no CNAME record at {hostname}")
    if theirs and mine == theirs:
        return Dns("ok")
    return Dns("wrong", f"it has addresses ({', '.join(sorted(mine))}) but no CNAME to {target}")


async def _addresses(resolver: DnsResolver, name: str) -> set[str]:
    v4, v6 = await asyncio.gather(resolver.lookup(name, "A"), resolver.lookup(name, "AAAA"))
    return {_name(a) for a in v4 + v6}


async def shake_hands(ports: Ports, settings: Settings, hostname: str, found: Dns) -> Tls:
    """A verified TLS handshake to `hostname` on the link TLS port, tried only when DNS is right."""
    if found.state != "ok":
        return Tls("untested")
    if ports.tls is None:
        return Tls("untested", "this server cannot test certificates (no TLS probe configured)")
    result = await ports.tls.handshake(hostname, settings.link_tls_port, settings.link_check_timeout_s)
    if result.ok:
        return Tls("verified")
    return Tls("certificate" if result.problem == "certificate" else "unreachable", result.reason or None)


async def check_host(ports: Ports, settings: Settings, hostname: str, target: str | None) -> tuple[Dns, Tls]:
    """DNS, then TLS when DNS is right; each bounded by `OUTREACH_LINK_CHECK_TIMEOUT_S`."""
    try:
        async with asyncio.timeout(settings.link_check_timeout_s):
            found = await look_up(ports.dns, hostname, target)
    except TimeoutError:
        return Dns("unknown", "the DNS lookups took too long"), Tls("untested")
    try:
        async with asyncio.timeout(settings.link_check_timeout_s + 1):
            return found, await shake_hands(ports, settings, hostname, found)
    except TimeoutError:
        return found, Tls("unreachable", "the TLS handshake took too long")
