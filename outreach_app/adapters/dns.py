"""`ports.DnsResolver` over dnspython: the resolver of lookups and of outgoing connections.

`lookup` asks through `dns.asyncresolver` (any record type). `lookup_answer`, the MX lookups enrichment and
verification make by the tens of thousands during an import, goes through `MxClient`:
queries and answers read by hand over one UDP socket of our own, answers matched to queries by id
(`bench/dns_lookup.py` measures it against `dns.asyncresolver`, dnspython's `asyncquery` and aiodns;
docs/enrichment.md). It reads the SOA of a negative answer, for the negative TTL of RFC 2308.
"""

from __future__ import annotations

import asyncio
import random
import socket

import dns.asyncresolver
import dns.exception
import dns.flags
import dns.message
import dns.name
import dns.rcode
import dns.rdatatype
import dns.resolver
import structlog

from outreach_core.kernel.ports import DnsAnswer, DnsResolver
from outreach_core.kernel.settings import Settings

_log = structlog.get_logger()


def _nameservers(nameservers: str | None) -> list[tuple[str, int]]:
    """`host:port[,host:port]` as (host, port) pairs; the system's resolvers (port 53) when None."""
    if not nameservers:
        return [(str(host), 53) for host in dns.resolver.Resolver().nameservers]
    out = []
    for entry in nameservers.split(","):
        entry = entry.strip()
        host, _, port = entry.rpartition(":") if entry.count(":") == 1 else (entry, "", "")
        out.append((host or entry, int(port) if port else 53))
    return out


class DnspythonResolver:
    """`ports.DnsResolver` over dnspython; honours `OUTREACH_DNS_NAMESERVERS` (`host:port[,host:port]`)."""

    def __init__(self, nameservers: str | None = None, *, timeout_s: float = 3.0) -> None:
        servers = _nameservers(nameservers)
        if nameservers:
            resolver = dns.asyncresolver.Resolver(configure=False)
            resolver.nameservers = [host for host, _ in servers]
            ports = {port for _, port in servers}
            resolver.port = ports.pop() if len(ports) == 1 else 53
        else:
            resolver = dns.asyncresolver.Resolver()
        resolver.timeout = timeout_s
        resolver.lifetime = timeout_s * 2
        self._resolver = resolver
        self._mx = MxClient(servers, timeout_s=timeout_s, lifetime_s=timeout_s * 2)

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
        if rdtype == "MX":
            answer = await self._mx.ask(name, rdtype)
            if answer is not None:
                return answer
        # truncated (the answer needs TCP), a name or answer the hand-read path does not take, other types
        return await self._resolved_answer(name, rdtype)

    async def _resolved_answer(self, name: str, rdtype: str) -> DnsAnswer:
        try:
            answer = await self._resolver.resolve(name, rdtype, raise_on_no_answer=False)
        except dns.resolver.NXDOMAIN as exc:
            responses: dict[object, dns.message.Message] = exc.kwargs.get("responses") or {}
            return DnsAnswer([], _negative_ttl(list(responses.values())))
        if answer.rrset is None:
            return DnsAnswer([], _negative_ttl([answer.response]))
        return DnsAnswer([r.to_text() for r in answer], answer.rrset.ttl)

    async def aclose(self) -> None:
        self._mx.close()


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


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, client: MxClient) -> None:
        self.client = client

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.client.received(data, addr)

    def error_received(self, exc: Exception) -> None:  # ICMP port unreachable and the like
        _log.debug("dns_socket_error", error=str(exc))


class WireError(Exception):
    """An answer this parser does not read (the caller asks through the full resolver instead)."""


def question_wire(name: str, rdtype: int) -> bytes:
    """The question section for `name` (an ASCII host name) and `rdtype`, class IN."""
    labels = name.rstrip(".").split(".")
    out = bytearray()
    for label in labels:
        raw = label.encode("ascii")
        if not raw or len(raw) > 63:
            raise WireError(f"cannot encode {name!r}")
        out.append(len(raw))
        out += raw
    out.append(0)
    if len(out) > 255:
        raise WireError(f"name too long: {name!r}")
    return bytes(out) + rdtype.to_bytes(2, "big") + b"\x00\x01"


def _name(data: bytes, at: int) -> tuple[str, int]:
    """The domain name at `at` (compression pointers followed) as text with a final dot, and where the
    name's own bytes end."""
    labels: list[str] = []
    end = -1
    hops = 0
    while True:
        length = data[at]
        if length >= 0xC0:
            if end < 0:
                end = at + 2
            at = ((length & 0x3F) << 8) | data[at + 1]
            hops += 1
            if hops > 64:
                raise WireError("compression loop")
            continue
        if length == 0:
            return ".".join(labels) + ".", (end if end >= 0 else at + 1)
        labels.append(data[at + 1 : at + 1 + length].decode("ascii", "backslashreplace"))
        at += 1 + length


def parse_answer(data: bytes, rdtype: int, question_end: int) -> DnsAnswer:
    """Records of `rdtype` as text (MX: `"10 mx.example.com."`, as dnspython writes them) with their
    smallest TTL; for NXDOMAIN or no such records the negative TTL of the SOA in the authority section.
    Raises `dns.resolver.NoNameservers` for SERVFAIL, REFUSED and other failures, `WireError` for a
    record type it does not read (only MX is read here)."""
    flags = int.from_bytes(data[2:4], "big")
    rcode = flags & 0x0F
    if rcode not in (dns.rcode.NOERROR, dns.rcode.NXDOMAIN):
        raise dns.resolver.NoNameservers(  # type: ignore[no-untyped-call]
            errors=[("", False, 0, dns.rcode.to_text(dns.rcode.Rcode(rcode)), None)]
        )
    answers, authority = int.from_bytes(data[6:8], "big"), int.from_bytes(data[8:10], "big")
    at = question_end
    records: list[str] = []
    ttl: int | None = None
    negative: int | None = None
    for index in range(answers + authority):
        _, at = _name(data, at)
        kind, ttl_here = (
            int.from_bytes(data[at : at + 2], "big"),
            int.from_bytes(data[at + 4 : at + 8], "big"),
        )
        length = int.from_bytes(data[at + 8 : at + 10], "big")
        rdata = at + 10
        at = rdata + length
        if at > len(data):
            raise WireError("record past the end")
        if index < answers:
            if kind == rdtype and rcode == dns.rcode.NOERROR:
                if kind != dns.rdatatype.MX:
                    raise WireError("only MX answers are read here")
                host, _ = _name(data, rdata + 2)
                records.append(f"{int.from_bytes(data[rdata : rdata + 2], 'big')} {host}")
                ttl = ttl_here if ttl is None else min(ttl, ttl_here)
        elif kind == dns.rdatatype.SOA:
            minimum = int.from_bytes(data[at - 4 : at], "big")
            here = min(ttl_here, minimum)
            negative = here if negative is None else min(negative, here)
    if records:
        return DnsAnswer(records, ttl)
    return DnsAnswer([], negative)


class MxClient:
    """Stub-resolver queries over one UDP socket per address family, built and read by hand (a question
    section and the few fields an MX answer needs; dnspython's `make_query` and `from_wire` cost about
    40 and 180 microseconds per lookup, `bench/dns_lookup.py`): a query goes to the first server with a
    random id; its answer is the datagram from that server carrying the same id and question. No answer
    within `timeout_s` moves on to the next server, up to `lifetime_s` in all (then
    `dns.exception.Timeout`). A truncated answer, or one this parser does not read, makes `ask` return
    None: the caller asks through the full resolver (TCP and all)."""

    def __init__(self, servers: list[tuple[str, int]], *, timeout_s: float, lifetime_s: float) -> None:
        self.servers = servers
        self.timeout_s = timeout_s
        self.lifetime_s = lifetime_s
        self._transports: dict[int, asyncio.DatagramTransport] = {}
        self._opening: dict[int, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiting: dict[tuple[int, str, int], tuple[asyncio.Future[DnsAnswer | None], bytes, int]] = {}
        self._rng = random.SystemRandom()

    async def ask(self, name: str, rdtype: str) -> DnsAnswer | None:
        kind = dns.rdatatype.from_text(rdtype)
        try:
            question = question_wire(name, kind)
        except (WireError, UnicodeError):
            return None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.lifetime_s
        attempt = 0
        while True:
            host, port = self.servers[attempt % len(self.servers)]
            attempt += 1
            transport = await self._transport(socket.AF_INET6 if ":" in host else socket.AF_INET)
            key = self._key(host, port)
            query_id = self._free_id(key)
            waiter: asyncio.Future[DnsAnswer | None] = loop.create_future()
            slot = (query_id, *key)
            self._waiting[slot] = (waiter, question, kind)
            wait_s = min(self.timeout_s, deadline - loop.time())
            timer = loop.call_later(max(wait_s, 0), _expire, waiter)
            try:
                # header: id, flags RD, one question, no other records
                transport.sendto(query_id.to_bytes(2, "big") + _HEADER + question, (host, port))
                try:
                    return await waiter
                except TimeoutError:
                    if loop.time() >= deadline - 0.001:
                        raise dns.exception.Timeout(timeout=self.lifetime_s) from None  # type: ignore[no-untyped-call]
            finally:
                timer.cancel()
                self._waiting.pop(slot, None)

    @staticmethod
    def _key(host: str, port: int) -> tuple[str, int]:
        if ":" in host:
            host = socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, host))
        return host, port

    def _free_id(self, key: tuple[str, int]) -> int:
        while True:
            candidate = self._rng.randrange(65536)
            if (candidate, *key) not in self._waiting:
                return candidate

    def received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        if len(data) < 12:
            return
        slot = (int.from_bytes(data[:2], "big"), *self._key(str(addr[0]), int(addr[1])))
        found = self._waiting.get(slot)
        if found is None:
            return
        waiter, question, kind = found
        flags = int.from_bytes(data[2:4], "big")
        end = 12 + len(question)
        # a response (QR), to our one question (names compared without case)
        if (
            waiter.done()
            or not flags & 0x8000
            or data[4:6] != b"\x00\x01"
            or data[12:end].lower() != question
        ):
            return
        if flags & 0x0200:  # TC: truncated
            waiter.set_result(None)
            return
        try:
            waiter.set_result(parse_answer(data, kind, end))
        except (WireError, IndexError):
            waiter.set_result(None)
        except dns.exception.DNSException as exc:
            waiter.set_exception(exc)

    async def _transport(self, family: int) -> asyncio.DatagramTransport:
        loop = asyncio.get_running_loop()
        if self._loop is not loop:  # sockets belong to the event loop that opened them
            self._transports, self._opening, self._loop = {}, {}, loop
        transport = self._transports.get(family)
        if transport is not None and not transport.is_closing():
            return transport
        lock = self._opening.setdefault(family, asyncio.Lock())
        async with lock:
            transport = self._transports.get(family)
            if transport is None or transport.is_closing():
                local = "::" if family == socket.AF_INET6 else "0.0.0.0"
                transport, _ = await loop.create_datagram_endpoint(
                    lambda: _Protocol(self), family=family, local_addr=(local, 0)
                )
                self._transports[family] = transport
            return transport

    def close(self) -> None:
        for transport in self._transports.values():
            if self._loop is not None and not self._loop.is_closed():
                transport.close()
        self._transports.clear()


_HEADER = b"\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00"  # flags RD; QDCOUNT 1; no other records


def _expire(waiter: asyncio.Future[DnsAnswer | None]) -> None:
    if not waiter.done():
        waiter.set_exception(TimeoutError())


def configured_dns(settings: Settings) -> DnsResolver | None:
    """The resolver of outgoing connections: `OUTREACH_DNS_NAMESERVERS` if set, else None (the system's)."""
    return DnspythonResolver(settings.dns_nameservers) if settings.dns_nameservers else None
