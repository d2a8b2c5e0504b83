"""The `link-domains` worker's schedule on the injectable clock: every minute for the first hour after a link
domain is set, then hourly, `failed` after a day without DNS (and then left alone until a person checks),
and the certificate tried at once when DNS was right at the start."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select

from outreach_core.kernel.db.tables import link_domains
from outreach_core.kernel.ports import FixedClock
from outreach_core.kernel.runtime import Runtime
from outreach_core.link_domain.endpoints import ENDPOINTS
from outreach_core.link_domain.operations import check_link_domain, get_link_domain, set_link_domain
from outreach_core.link_domain.schemas import SetLinkDomainIn
from tests.conftest import MakeWorkspace
from tests.dns_server import DnsServer
from tests.link_domain.conftest import TARGET, MakeClockRuntime, TlsServer
from workers import link_domains as worker


def _endpoint(op: Any) -> Any:
    return next(e for e in ENDPOINTS if e.operation is op)


async def _row(rt: Runtime, workspace_id: str) -> Any:
    async with rt.engine.connect() as conn:
        return (
            await conn.execute(select(link_domains).where(link_domains.c.workspace_id == workspace_id))
        ).one()


def _publish(dns: DnsServer, hostname: str) -> None:
    dns.remove(hostname, "CNAME")
    dns.remove(hostname, "A")
    dns.add(hostname, "CNAME", f"{TARGET}.")
    dns.add(hostname, "A", "127.0.0.1")


async def test_every_minute_for_an_hour_then_hourly_then_failed_after_a_day(
    make_workspace: MakeWorkspace, clock_runtime: MakeClockRuntime
) -> None:
    start = dt.datetime.now(dt.UTC)
    clock = FixedClock(start)
    rt = clock_runtime(clock)
    ws = await make_workspace()
    principal = await ws.principal()
    name = f"links.{ws.slug}.example.com"
    body = SetLinkDomainIn(hostname=name)
    shown = await rt.call(principal, _endpoint(set_link_domain), body=body)
    assert shown.status == "pending_dns"
    assert (await _row(rt, ws.workspace_id)).next_check_at == start + dt.timedelta(minutes=1)

    clock.advance(seconds=30)
    await worker.tick(rt)
    assert (await _row(rt, ws.workspace_id)).checked_at == start  # not due yet

    clock.advance(seconds=31)
    await worker.tick(rt)
    row = await _row(rt, ws.workspace_id)
    assert row.checked_at == clock.now() and row.status == "pending_dns" and row.dns == "missing"
    assert row.next_check_at == clock.now() + dt.timedelta(minutes=1)

    clock.set(start + dt.timedelta(minutes=59, seconds=30))
    await worker.tick(rt)
    assert (await _row(rt, ws.workspace_id)).next_check_at == clock.now() + dt.timedelta(minutes=1)

    clock.set(start + dt.timedelta(hours=1, minutes=1))
    await worker.tick(rt)
    row = await _row(rt, ws.workspace_id)
    assert row.checked_at == clock.now() and row.next_check_at == clock.now() + dt.timedelta(hours=1)

    clock.set(start + dt.timedelta(hours=23))
    await worker.tick(rt)
    assert (await _row(rt, ws.workspace_id)).status == "pending_dns"

    clock.set(start + dt.timedelta(days=1, minutes=1))
    await worker.tick(rt)
    row = await _row(rt, ws.workspace_id)
    assert row.status == "failed" and row.next_check_at is None
    failed = await rt.read(principal, get_link_domain)
    assert failed.status == "failed" and "for a day" in (failed.message or "")

    clock.advance(hours=5)
    await worker.tick(rt)
    assert (await _row(rt, ws.workspace_id)).checked_at == start + dt.timedelta(days=1, minutes=1)


async def test_a_check_by_a_person_restarts_a_failed_link_domain(
    make_workspace: MakeWorkspace, clock_runtime: MakeClockRuntime, dns_server: DnsServer
) -> None:
    start = dt.datetime.now(dt.UTC)
    clock = FixedClock(start)
    rt = clock_runtime(clock)
    ws = await make_workspace()
    principal = await ws.principal()
    name = f"links.{ws.slug}.example.com"
    await rt.call(principal, _endpoint(set_link_domain), body=SetLinkDomainIn(hostname=name))
    clock.advance(days=1, minutes=5)
    await worker.tick(rt)
    assert (await _row(rt, ws.workspace_id)).status == "failed"

    clock.advance(hours=3)
    checked = await rt.call(principal, _endpoint(check_link_domain))  # still no DNS: a new day begins
    assert checked.status == "pending_dns"
    row = await _row(rt, ws.workspace_id)
    assert row.since == clock.now() and row.next_check_at == clock.now() + dt.timedelta(minutes=1)


async def test_dns_right_at_the_start_gets_its_certificate_tried_at_once(
    make_workspace: MakeWorkspace,
    clock_runtime: MakeClockRuntime,
    dns_server: DnsServer,
    tls_server: TlsServer,
) -> None:
    clock = FixedClock(dt.datetime.now(dt.UTC))
    rt = clock_runtime(clock)
    ws = await make_workspace()
    principal = await ws.principal()
    name = f"links.{ws.slug}.example.com"
    _publish(dns_server, name)
    tls_server.present(name)
    shown = await rt.call(principal, _endpoint(set_link_domain), body=SetLinkDomainIn(hostname=name))
    assert (shown.status, shown.dns, shown.tls) == ("pending_tls", "ok", "pending")
    assert (await _row(rt, ws.workspace_id)).next_check_at == clock.now()  # due at once
    assert await worker.tick(rt) >= 1
    active = await rt.read(principal, get_link_domain)
    assert active.status == "active" and active.verified_at == clock.now()
    assert (await _row(rt, ws.workspace_id)).next_check_at == clock.now() + dt.timedelta(hours=1)

    # The CNAME removed later: links stop using it at the next check, and a new schedule begins.
    dns_server.remove(name, "CNAME")
    dns_server.remove(name, "A")
    clock.advance(hours=1, seconds=1)
    await worker.tick(rt)
    row = await _row(rt, ws.workspace_id)
    assert row.status == "pending_dns" and row.since == clock.now()
    assert row.next_check_at == clock.now() + dt.timedelta(minutes=1)


async def test_a_failed_claim_is_released_to_the_next_workspace(
    make_workspace: MakeWorkspace, clock_runtime: MakeClockRuntime
) -> None:
    """A workspace that never got DNS for a host name does not own the domain: after its claim failed,
    another workspace may set the name (and the failed one then shows none)."""
    clock = FixedClock(dt.datetime.now(dt.UTC))
    rt = clock_runtime(clock)
    squatter, owner = await make_workspace(), await make_workspace()
    name = f"links.{owner.slug}.example.com"
    claim = _endpoint(set_link_domain)
    await rt.call(await squatter.principal(), claim, body=SetLinkDomainIn(hostname=name))
    refused = None
    try:
        await rt.call(await owner.principal(), claim, body=SetLinkDomainIn(hostname=name))
    except Exception as exc:
        refused = exc
    assert refused is not None and getattr(refused, "status", None) == 409

    clock.advance(days=1, minutes=2)
    await worker.tick(rt)
    assert (await _row(rt, squatter.workspace_id)).status == "failed"
    taken = await rt.call(await owner.principal(), claim, body=SetLinkDomainIn(hostname=name))
    assert taken.hostname == name and taken.status == "pending_dns"
    assert (await rt.read(await squatter.principal(), get_link_domain)).status == "none"


async def test_a_check_of_a_host_name_changed_meanwhile_is_not_written(
    make_workspace: MakeWorkspace, clock_runtime: MakeClockRuntime
) -> None:
    from outreach_core.link_domain.pipeline import claim_due_checks, record_checks
    from outreach_core.link_domain.rules import Dns, Tls

    clock = FixedClock(dt.datetime.now(dt.UTC))
    rt = clock_runtime(clock)
    ws = await make_workspace()
    principal = await ws.principal()
    old, new = f"links.{ws.slug}.example.com", f"go.{ws.slug}.example.com"
    await rt.call(principal, _endpoint(set_link_domain), body=SetLinkDomainIn(hostname=old))
    clock.advance(minutes=2)
    claimed = [c for c in await rt.system(claim_due_checks, 10_000) if c.workspace_id == ws.workspace_id]
    assert [c.hostname for c in claimed] == [old]
    await rt.call(principal, _endpoint(set_link_domain), body=SetLinkDomainIn(hostname=new))
    await rt.system(record_checks, [(claimed[0], Dns("ok"), Tls("verified"))])
    row = await _row(rt, ws.workspace_id)
    assert (row.hostname, row.status) == (new, "pending_dns")
