"""What one MX lookup costs the process that asks, by DNS client: the choice of enrichment's DNS path.

A DNS server in a process of its own (so its work is not counted) answers every MX query on loopback with
one mail server; this process then looks up `--names` distinct names, `--concurrency` at a time, with each
client in turn, and prints lookups/s and the CPU microseconds of this process per lookup (`process_time`,
user + system, which is what a lookup takes from the merge's and the requests' cores):

- `asyncresolver`: `dns.asyncresolver.Resolver.resolve`, what the adapter used before issue 31;
- `asyncquery`: dnspython's low-level `dns.asyncquery.udp`, one socket per query;
- `wire`: the adapter's `MxClient` (`outreach_app/adapters/dns.py`): the query built and the answer read
  by hand over one shared UDP socket, answers matched to queries by id;
- `aiodns`: c-ares through `aiodns.DNSResolver.query_dns`.

    .venv/bin/python bench/dns_lookup.py [--names 20000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SERVER = textwrap.dedent(
    """
    import socket, sys
    import dns.flags, dns.message, dns.rdatatype, dns.rrset
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    print(sock.getsockname()[1], flush=True)
    while True:
        data, peer = sock.recvfrom(4096)
        query = dns.message.from_wire(data)
        reply = dns.message.make_response(query)
        name = query.question[0].name.to_text()
        if query.question[0].rdtype == dns.rdatatype.MX:
            reply.answer.append(dns.rrset.from_text(name, 3600, "IN", "MX", "10 mx." + name))
        reply.flags |= dns.flags.RA
        sock.sendto(reply.to_wire(), peer)
    """
)


async def run(
    name: str, lookup: Callable[[str], Awaitable[object]], names: list[str], concurrency: int
) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(n: str) -> None:
        async with gate:
            await lookup(n)

    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*(one(n) for n in names))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    print(
        f"{name:>14}: {len(names) / wall:>8,.0f} lookups/s, {cpu / len(names) * 1e6:>6.1f} µs CPU per lookup",
        flush=True,
    )


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--names", type=int, default=20_000)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER], stdout=subprocess.PIPE, text=True)  # noqa: ASYNC220
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        await measure(port, args)
    finally:
        server.terminate()


async def measure(port: int, args: argparse.Namespace) -> None:
    import aiodns
    import dns.asyncquery
    import dns.asyncresolver
    import dns.message

    from outreach_app.adapters.dns import DnspythonResolver

    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers = ["127.0.0.1"]
    resolver.port = port

    async def with_resolver(n: str) -> object:
        return await resolver.resolve(n, "MX", raise_on_no_answer=False)

    async def with_asyncquery(n: str) -> object:
        return await dns.asyncquery.udp(dns.message.make_query(n, "MX"), "127.0.0.1", timeout=3, port=port)

    adapter = DnspythonResolver(f"127.0.0.1:{port}")

    async def with_wire(n: str) -> object:
        return await adapter.lookup_answer(n, "MX")

    c_ares = aiodns.DNSResolver(nameservers=[f"127.0.0.1:{port}"], timeout=3)

    async def with_aiodns(n: str) -> object:
        return await c_ares.query_dns(n, "MX")

    print(f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}; {args.names:,} distinct names, "
          f"{args.concurrency} in flight")  # fmt: skip
    for round_ in range(2):
        for name, lookup in (
            ("asyncresolver", with_resolver),
            ("asyncquery", with_asyncquery),
            ("wire", with_wire),
            ("aiodns", with_aiodns),
        ):
            names = [f"company{i}-{round_}-{name}.example." for i in range(args.names)]
            await run(name, lookup, names, args.concurrency)
    await adapter.aclose()
    await c_ares.close()
    socket.socket  # noqa: B018 - imported for the server's source only


if __name__ == "__main__":
    asyncio.run(main())
