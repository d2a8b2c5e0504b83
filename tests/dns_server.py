"""A small authoritative DNS server on loopback (dnslib), answering from records the test sets."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from dnslib import QTYPE, RR, SOA, DNSRecord
from dnslib.server import BaseResolver, DNSLogger, DNSServer


class _Zone(BaseResolver):  # type: ignore[misc]
    def __init__(self) -> None:
        self.records: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.soas: dict[str, tuple[int, int]] = {}  # zone -> (SOA TTL, MINIMUM)
        self.queries: list[tuple[str, str]] = []
        self.lock = threading.Lock()
        self.failing: set[str] = set()  # names answered SERVFAIL
        self.slow: dict[str, float] = {}  # names answered only after this many seconds
        self.delay_s = 0.0  # every answer waits this long (benchmarks)

    def resolve(self, request: DNSRecord, handler: Any) -> DNSRecord:
        reply = request.reply()
        qname = str(request.q.qname).rstrip(".").lower()
        qtype = QTYPE[request.q.qtype]
        with self.lock:
            self.queries.append((qname, qtype))
            wait = self.delay_s + self.slow.get(qname, 0.0)
            failing = qname in self.failing
        if wait:
            time.sleep(wait)
        if failing:
            reply.header.rcode = 2  # SERVFAIL
            return reply
        with self.lock:
            answers = list(self.records.get((qname, qtype), []))
            exists = any(name == qname for name, _ in self.records)
            zones = [z for z in self.soas if qname == z or qname.endswith("." + z)]
            soa = (max(zones, key=len), self.soas[max(zones, key=len)]) if zones else None
        for text in answers:
            reply.add_answer(*RR.fromZone(f"{qname}. 60 IN {qtype} {text}"))
        if not answers and not exists:
            reply.header.rcode = 3  # NXDOMAIN
        if not answers and soa is not None:  # a negative answer carries its zone's SOA (RFC 2308)
            zone, (ttl, minimum) = soa
            times = (1, 3600, 600, 86400, minimum)  # serial, refresh, retry, expire, minimum
            rdata = SOA(f"ns.{zone}.", f"hostmaster.{zone}.", times)
            reply.add_auth(RR(f"{zone}.", QTYPE.SOA, ttl=ttl, rdata=rdata))
        return reply


class DnsServer:
    """`add("example.com", "MX", "10 mx.example.com.")`; `nameservers` goes into OUTREACH_DNS_NAMESERVERS."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.zone = _Zone()
        quiet = DNSLogger(log="-request,-reply,-truncated,-error,-recv,-send,-data", logf=lambda _: None)
        self._server = DNSServer(self.zone, port=port, address="127.0.0.1", logger=quiet)

    @property
    def nameservers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def add(self, name: str, rdtype: str, *values: str) -> None:
        with self.zone.lock:
            self.zone.records[(name.rstrip(".").lower(), rdtype)].extend(values)

    def soa(self, zone: str, *, minimum: int, ttl: int = 3600) -> None:
        """Negative answers (NXDOMAIN, no records of the type asked) for names in `zone` carry its SOA."""
        with self.zone.lock:
            self.zone.soas[zone.rstrip(".").lower()] = (ttl, minimum)

    def remove(self, name: str, rdtype: str) -> None:
        with self.zone.lock:
            self.zone.records.pop((name.rstrip(".").lower(), rdtype), None)

    def fail(self, name: str) -> None:
        """Questions about `name` are answered SERVFAIL."""
        with self.zone.lock:
            self.zone.failing.add(name.rstrip(".").lower())

    def slow_down(self, name: str, seconds: float) -> None:
        """Questions about `name` are answered only after `seconds` (a lookup that times out)."""
        with self.zone.lock:
            self.zone.slow[name.rstrip(".").lower()] = seconds

    def queries_for(self, name: str) -> int:
        with self.zone.lock:
            return sum(1 for q, _ in self.zone.queries if q == name.lower())

    def start(self) -> None:
        self._server.start_thread()

    def stop(self) -> None:
        self._server.stop()
