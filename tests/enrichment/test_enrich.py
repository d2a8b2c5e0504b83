"""Enrichment against the session database and a real DNS server on loopback (tests/dns_server.py).

Every test uses domains of its own (`unique_domain`): the domain cache is global and the DNS server and the
database live for the whole session. `enrich_pending` is called for the test's workspace only, so leads that
other tests leave waiting are not resolved against this test's records.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from outreach_app.adapters import DnspythonResolver
from outreach_core.auth.authenticate import authenticate_api_key
from outreach_core.enrichment import pipeline
from outreach_core.enrichment.pipeline import enrich_pending
from outreach_core.kernel.db.migrate import migrate
from outreach_core.kernel.db.tables import domain_lookups_wanted
from outreach_core.kernel.ports import FixedClock, Ports
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.targets.mail_domains import DomainInfo, mx_for_domains
from outreach_core.workspace.setup import init_workspace
from tests.conftest import MakeWorkspace, WorkspaceHandle
from tests.dns_server import DnsServer
from tests.enrichment.helpers import (
    add_import,
    add_leads,
    cache_row,
    import_row,
    lead_rows,
    unique_domain,
    update_leads,
)
from tests.leads.helpers import import_chunk, listing, merge_imports
from tests.test_cli import OUTREACH, ROOT, _env
from workers import enrich as enrich_worker
from workers import search_index as search_index_worker
from workers.loop import Worker, run_workers
from workers.registry import ALL_WORKERS


async def enrich(runtime: Runtime, ws: WorkspaceHandle, **kwargs: Any) -> int:
    return await runtime.system(enrich_pending, workspace_id=ws.workspace_id, **kwargs)


@pytest.fixture
def silent_dns() -> Iterator[str]:
    """A UDP port that receives DNS queries and never answers (`host:port`)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}"
    finally:
        sock.close()


def runtime_with(base: Runtime, **ports: Any) -> Runtime:
    """The session database with other ports (the engine is shared: never dispose it)."""
    return Runtime(base.settings, engine=base.engine, ports=Ports(**ports))


# --- email provider and mail server -------------------------------------------------------------------------


async def test_each_provider_is_detected_from_mx_records(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    cases: list[tuple[str, list[str], str | None]] = [
        ("google", ["5 alt1.aspmx.l.google.com.", "1 aspmx.l.google.com."], "aspmx.l.google.com"),
        ("microsoft", ["0 {label}.mail.protection.outlook.com."], "{label}.mail.protection.outlook.com"),
        ("yahoo", ["1 mta5.am0.yahoodns.net.", "1 mta6.am0.yahoodns.net."], "mta5.am0.yahoodns.net"),
        ("proton", ["10 mail.protonmail.ch.", "20 mailsec.protonmail.ch."], "mail.protonmail.ch"),
        ("icloud", ["10 mx01.mail.icloud.com.", "10 mx02.mail.icloud.com."], "mx01.mail.icloud.com"),
        ("zoho", ["10 mx.zoho.eu.", "20 mx2.zoho.eu."], "mx.zoho.eu"),
        ("other", ["10 mx.hosting-example.net."], "mx.hosting-example.net"),
        # a gateway preferred over Google: mail lands at the gateway first
        ("other", ["10 eu-smtp-inbound-1.mimecast.com.", "20 aspmx.l.google.com."], None),
    ]
    domains = []
    for esp, records, _ in cases:
        domain = unique_domain(esp)
        label = domain.replace(".", "-")
        dns_server.add(domain, "MX", *(r.format(label=label) for r in records))
        domains.append(domain)
    ids = await add_leads(ws, *({"email": f"ceo@{d}"} for d in domains))

    assert await enrich(dns_runtime, ws) == len(cases)

    for row, domain, (esp, _, mx_host) in zip(await lead_rows(ws, ids), domains, cases, strict=True):
        label = domain.replace(".", "-")
        expected_mx = (mx_host or "eu-smtp-inbound-1.mimecast.com").format(label=label)
        assert (row.esp, row.mx_host) == (esp, expected_mx), domain
        assert row.enriched_at is not None
        cached = await cache_row(dns_runtime, domain)
        assert cached is not None and (cached.esp, cached.mx_host, cached.has_mx) == (esp, expected_mx, True)
    assert await enrich(dns_runtime, ws) == 0  # nothing left to do


async def test_consumer_domains_need_no_dns(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    consumer = {
        "gmail.com": "google",
        "hotmail.co.uk": "microsoft",
        "outlook.com": "microsoft",
        "yahoo.fr": "yahoo",
        "proton.me": "proton",
        "icloud.com": "icloud",
        "zoho.com": "zoho",
    }
    before = {d: dns_server.queries_for(d) for d in consumer}
    ids = await add_leads(ws, *({"email": f"someone-{uuid_part(d)}@{d}"} for d in consumer))

    await enrich(dns_runtime, ws)

    rows = await lead_rows(ws, ids)
    assert [r.esp for r in rows] == list(consumer.values())
    assert all(r.mx_host is None and r.enriched_at is not None for r in rows)
    assert {d: dns_server.queries_for(d) for d in consumer} == before
    assert [await cache_row(dns_runtime, d) for d in consumer] == [None] * len(consumer)  # a table, no cache
    answers = await dns_runtime.system(mx_for_domains, list(consumer))
    assert answers["gmail.com"] == DomainInfo("google", None, has_mx=True)
    assert {d: dns_server.queries_for(d) for d in consumer} == before


def uuid_part(domain: str) -> str:
    return domain.split(".")[0]


async def test_one_lookup_per_domain_however_many_leads(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    first, second = unique_domain("many"), unique_domain("many")
    dns_server.add(first, "MX", "1 aspmx.l.google.com.")
    dns_server.add(second, "MX", "0 x.mail.protection.outlook.com.")
    ids = await add_leads(
        ws,
        *({"email": f"person{i}@{first}"} for i in range(200)),
        *({"email": f"p{i}@{second}"} for i in range(30)),
    )

    assert await enrich(dns_runtime, ws) == 230
    assert dns_server.queries_for(first) == 1
    assert dns_server.queries_for(second) == 1
    rows = await lead_rows(ws, ids)
    assert {r.esp for r in rows[:200]} == {"google"} and {r.esp for r in rows[200:]} == {"microsoft"}

    # A later batch on the same domains is answered by the cache.
    more = await add_leads(ws, *({"email": f"late{i}@{first}"} for i in range(50)))
    assert await enrich(dns_runtime, ws) == 50
    assert dns_server.queries_for(first) == 1
    assert {(r.esp, r.mx_host) for r in await lead_rows(ws, more)} == {("google", "aspmx.l.google.com")}


async def test_limit_takes_a_batch_at_a_time(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = unique_domain("batch")
    dns_server.add(domain, "MX", "10 mx.zoho.com.")
    await add_leads(ws, *({"email": f"b{i}@{domain}"} for i in range(25)))
    assert [await enrich(dns_runtime, ws, limit=10) for _ in range(4)] == [10, 10, 5, 0]
    assert dns_server.queries_for(domain) == 1


async def test_cache_expires(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    """Mail servers are trusted for a week; "no mail servers" for the negative TTL the zone's SOA gives (at
    most an hour), or five minutes when the answer carries no SOA."""
    ws = await make_workspace()
    clock = FixedClock(datetime.now(UTC))
    rt = runtime_with(dns_runtime, clock=clock, dns=dns_runtime.ports.dns)
    with_mx, short_zone, long_zone = unique_domain("ttl"), unique_domain("soa-300"), unique_domain("soa-day")
    dns_server.add(with_mx, "MX", "10 mx.example-host.net.")
    dns_server.soa(short_zone, minimum=300)  # NXDOMAIN under it: 5 minutes
    dns_server.soa(long_zone, minimum=86_400, ttl=86_400)  # a day, capped at an hour
    dns_server.add(long_zone, "A", "192.0.2.1")  # no MX: an empty answer, not NXDOMAIN
    domains = [with_mx, f"gone.{short_zone}", long_zone, unique_domain("no-soa")]

    async def round_trip() -> tuple[int, ...]:
        stamp = clock.now().timestamp()
        await add_leads(ws, *({"email": f"a{stamp}@{d}"} for d in domains))
        await enrich(rt, ws)
        return tuple(dns_server.queries_for(d) for d in domains)

    assert await round_trip() == (1, 1, 1, 1)
    cached = await cache_row(rt, long_zone)
    assert cached is not None and cached.expires_at == clock.now() + timedelta(hours=1)
    clock.advance(minutes=4)
    assert await round_trip() == (1, 1, 1, 1)
    clock.advance(minutes=2)  # 6 minutes: the SOA's 300 s and the 5 minutes without an SOA are over
    assert await round_trip() == (1, 2, 1, 2)
    clock.advance(minutes=55)  # 61 minutes: an hour at most, whatever the SOA says
    assert await round_trip() == (1, 3, 2, 3)
    clock.advance(days=7)  # mail servers are trusted for a week
    assert await round_trip() == (2, 4, 3, 4)


async def test_domains_without_mail_servers_are_unknown(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    nxdomain, a_only, null_mx = unique_domain("nx"), unique_domain("a-only"), unique_domain("null-mx")
    dns_server.add(a_only, "A", "192.0.2.1")
    dns_server.add(null_mx, "MX", "0 .")
    ids = await add_leads(ws, *({"email": f"x@{d}"} for d in (nxdomain, a_only, null_mx)))

    await enrich(dns_runtime, ws)

    for row, domain in zip(await lead_rows(ws, ids), (nxdomain, a_only, null_mx), strict=True):
        assert (row.esp, row.mx_host) == ("unknown", None)
        assert row.enriched_at is not None
        cached = await cache_row(dns_runtime, domain)
        assert cached is not None and (cached.has_mx, cached.esp, cached.mx_host) == (False, "unknown", None)
    answers = await dns_runtime.system(mx_for_domains, [nxdomain])
    assert answers[nxdomain] == DomainInfo("unknown", None, has_mx=False, lookup_failed=False)


async def test_a_dns_server_that_does_not_answer(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, silent_dns: str
) -> None:
    ws = await make_workspace()
    rt = runtime_with(dns_runtime, dns=DnspythonResolver(silent_dns, timeout_s=0.2))
    fresh, known = unique_domain("timeout"), unique_domain("timeout-known")
    ids = await add_leads(
        ws,
        {"email": f"new@{fresh}"},
        # re-enrichment of a lead whose provider was found earlier: a failed lookup does not erase it
        {"email": f"old@{known}", "esp": "google", "mx_host": "aspmx.l.google.com"},
    )

    assert await enrich(rt, ws) == 2

    new, old = await lead_rows(ws, ids)
    assert (new.esp, new.mx_host) == ("unknown", None) and new.enriched_at is not None
    assert (old.esp, old.mx_host) == ("google", "aspmx.l.google.com") and old.enriched_at is not None
    assert await cache_row(rt, fresh) is None  # not cached as "no mail servers": the next lead asks again
    answers = await rt.system(mx_for_domains, [fresh])
    assert answers[fresh] == DomainInfo("unknown", None, has_mx=False, lookup_failed=True)


async def test_without_a_dns_port_lookups_fail_loudly(
    make_workspace: MakeWorkspace, runtime: Runtime, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = unique_domain("no-port")
    dns_server.add(domain, "MX", "10 mx.zoho.com.")
    ids = await add_leads(ws, {"email": f"a@{domain}"}, {"email": "someone@gmail.com"})
    with pytest.raises(RuntimeError, match="no DNS resolver"):
        await enrich(runtime_with(runtime), ws)
    assert all(r.enriched_at is None for r in await lead_rows(ws, ids))  # rolled back, still waiting
    assert await enrich(dns_runtime, ws) == 2


async def test_mx_for_domains_keys_answers_as_given_and_uses_the_cache(
    dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    domain, missing = unique_domain("verify"), unique_domain("verify-nx")
    dns_server.add(domain, "MX", "20 mx2.zoho.eu.", "10 mx.zoho.eu.")
    spelled = domain.upper() + "."

    answers = await dns_runtime.system(mx_for_domains, [spelled, domain, missing, "gmail.com"])

    assert set(answers) == {spelled, domain, missing, "gmail.com"}
    assert answers[spelled] == answers[domain] == DomainInfo("zoho", "mx.zoho.eu", has_mx=True)
    assert answers[missing] == DomainInfo("unknown", None, has_mx=False)
    assert dns_server.queries_for(domain) == 1 and dns_server.queries_for(missing) == 1
    await dns_runtime.system(mx_for_domains, [domain, missing])
    assert dns_server.queries_for(domain) == 1 and dns_server.queries_for(missing) == 1


# --- country and timezone ---------------------------------------------------------------------------------


async def test_country_and_timezone_are_derived_and_given_values_kept(
    make_workspace: MakeWorkspace, dns_runtime: Runtime
) -> None:
    ws = await make_workspace()
    cases: list[tuple[dict[str, Any], tuple[str | None, str | None, str | None]]] = [
        # (lead facts, (country, countrySource, timezone) after enrichment)
        ({"tld": "de"}, ("DE", "email", "Europe/Berlin")),
        ({"phone": "+33 6 12 34 56 78"}, ("FR", "phone", "Europe/Paris")),
        ({"phone": "+1 212 555 0123"}, ("US", "phone", "America/New_York")),
        ({"timezone": "europe/berlin", "tld": "fr"}, ("DE", "timezone", "Europe/Berlin")),
        ({"timezone": "EST"}, ("US", "timezone", "America/New_York")),
        ({"website": "https://www.acme.it/chi-siamo"}, ("IT", "website", "Europe/Rome")),
        ({"phone": "+44 20 7946 0958", "tld": "de", "website": "acme.fr"}, ("GB", "phone", "Europe/London")),
        # a country the user gave is kept (re-spelled), whatever else the lead says
        ({"country": "de", "phone": "+33 6 12 34 56 78", "tld": "fr"}, ("DE", None, "Europe/Berlin")),
        ({"country": "US", "tld": "de"}, ("US", None, None)),
        # a country inferred earlier is inferred again from today's facts
        ({"country": "DE", "country_source": "email", "tld": "fr"}, ("FR", "email", "Europe/Paris")),
        # a timezone the user gave is kept even when it is not a zone we know
        ({"timezone": "Mars/Olympus", "tld": "de"}, ("DE", "email", "Mars/Olympus")),
        ({"timezone": "Asia/Tokyo", "country": "DE"}, ("DE", None, "Asia/Tokyo")),
        ({}, (None, None, None)),
    ]
    rows = []
    for facts, _ in cases:
        tld = facts.pop("tld", "com")
        rows.append({"email": f"lead@{unique_domain('geo', tld)}", **facts})
    ids = await add_leads(ws, *rows)

    await enrich(dns_runtime, ws)

    got = [(r.country, r.country_source, r.timezone) for r in await lead_rows(ws, ids)]
    assert got == [expected for _, expected in cases]


# --- imports ----------------------------------------------------------------------------------------------


async def test_imports_finish_when_enriched_and_verified(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = unique_domain("imp")
    dns_server.add(domain, "MX", "10 mx.zoho.com.")
    plain = await add_import(ws, status="enriching", verify=False)
    verified = await add_import(ws, status="enriching", verify=True)
    still_importing = await add_import(ws, status="importing", verify=False)
    empty = await add_import(ws, status="enriching", verify=False)
    now = datetime.now(UTC)
    await add_leads(ws, *({"email": f"p{i}@{domain}", "import_id": plain} for i in range(3)))
    verifying = await add_leads(
        ws,
        {"email": f"v1@{domain}", "import_id": verified, "verify_status": "verifying"},
        {"email": f"v2@{domain}", "import_id": verified, "verify_status": "valid"},
    )
    await add_leads(ws, {"email": f"i@{domain}", "import_id": still_importing, "enriched_at": now})

    assert await enrich(dns_runtime, ws) == 5 + 2  # five leads; `plain` and `empty` are done

    done = await import_row(ws, plain)
    assert done.status == "done" and done.enriched_at is not None and done.finished_at is not None
    assert (await import_row(ws, empty)).status == "done"
    waiting = await import_row(ws, verified)
    assert (waiting.status, waiting.finished_at) == ("enriching", None)
    assert waiting.enriched_at is not None  # enrichment is over; verification is not
    untouched = await import_row(ws, still_importing)
    assert (untouched.status, untouched.enriched_at, untouched.finished_at) == ("importing", None, None)

    await update_leads(ws, verifying[:1], verify_status="valid")
    assert await enrich(dns_runtime, ws) == 1
    assert (await import_row(ws, verified)).status == "done"
    assert (await import_row(ws, verified)).enriched_at == waiting.enriched_at
    assert await enrich(dns_runtime, ws) == 0


async def test_an_import_waits_for_its_last_lead(
    make_workspace: MakeWorkspace, dns_runtime: Runtime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = unique_domain("imp-batch")
    dns_server.add(domain, "MX", "10 mx.zoho.com.")
    imp = await add_import(ws, status="enriching", verify=False)
    await add_leads(ws, *({"email": f"l{i}@{domain}", "import_id": imp} for i in range(5)))
    assert await enrich(dns_runtime, ws, limit=3) == 3
    assert (await import_row(ws, imp)).status == "enriching"
    assert await enrich(dns_runtime, ws, limit=3) == 2 + 1
    assert (await import_row(ws, imp)).status == "done"


# --- the worker -------------------------------------------------------------------------------------------


async def test_worker_tick_enriches_across_workspaces(
    tmp_path: Path, settings: Settings, dns_server: DnsServer
) -> None:
    """On a database of its own: a tick takes every workspace's waiting leads, which would include leads
    other tests leave behind on the session database."""
    url = f"sqlite+aiosqlite:///{tmp_path / 'enrich-worker.db'}"
    rt = Runtime(
        settings.model_copy(update={"database_url": url}),
        ports=Ports(dns=DnspythonResolver(dns_server.nameservers, timeout_s=1.0)),
    )
    await migrate(rt.engine)
    try:
        handles = []
        for n in range(2):
            email = f"tick{n}-{os.getpid()}@example.com"
            made = await rt.system(
                init_workspace, email=email, name="Tick", workspace=f"T{n}", slug=f"tick-{n}", plan="growth"
            )
            await rt.system_read(authenticate_api_key, made.apiKey)
            handles.append(
                WorkspaceHandle(rt, made.apiKey, made.workspaceId, made.userId, made.slug, "owner", email)
            )
        domain = unique_domain("tick")
        dns_server.add(domain, "MX", "10 mx.zoho.eu.")
        first = await add_leads(handles[0], *({"email": f"u{i}@{domain}"} for i in range(3)))
        second = await add_leads(handles[1], {"email": f"u@{domain}"}, {"email": "x@gmail.com"})

        assert await enrich_worker.tick(rt) == 5
        assert await enrich_worker.tick(rt) == 0
        assert dns_server.queries_for(domain) == 1
        assert [r.esp for r in await lead_rows(handles[0], first)] == ["zoho"] * 3
        assert [r.esp for r in await lead_rows(handles[1], second)] == ["zoho", "google"]
    finally:
        await rt.dispose()


async def _stored_with_a_part_queued(
    http: httpx.AsyncClient, ws: WorkspaceHandle, stored: list[dict[str, Any]], queued: list[dict[str, Any]]
) -> str:
    """An import whose first chunk (`stored`) is merged and whose final chunk (`queued`) waits in the queue:
    an import being stored. Returns its id."""
    first = await import_chunk(http, ws, rows=stored)
    await merge_imports(ws)
    import_id = str(first.json()["id"])
    waiting = await import_chunk(http, ws, importId=import_id, rows=queued, final=True)
    assert waiting.json()["queued"] == len(queued)
    return import_id


async def _zoho_import_being_stored(
    http: httpx.AsyncClient, ws: WorkspaceHandle, dns_server: DnsServer, tag: str
) -> tuple[str, str]:
    """A domain no other test uses, its mail at Zoho, and an import being stored with one lead at it merged
    and one queued (`_stored_with_a_part_queued`). Returns the domain and the import's id."""
    domain = unique_domain(tag)
    dns_server.add(domain, "MX", "10 mx.zoho.eu.")
    stored, queued = [{"email": f"first@{domain}"}], [{"email": f"second@{domain}"}]
    return domain, await _stored_with_a_part_queued(http, ws, stored, queued)


async def _store_and_enrich(ws: WorkspaceHandle) -> None:
    """The queued part merged and every lead enriched: nothing left waiting for the next test."""
    await merge_imports(ws)
    while await enrich(ws.runtime, ws):
        pass


async def test_domains_are_looked_up_while_an_import_is_stored(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    """While a part of an import is queued the worker writes no lead (storing comes first), but it looks
    up the domains of the leads already stored, so that the part still queued stores its leads enriched and
    the worker has less left to do once the import is stored."""
    ws = await make_workspace()
    domain, import_id = await _zoho_import_being_stored(http, ws, dns_server, "storing")

    # domains other tests' merges noted may come first
    for _ in range(20):
        await enrich_worker.tick(ws.runtime)
        if dns_server.queries_for(domain):
            break
    assert dns_server.queries_for(domain) == 1
    [stored] = (await listing(http, ws))["leads"]
    [row] = await lead_rows(ws, [stored["id"]])
    assert row.enriched_at is None and row.esp == "unknown"  # no lead written while a part is queued

    await merge_imports(ws)
    by_email = {lead["email"]: lead for lead in (await listing(http, ws))["leads"]}
    [second] = await lead_rows(ws, [by_email[f"second@{domain}"]["id"]])
    assert second.enriched_at is not None  # stored enriched: its domain was in the cache
    assert (second.esp, second.mx_host) == ("zoho", "mx.zoho.eu")
    assert (await import_row(ws, import_id)).status == "enriching"

    assert await enrich(ws.runtime, ws) == 1 + 1  # the first lead, and the import finished
    assert dns_server.queries_for(domain) == 1
    [first_row] = await lead_rows(ws, [by_email[f"first@{domain}"]["id"]])
    assert (first_row.esp, first_row.mx_host) == ("zoho", "mx.zoho.eu")
    assert (await import_row(ws, import_id)).status == "done"


async def test_a_domain_whose_lookup_fails_does_not_hold_the_others_back_while_storing(
    http: httpx.AsyncClient,
    make_workspace: MakeWorkspace,
    dns_server: DnsServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed lookup is not cached, so the domain is still waiting afterwards; the worker goes on with the
    next domain the merge met instead of asking for it again first (one domain a tick here)."""
    monkeypatch.setattr(pipeline, "DOMAIN_BATCH", 1)
    ws = await make_workspace()
    await _forget_noted_domains(ws.runtime)  # what other tests' merges noted
    tag = unique_domain("x").split(".")[0]
    failing, answering = f"0a-{tag}.com", f"0b-{tag}.com"
    dns_server.fail(failing)
    dns_server.add(answering, "MX", "10 mx.zoho.eu.")
    rows = [{"email": f"a@{failing}"}, {"email": f"b@{answering}"}]
    await _stored_with_a_part_queued(http, ws, rows, [{"email": f"c@{failing}"}])

    assert await enrich_worker.tick(ws.runtime) == 1  # the failing domain taken: nothing cached
    assert dns_server.queries_for(failing) >= 1 and dns_server.queries_for(answering) == 0
    assert await cache_row(ws.runtime, failing) is None
    asked = dns_server.queries_for(failing)
    assert await enrich_worker.tick(ws.runtime) == 1  # then the next one, not the failing one again
    assert dns_server.queries_for(answering) == 1 and dns_server.queries_for(failing) == asked
    await _store_and_enrich(ws)


async def _forget_noted_domains(runtime: Runtime) -> None:
    async with runtime.engine.begin() as conn:
        await conn.execute(domain_lookups_wanted.delete())


async def test_noted_domains_survive_a_restart_of_the_enrich_side(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    """The domains the merge notes are in the database, not in the memory of a process: an `enrich`
    worker started afterwards (another process's runtime: an engine of its own), after a restart or under
    `outreach serve` where the merge runs in another child, still looks them up while the import is being
    stored, and the part still queued stores its leads enriched."""
    ws = await make_workspace()
    domain, _ = await _zoho_import_being_stored(http, ws, dns_server, "restart")

    restarted = Runtime(ws.runtime.settings, ports=ws.runtime.ports)
    try:
        for _ in range(20):  # domains other tests' merges noted may come first
            await enrich_worker.tick(restarted)
            if dns_server.queries_for(domain):
                break
    finally:
        await restarted.dispose()
    assert dns_server.queries_for(domain) == 1
    cached = await cache_row(ws.runtime, domain)
    assert cached is not None and cached.esp == "zoho"
    await merge_imports(ws)
    by_email = {lead["email"]: lead for lead in (await listing(http, ws))["leads"]}
    [second] = await lead_rows(ws, [by_email[f"second@{domain}"]["id"]])
    assert (second.esp, second.enriched_at is not None) == ("zoho", True)
    await _store_and_enrich(ws)


async def test_a_domain_dns_says_not_to_cache_does_not_keep_the_worker_busy_while_storing(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    """An NXDOMAIN whose zone gives a negative TTL of 0 would be stored already expired: it is not stored,
    and leaves the noted domains like every domain taken, so the next tick finds nothing and the loop
    sleeps, instead of ticking again at once, forever (a DNS query and a write turn each time, beside the
    merge), for as long as the import is stored."""
    ws = await make_workspace()
    zone = f"0z-{unique_domain('x').split('.')[0]}.com"
    dns_server.soa(zone, minimum=0, ttl=0)
    domain = f"gone.{zone}"
    await _stored_with_a_part_queued(http, ws, [{"email": f"a@{domain}"}], [{"email": f"b@{domain}"}])

    for _ in range(20):
        handled = await enrich_worker.tick(ws.runtime)
        if dns_server.queries_for(domain) and handled == 0:
            break
    assert handled == 0, "the worker reported work on every tick: its loop would never sleep"
    assert dns_server.queries_for(domain) <= 2
    await _store_and_enrich(ws)


async def test_the_import_worker_wakes_enrichment_when_the_import_is_stored(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    """The enrich worker, asleep for its interval while a part was queued, starts the moment the import
    worker has drained the queue (here its interval is a minute: the import is done well before)."""
    ws = await make_workspace()
    _, import_id = await _zoho_import_being_stored(http, ws, dns_server, "wake")

    asleep = asyncio.Event()

    async def tick(runtime: Runtime) -> int:
        handled = await enrich_worker.tick(runtime)
        if not handled:
            asleep.set()
        return handled

    stop = asyncio.Event()
    running = asyncio.create_task(run_workers(ws.runtime, [Worker("enrich", tick, interval_s=60.0)], stop))
    try:
        await asyncio.wait_for(asleep.wait(), 30.0)
        assert (await import_row(ws, import_id)).status == "importing"
        await merge_imports(ws)  # the import worker's ticks, in this process: the last one finds nothing
        started = time.monotonic()
        while (await import_row(ws, import_id)).status != "done":
            assert time.monotonic() - started < 10.0, "the enrich worker was not woken"
            await asyncio.sleep(0.05)
    finally:
        stop.set()
        await running


async def _noted(runtime: Runtime, domain: str) -> bool:
    async with runtime.engine.connect() as conn:
        found = await conn.execute(
            domain_lookups_wanted.select().where(domain_lookups_wanted.c.domain == domain)
        )
        return found.first() is not None


async def test_a_noted_domain_looked_up_after_storing_is_no_longer_wanted(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    """Storing ended before the worker took a noted domain: the worker looks it up for the waiting leads
    after storing, and the domain leaves the noted ones, instead of being looked up again at the next
    import's storing."""
    ws = await make_workspace()
    domain, _ = await _zoho_import_being_stored(http, ws, dns_server, "after")
    assert await _noted(ws.runtime, domain)
    await merge_imports(ws)  # stored, before any enrich tick
    for _ in range(50):  # other tests' waiting leads may come first
        await enrich_worker.tick(ws.runtime)
        if dns_server.queries_for(domain):
            break
    assert dns_server.queries_for(domain) == 1
    assert not await _noted(ws.runtime, domain)
    await _store_and_enrich(ws)


async def test_the_merge_notes_no_domain_once_the_noted_ones_reach_their_bound(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`MAX_NOTED_DOMAINS` bounds the table: a part merged while it holds that many notes none of its
    domains (they wait for the worker after storing), one merged below it notes all of its own."""
    ws = await make_workspace()
    await _forget_noted_domains(ws.runtime)
    monkeypatch.setattr(pipeline, "MAX_NOTED_DOMAINS", 2)
    first = [unique_domain("bound") for _ in range(3)]
    later = [unique_domain("bound") for _ in range(2)]
    await _stored_with_a_part_queued(
        http, ws, [{"email": f"a@{d}"} for d in first], [{"email": f"b@{d}"} for d in later]
    )
    await merge_imports(ws)
    assert [await _noted(ws.runtime, d) for d in first + later] == [True] * 3 + [False] * 2
    await _forget_noted_domains(ws.runtime)
    await _store_and_enrich(ws)


async def test_the_enrich_worker_polls_soon_while_another_process_stores_an_import(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer, settings: Settings
) -> None:
    """Under `outreach serve` the `import` worker runs in another process, whose `wake` never reaches the
    enrich worker: while an import is being stored it polls within a quarter of a second instead of its
    interval (a minute here), so the import is done soon after the other process drained the queue; then it
    wakes the search index worker of its process (asleep for a minute too)."""
    ws = await make_workspace()
    _, import_id = await _zoho_import_being_stored(http, ws, dns_server, "elsewhere")
    stop = asyncio.Event()
    registered = ALL_WORKERS["enrich"]()
    assert registered.interval_s == 2.0
    slow = Worker("enrich", registered.tick, interval_s=60.0)
    indexing: list[int] = []

    async def index(runtime: Runtime) -> int:
        indexing.append(await search_index_worker.tick(runtime))
        return indexing[-1]

    asleep = Worker("search-index", index, interval_s=60.0)
    running = asyncio.create_task(run_workers(ws.runtime, [slow, asleep], stop))
    merger = subprocess.Popen(
        [*OUTREACH, "worker", "--only", "import"],
        env=_env(settings),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        while (await import_row(ws, import_id)).status != "done":
            assert time.monotonic() - started < 30.0, "the enrich worker waited out its interval"
            await asyncio.sleep(0.05)
        assert indexing[0] == 0  # storing comes first: it slept
        while len(indexing) < 2:
            assert time.monotonic() - started < 30.0, "the search index worker was not woken"
            await asyncio.sleep(0.05)
    finally:
        merger.send_signal(signal.SIGTERM)
        merger.wait(timeout=20)
        stop.set()
        await running
