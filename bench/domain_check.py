"""The domain checker as `outreach serve` runs it: a cold `GET /check` against a DNS server whose every answer
takes 50 ms (DESIGN section 8: within 1.5 s), and the same checks again from the 10-minute cache (p95 within
20 ms).

A dnslib server on loopback (`tests/dns_server.py`, in this process's threads: its work is not the server's)
answers for `--domains` distinct domains set up like a real Google Workspace domain (MX, an SPF record with a
two-level include chain, a DKIM key at `google`, DMARC), the MX host's address on two DNSBL zones and the
domain on a DBL zone, every answer after `--delay-ms`; a local RDAP server answers the registration date after
the same delay. The server is a real `outreach serve --no-workers` (SQLite by default; PostgreSQL with
OUTREACH_DATABASE_URL) pointed at them with OUTREACH_DNS_NAMESERVERS, OUTREACH_DNSBL_ZONES,
OUTREACH_DBL_ZONES and OUTREACH_RDAP_URL. Printed: cold and cached latency (median, p95, max) seen by a real
HTTP client, DNS questions per check, and the server process's CPU per request (user + system, /proc).

    .venv/bin/python bench/domain_check.py [--domains 20] [--cached 20] [--delay-ms 50]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._server import free_port, served
from tests.deliverability.zones import rsa_key, txt
from tests.dns_server import DnsServer

DNSBL_ZONES = "zen.bench-bl.org,b.bench-bl.org"
DBL_ZONE = "dbl.bench-bl.org"


def publish(dns: DnsServer, domain: str) -> None:
    dns.add(domain, "A", "203.0.113.10")
    dns.add(domain, "NS", "ns1.bench-dns.net.")
    dns.add(domain, "MX", "1 aspmx.l.google.com.", "5 alt1.aspmx.l.google.com.")
    dns.add(domain, "TXT", txt("v=spf1 include:_spf.google.com include:mail.zendesk.com ~all"))
    dns.add(f"google._domainkey.{domain}", "TXT", txt(f"v=DKIM1; k=rsa; p={rsa_key(2048)}"))
    dns.add(f"_dmarc.{domain}", "TXT", txt(f"v=DMARC1; p=quarantine; rua=mailto:dmarc@{domain}"))


def publish_shared(dns: DnsServer) -> None:
    dns.add("aspmx.l.google.com", "A", "142.250.102.26")
    dns.add("alt1.aspmx.l.google.com", "A", "142.250.102.27")
    dns.add(
        "_spf.google.com",
        "TXT",
        txt("v=spf1 include:_netblocks.google.com include:_netblocks2.google.com ~all"),
    )
    dns.add("_netblocks.google.com", "TXT", txt("v=spf1 ip4:35.190.247.0/24 ip4:64.233.160.0/19 ~all"))
    dns.add("_netblocks2.google.com", "TXT", txt("v=spf1 ip6:2001:4860:4000::/36 ~all"))
    dns.add("mail.zendesk.com", "TXT", txt("v=spf1 ip4:192.161.144.0/20 ~all"))


def rdap_server(delay_s: float) -> tuple[ThreadingHTTPServer, str]:
    registered = (datetime.now(UTC) - timedelta(days=900)).isoformat().replace("+00:00", "Z")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            time.sleep(delay_s)
            body = json.dumps({"events": [{"eventAction": "registration", "eventDate": registered}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/rdap+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/domain/{{domain}}"


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def summary(name: str, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
    return (
        f"{name:<7} n={len(ordered):<5} median {statistics.median(ordered) * 1000:7.1f} ms   "
        f"p95 {p95 * 1000:7.1f} ms   max {ordered[-1] * 1000:7.1f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--domains", type=int, default=20)
    parser.add_argument("--cached", type=int, default=20, help="cached checks per domain")
    parser.add_argument("--delay-ms", type=float, default=50.0)
    args = parser.parse_args()

    dns = DnsServer(free_port())
    dns.start()
    publish_shared(dns)
    domains = [f"bench-{os.getpid()}-{i}.com" for i in range(args.domains)]
    for domain in domains:
        publish(dns, domain)
    dns.zone.delay_s = args.delay_ms / 1000
    rdap, rdap_url = rdap_server(args.delay_ms / 1000)
    env = {
        "OUTREACH_DNS_NAMESERVERS": dns.nameservers,
        "OUTREACH_DNSBL_ZONES": DNSBL_ZONES,
        "OUTREACH_DBL_ZONES": DBL_ZONE,
        "OUTREACH_RDAP_URL": rdap_url,
        "OUTREACH_ALLOW_PRIVATE_URLS": "1",
    }
    try:
        with (
            served(plan="growth", env_extra=env) as server,
            httpx.Client(base_url=server.base, timeout=30) as http,
        ):
            assert server.process is not None
            headers = {"Authorization": f"Bearer {server.key}"}

            def check(domain: str) -> tuple[float, dict[str, object]]:
                started = time.perf_counter()
                response = http.get("/api/v1/check", headers=headers, params={"domain": domain})
                elapsed = time.perf_counter() - started
                response.raise_for_status()
                return elapsed, response.json()

            check("warm-up.com")  # imports, connection pools
            cold, grades, asked = [], set(), []
            cpu = cpu_s(server.process.pid)
            for domain in domains:
                before = len(dns.zone.queries)
                elapsed, report = check(domain)
                asked.append(len(dns.zone.queries) - before)
                assert report["cached"] is False
                cold.append(elapsed)
                grades.add(f"{report['grade']} {report['score']}")
            cold_cpu = (cpu_s(server.process.pid) - cpu) / len(domains)
            cached = []
            cpu = cpu_s(server.process.pid)
            for _ in range(args.cached):
                for domain in domains:
                    elapsed, report = check(domain)
                    assert report["cached"] is True
                    cached.append(elapsed)
            cached_cpu = (cpu_s(server.process.pid) - cpu) / len(cached)
            baseline = []
            cpu = cpu_s(server.process.pid)
            for _ in range(len(cached)):
                started = time.perf_counter()
                http.get("/api/v1/me", headers=headers).raise_for_status()
                baseline.append(time.perf_counter() - started)
            baseline_cpu = (cpu_s(server.process.pid) - cpu) / len(baseline)
            load = os.getloadavg()[0]
            print(
                f"engine: {server.engine}; DNS answers after {args.delay_ms:g} ms each; "
                f"load average {load:.1f}"
            )
            print(f"grades: {sorted(grades)}")
            print(
                f"DNS questions per cold check: {statistics.median(asked):g} (all answered after the delay)"
            )
            print(summary("cold", cold) + f"   server CPU {cold_cpu * 1e6:,.0f} µs/check")
            print(summary("cached", cached) + f"   server CPU {cached_cpu * 1e6:,.0f} µs/request")
            print(
                summary("GET /me", baseline)
                + f"   server CPU {baseline_cpu * 1e6:,.0f} µs/request (baseline)"
            )
    finally:
        rdap.shutdown()
        dns.stop()


if __name__ == "__main__":
    main()
