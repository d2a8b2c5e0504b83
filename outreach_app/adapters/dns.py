"""`ports.DnsResolver` over dnspython: the resolver of lookups and of outgoing connections."""

from __future__ import annotations

import dns.asyncresolver
import dns.exception
import dns.message
import dns.rdatatype
import dns.resolver
import structlog

from outreach_core.ports import DnsAnswer, DnsResolver
from outreach_core.settings import Settings

_log = structlog.get_logger()


class DnspythonResolver:
    """`ports.DnsResolver` over dnspython; honours `OUTREACH_DNS_NAMESERVERS` (`host:port[,host:port]`)."""

    def __init__(self, nameservers: str | None = None, *, timeout_s: float = 3.0) -> None:
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            hosts, ports = [], set()
            for entry in nameservers.split(","):
                host, _, port = (
                    entry.strip().rpartition(":") if entry.count(":") == 1 else (entry.strip(), "", "")
                )
                hosts.append(host or entry.strip())
                ports.add(int(port) if port else 53)
            resolver.nameservers = hosts
            resolver.port = ports.pop() if len(ports) == 1 else 53
        else:
            resolver = dns.asyncresolver.Resolver()
        resolver.timeout = timeout_s
        resolver.lifetime = timeout_s * 2
        self._resolver = resolver

    async def lookup(self, name: str, rdtype: str) -> list[str]:
        """Answers as text (MX: `"10 mx.example.com."`); empty for NXDOMAIN or no answer.

        Timeouts and server failures raise `dns.exception.DNSException`, so callers can tell "no mail server"
        from "could not ask"."""
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except (dns.resolver.NXDOMAIN, dns.resolver.NoNameservers) as exc:
            if isinstance(exc, dns.resolver.NXDOMAIN):
                return []
            raise
        return [r.to_text() for r in answer] if answer.rrset is not None else []

    async def lookup_answer(self, name: str, rdtype: str) -> DnsAnswer:
        """`lookup` with the answer's TTL, or for NXDOMAIN / no answer the negative TTL of RFC 2308 from
        the SOA record in the authority section (None without one). Errors raise as in `lookup`."""
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN as exc:
            responses: dict[object, dns.message.Message] = exc.kwargs.get("responses") or {}
            return DnsAnswer([], _negative_ttl(list(responses.values())))
        if answer.rrset is None:
            return DnsAnswer([], _negative_ttl([answer.response]))
        return DnsAnswer([r.to_text() for r in answer], answer.rrset.ttl)


def _negative_ttl(responses: list[dns.message.Message]) -> int | None:
    """RFC 2308 section 5: min(SOA TTL, SOA MINIMUM) of the SOA in the authority section."""
    ttls = [
        min(rrset.ttl, rdata.minimum)
        for response in responses
        for rrset in response.authority
        if rrset.rdtype == dns.rdatatype.SOA
        for rdata in rrset
    ]
    return min(ttls) if ttls else None


def configured_dns(settings: Settings) -> DnsResolver | None:
    """The resolver of outgoing connections: `OUTREACH_DNS_NAMESERVERS` if set, else None (the system's)."""
    return DnspythonResolver(settings.dns_nameservers) if settings.dns_nameservers else None
