"""The verify worker end to end: a real DNS server for mail servers and a real HTTP verifier API."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.targets.schemas import LeadTarget, TargetIn
from outreach_core.verification.operations import verify_leads
from outreach_core.verification.pipeline import Outcome, claim_leads_to_verify, record_verification
from outreach_core.verification.rules import MARKER_PREFIX, Verdict, previous_attempts
from tests.conftest import MakeWorkspace, free_port
from tests.dns_server import DnsServer
from tests.verification.conftest import API_KEY, MakeRuntime, VerifierApi
from tests.verification.helpers import (
    State,
    add_import,
    add_leads,
    drain,
    states,
    undeliverable,
    unique,
)
from workers import enrich, verify


def mail_domain(dns_server: DnsServer, tag: str = "mail") -> str:
    domain = unique(tag)
    dns_server.add(domain, "MX", f"10 mx.{domain}.")
    return domain


def web_only_domain(dns_server: DnsServer) -> str:
    """A domain that exists (an A record) but publishes no MX."""
    domain = unique("web")
    dns_server.add(domain, "A", "192.0.2.10")
    return domain


def summary(found: list[State]) -> list[tuple[str, str | None]]:
    return [(s.status, s.reason) for s in found]


async def test_local_checks_without_a_verifier(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    mail, web = mail_domain(dns_server), web_only_domain(dns_server)
    emails = [
        f"jane@{mail}",
        f"info@{mail}",
        f"no-reply@{mail}",
        f"jane@{web}",
        f"jane@{unique('nxdomain')}",
        "jane@mailinator.com",
        "not an address",
    ]
    ids = await add_leads(ws, emails, verify_api=True)  # queued with the API, but none is configured
    rt = make_runtime(api=False)
    before = len(verifier_api.requests)
    assert await drain(rt) >= len(ids)
    found = await states(ws, ids)
    assert summary(found) == [
        ("valid", "local checks only"),
        ("risky", "role account"),
        ("risky", "role account"),
        ("invalid", "no mail server"),
        ("invalid", "no mail server"),
        ("invalid", "disposable domain"),
        ("invalid", "syntax"),
    ]
    assert all(s.verified_at == rt.ports.clock.now() for s in found)
    assert len(verifier_api.requests) == before


@pytest.mark.parametrize("status", ["valid", "invalid", "risky", "catch_all", "unknown"])
async def test_the_verifier_api_decides(
    status: str,
    make_workspace: MakeWorkspace,
    make_runtime: MakeRuntime,
    dns_server: DnsServer,
    verifier_api: VerifierApi,
) -> None:
    ws = await make_workspace()
    email = f"person@{mail_domain(dns_server)}"
    verifier_api.verdict(email, status, f"api says {status}")
    [lead] = await add_leads(ws, [email], verify_api=True)
    await drain(make_runtime())
    [found] = await states(ws, [lead])
    assert (found.status, found.reason) == (status, f"api says {status}")
    assert verifier_api.calls_for(email) == 1
    headers, _ = next(r for r in verifier_api.requests if r[1] == {"email": email})
    assert headers["Authorization"] == f"Bearer {API_KEY}"
    assert headers["Content-Type"] == "application/json"


async def test_api_is_not_asked_for_locally_invalid_addresses_and_cannot_clear_role_accounts(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    mail = mail_domain(dns_server)
    role, dead, bad_role = f"sales@{mail}", f"jane@{unique('nx')}", f"office@{mail}"
    verifier_api.verdict(role, "valid")
    verifier_api.verdict(bad_role, "invalid", "mailbox does not exist")
    ids = await add_leads(ws, [role, dead, "x@mailinator.com", bad_role], verify_api=True)
    await drain(make_runtime())
    assert summary(await states(ws, ids)) == [
        ("risky", "role account"),
        ("invalid", "no mail server"),
        ("invalid", "disposable domain"),
        ("invalid", "mailbox does not exist"),
    ]
    assert verifier_api.calls_for(dead) == 0 and verifier_api.calls_for("x@mailinator.com") == 0
    assert verifier_api.calls_for(role) == 1


async def test_leads_queued_without_the_api_get_local_checks_only(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    email = f"jane@{mail_domain(dns_server)}"
    [lead] = await add_leads(ws, [email], verify_api=False)  # e.g. an import with verify off
    await drain(make_runtime())
    assert summary(await states(ws, [lead])) == [("valid", "local checks only")]
    assert verifier_api.calls_for(email) == 0


@pytest.mark.parametrize(
    ("failure", "what"),
    [("http500", "HTTP 500"), ("timeout", "no answer: timed out"), ("garbage", "malformed answer")],
)
async def test_api_failures_are_retried_with_back_off_then_the_local_result_stays(
    failure: str,
    what: str,
    make_workspace: MakeWorkspace,
    make_runtime: MakeRuntime,
    dns_server: DnsServer,
    verifier_api: VerifierApi,
) -> None:
    ws = await make_workspace()
    mail = mail_domain(dns_server)
    person, role = f"jane-{failure}@{mail}", f"info+{failure}@{mail}"
    for email in (person, role):
        if failure == "http500":
            verifier_api.answer(email, 500, json_body={"error": "boom"})
        elif failure == "timeout":
            verifier_api.answer(email, json_body={"status": "invalid"}, delay_s=1.0)
        else:
            verifier_api.answer(email, raw=b"<html>gateway</html>")
    ids = await add_leads(ws, [person, role], verify_api=True)
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(clock=clock, timeout_s=0.3)

    for attempt, wait in [(1, 1), (2, 5), (3, 30)]:
        await drain(rt)
        for found in await states(ws, ids):
            assert found.status == "verifying" and found.verified_at is None
            assert found.reason is not None and found.reason.startswith(MARKER_PREFIX)
            assert f"(attempt {attempt} failed: verifier API: {what})" in found.reason
        clock.advance(minutes=wait - 0.5)
        await drain(rt)  # not due yet
        assert verifier_api.calls_for(person) == attempt
        clock.advance(minutes=0.5, seconds=1)

    await drain(rt)
    assert summary(await states(ws, ids)) == [
        ("valid", f"local checks only; verifier API failed ({what})"),
        ("risky", f"role account; verifier API failed ({what})"),
    ]
    assert verifier_api.calls_for(person) == 4 and verifier_api.calls_for(role) == 4


async def test_a_recovered_api_decides_on_retry(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    email = f"jane@{mail_domain(dns_server)}"
    verifier_api.answer(email, 503)
    verifier_api.verdict(email, "catch_all", "domain accepts all")
    [lead] = await add_leads(ws, [email], verify_api=True)
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(clock=clock)
    await drain(rt)
    assert (await states(ws, [lead]))[0].status == "verifying"
    clock.advance(minutes=2)
    await drain(rt)
    assert summary(await states(ws, [lead])) == [("catch_all", "domain accepts all")]


async def test_failed_lookups_are_retried_then_unknown(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime
) -> None:
    ws = await make_workspace()
    [lead] = await add_leads(ws, [f"jane@{unique('dnsdown')}"])
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(api=False, clock=clock, nameservers=f"127.0.0.1:{free_port()}")  # nobody answers
    await drain(rt)
    [found] = await states(ws, [lead])
    assert found.status == "verifying" and "(attempt 1 failed: mail server lookup failed)" in str(
        found.reason
    )
    for minutes in (1, 5, 30):
        clock.advance(minutes=minutes, seconds=1)
        await drain(rt)
    assert summary(await states(ws, [lead])) == [("unknown", "mail server lookup failed")]


async def test_the_api_settles_a_failed_lookup(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    email = f"jane@{unique('dnsdown')}"
    verifier_api.verdict(email, "valid", "smtp accepted")
    [lead] = await add_leads(ws, [email], verify_api=True)
    await drain(make_runtime(nameservers=f"127.0.0.1:{free_port()}"))
    assert summary(await states(ws, [lead])) == [("valid", "smtp accepted")]


async def test_a_dead_workers_claim_expires_and_counts_as_an_attempt(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    email = f"jane@{mail_domain(dns_server)}"
    [lead] = await add_leads(ws, [email], verify_api=True)
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(clock=clock)
    claimed = await rt.system(claim_leads_to_verify, verify.BATCH)  # a worker that then dies
    mine = [c for c in claimed if c.id == lead]
    assert len(mine) == 1 and mine[0].attempt == 1 and mine[0].first_time
    [held] = await states(ws, [lead])
    assert held.reason == mine[0].marker and previous_attempts(held.reason) == 1

    await drain(rt)  # the claim still holds
    assert (await states(ws, [lead]))[0].reason == mine[0].marker
    assert verifier_api.calls_for(email) == 0

    clock.advance(minutes=30)  # past the lease
    reclaimed = [c for c in await rt.system(claim_leads_to_verify, verify.BATCH) if c.id == lead]
    assert reclaimed[0].attempt == 2
    clock.advance(hours=2)
    await drain(rt)
    assert summary(await states(ws, [lead])) == [("valid", None)]
    assert verifier_api.calls_for(email) == 1


async def test_a_stale_result_never_overwrites_a_newer_queueing(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    email = f"jane@{mail_domain(dns_server)}"
    [lead] = await add_leads(ws, [email])
    rt = make_runtime(api=False)
    claimed = [c for c in await rt.system(claim_leads_to_verify, verify.BATCH) if c.id == lead]
    # The user queues the lead again while the worker is still busy with it.
    queued = await rt.execute(await ws.principal(), verify_leads, TargetIn(target=LeadTarget(ids=[lead])))
    assert queued.queued == 1
    await rt.system(record_verification, [Outcome(claimed[0], Verdict("invalid", "stale"))])
    [found] = await states(ws, [lead])
    assert (found.status, found.reason, found.verified_at) == ("verifying", None, None)
    await drain(rt)
    assert summary(await states(ws, [lead])) == [("valid", "local checks only")]


async def test_concurrent_workers_verify_each_lead_once(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    mail = mail_domain(dns_server)
    emails = [f"p{i}-{mail.split('.')[0]}@{mail}" for i in range(60)]
    ids = await add_leads(ws, emails, verify_api=True)
    clock = FixedClock(datetime.now(UTC))
    workers = [make_runtime(clock=clock) for _ in range(3)]

    async def work(rt: object) -> None:
        for _ in range(100):
            if await verify.tick(rt, 7) == 0:  # type: ignore[arg-type]
                return

    await asyncio.gather(*(work(rt) for rt in workers))
    assert {s.status for s in await states(ws, ids)} == {"valid"}
    assert [verifier_api.calls_for(e) for e in emails] == [1] * len(emails)


async def test_undeliverable_counts_an_imports_leads_once(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    mail = mail_domain(dns_server)
    import_id, other_import = await add_import(ws), await add_import(ws)
    dead = [f"a@{unique('nx')}", "b@mailinator.com", "not an address"]
    ids = await add_leads(ws, [*dead, f"ok@{mail}"], import_id=import_id)
    # verified before (e.g. earlier run): an invalid result now is not a new undeliverable
    earlier = datetime.now(UTC) - timedelta(days=3)
    await add_leads(ws, [f"c@{unique('nx')}"], import_id=import_id, verified_at=earlier)
    await add_leads(ws, [f"d@{unique('nx')}"], import_id=other_import)
    await add_leads(ws, [f"e@{unique('nx')}"])  # no import
    rt = make_runtime(api=False)
    await drain(rt)
    assert [s.status for s in await states(ws, ids)] == ["invalid", "invalid", "invalid", "valid"]
    assert await undeliverable(ws, import_id) == 3
    assert await undeliverable(ws, other_import) == 1

    # Verifying the same leads again does not count them twice.
    await rt.execute(await ws.principal(), verify_leads, TargetIn(target=LeadTarget(ids=ids)))
    await drain(rt)
    assert await undeliverable(ws, import_id) == 3


async def test_a_lead_whose_attempts_never_finish_ends_unknown(
    make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer, verifier_api: VerifierApi
) -> None:
    ws = await make_workspace()
    email = f"jane@{mail_domain(dns_server)}"
    [lead] = await add_leads(ws, [email], verify_api=True)
    clock = FixedClock(datetime.now(UTC))
    rt = make_runtime(clock=clock)
    for attempt in range(1, 5):  # four workers each claim it and die
        mine = [c for c in await rt.system(claim_leads_to_verify, verify.BATCH) if c.id == lead]
        assert [c.attempt for c in mine] == [attempt]
        clock.advance(hours=1)
    await drain(rt)
    assert summary(await states(ws, [lead])) == [("unknown", "verification did not finish")]
    assert verifier_api.calls_for(email) == 0


async def drain_enrichment(rt: Runtime) -> int:
    total = 0
    for _ in range(100):
        handled = await enrich.tick(rt)
        if handled == 0:
            return total
        total += handled
    raise AssertionError("the enrich worker did not run dry")


async def test_a_verification_looks_up_a_domain_cached_without_mail_servers_again(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, make_runtime: MakeRuntime, dns_server: DnsServer
) -> None:
    """A domain publishes no MX (its zone says negative answers may be cached for an hour): the lead is
    enriched and verified invalid. The MX is published; a verification asked for within that hour looks
    the domain up again, and the lead is valid."""
    ws = await make_workspace()
    domain = web_only_domain(dns_server)
    dns_server.soa(domain, minimum=3600, ttl=3600)
    created = await http.post("/api/v1/leads", headers=ws.headers, json={"email": f"jane@{domain}"})
    lead = created.json()["id"]
    rt = make_runtime(api=False)
    # the enrich worker serves every workspace: leads earlier tests left unenriched may come first
    assert await drain_enrichment(rt) >= 1
    assert dns_server.queries_for(domain) == 1

    async def verify_now() -> State:
        queued = await http.post("/api/v1/leads/verify", headers=ws.headers, json={"target": {"ids": [lead]}})
        assert queued.json() == {"queued": 1, "api": False}
        await drain(rt)
        [found] = await states(ws, [lead])
        return found

    assert ((found := await verify_now()).status, found.reason) == ("invalid", "no mail server")
    assert dns_server.queries_for(domain) == 2  # asked again, not read from the enrichment's answer
    dns_server.add(domain, "MX", f"10 mx.{domain}.")
    rt.ports.clock.advance(minutes=1)  # type: ignore[attr-defined]
    assert ((found := await verify_now()).status, found.reason) == ("valid", "local checks only")
    assert dns_server.queries_for(domain) == 3
