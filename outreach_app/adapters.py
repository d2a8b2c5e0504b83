"""Adapters for the core's ports (the real I/O)."""

from __future__ import annotations

import dns.asyncresolver
import dns.exception
import dns.resolver


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
