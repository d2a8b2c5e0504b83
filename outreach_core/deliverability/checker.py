"""One domain check from start to finish: the lookups (network I/O, never inside a transaction), the
grading, and the 10-minute cache of reports (per process, bounded)."""

from __future__ import annotations

import time
from collections import OrderedDict
from datetime import datetime, timedelta

from outreach_core.deliverability.grading import grade
from outreach_core.deliverability.lookups import gather_facts
from outreach_core.deliverability.schemas import DomainReport
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.settings import Settings

CACHE_TTL = timedelta(minutes=10)
CACHE_SIZE = 2000

_CacheKey = tuple[str, str | None, int, str | None, str | None, str | None, bool]
_cache: OrderedDict[_CacheKey, DomainReport] = OrderedDict()


def _key(ports: Ports, settings: Settings, domain: str, selector: str | None) -> _CacheKey:
    """A report depends on the DNS port asked and on the settings that choose what is checked."""
    return (
        domain,
        selector,
        id(ports.dns),
        settings.rdap_url,
        settings.dnsbl_zones,
        settings.dbl_zones,
        settings.allow_private_urls,
    )


async def run_check(
    ports: Ports,
    settings: Settings,
    now: datetime,
    domain: str,
    selector: str | None,
    *,
    fresh: bool = False,
) -> DomainReport:
    """The check report of `domain` (normalised) and `selector`: from the cache when a check of the same
    question is under 10 minutes old (`cached: true`) unless `fresh`, else looked up now."""
    started = time.perf_counter()
    key = _key(ports, settings, domain, selector)
    hit = _cache.get(key)
    if hit is not None and not fresh and timedelta(0) <= now - hit.checked_at < CACHE_TTL:
        _cache.move_to_end(key)
        return hit.model_copy(update={"cached": True, "duration_ms": _ms(started)})
    if ports.dns is None:
        raise RuntimeError("no DNS resolver is configured (Ports.dns): domains cannot be checked")
    facts = await gather_facts(ports.dns, ports.http, settings, domain, selector)
    graded = grade(facts, now, allow_private=settings.allow_private_urls)
    report = DomainReport(
        domain=domain,
        selector=selector,
        exists=graded.exists,
        score=graded.score,
        grade=graded.grade,
        verdict=graded.verdict,
        mx_family=graded.mx_family,
        mx_label=graded.mx_label,
        checked_at=now,
        duration_ms=_ms(started),
        cached=False,
        checks=graded.checks,
    )
    _cache[key] = report
    _cache.move_to_end(key)
    while len(_cache) > CACHE_SIZE:
        _cache.popitem(last=False)
    return report


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 1)
