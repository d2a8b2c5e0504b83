"""The checker's network I/O: every DNS question of one domain check (and the RDAP request), asked
concurrently through the DNS port (`OUTREACH_DNS_NAMESERVERS`), each bounded by its own timeout. Runs in an
endpoint's `prepare` step or between a worker's transactions, never inside a transaction.

What comes back is `Facts`: answers or, per question, why there is none. Grading them is `rules` (pure).
A timeout or a server failure is kept as such (`Answer.error`), so the rules can say "could not check"
(`info`) instead of a wrong `fail`.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import dns.exception
import dns.name
import dns.resolver

from outreach_core.deliverability.facts import Answer, Facts, Rdap
from outreach_core.deliverability.records import (
    has_macro,
    is_dmarc,
    parse_mx,
    parse_spf,
    spf_records,
    txt_text,
)
from outreach_core.deliverability.rules import COMMON_SELECTORS, MAX_SPF_NAMES, organizational_domain
from outreach_core.kernel.ports import DnsResolver, HttpClient
from outreach_core.kernel.settings import Settings

CONCURRENCY = 32
"""DNS questions of one check in flight at once."""
MAX_MX_HOSTS = 5
RDAP_MAX_BYTES = 256 * 1024


def zones(text: str | None) -> list[str]:
    """`OUTREACH_DNSBL_ZONES` / `OUTREACH_DBL_ZONES`: comma-separated DNS zones."""
    return [z.strip().strip(".").lower() for z in (text or "").split(",") if z.strip().strip(".")]


class Asker:
    """Asks the DNS port, at most `CONCURRENCY` questions at once, each within `timeout_s`."""

    def __init__(self, resolver: DnsResolver, timeout_s: float) -> None:
        self._dns = resolver
        self._timeout_s = timeout_s
        self._limit = asyncio.Semaphore(CONCURRENCY)

    async def ask(self, name: str, rdtype: str) -> Answer:
        async with self._limit:
            try:
                async with asyncio.timeout(self._timeout_s):
                    return Answer(await self._dns.lookup(name, rdtype))
            except TimeoutError:
                return Answer(error=f"no answer within {self._timeout_s:g} s")
            except dns.exception.Timeout:
                return Answer(error="the DNS server did not answer in time")
            except dns.resolver.NoNameservers:
                return Answer(error="the DNS server failed to answer (SERVFAIL or refused)")
            except dns.name.NameTooLong:
                return Answer(error="the name is too long for DNS")
            except (dns.exception.DNSException, OSError) as exc:
                return Answer(error=f"the DNS lookup failed ({type(exc).__name__})")


async def gather_facts(
    resolver: DnsResolver,
    http: HttpClient | None,
    settings: Settings,
    domain: str,
    selector: str | None,
) -> Facts:
    """Ask every question of a check of `domain` (already normalised), concurrently."""
    asker = Asker(resolver, settings.domain_check_dns_timeout_s)
    facts = Facts(
        domain=domain,
        selector=selector,
        dnsbl_zones=zones(settings.dnsbl_zones),
        dbl_zones=zones(settings.dbl_zones),
    )

    async def presence() -> None:
        facts.presence = list(await asyncio.gather(*(asker.ask(domain, t) for t in ("A", "NS", "SOA"))))

    async def mail_servers() -> None:
        facts.mx = await asker.ask(domain, "MX")
        hosts = [h.host for h in parse_mx(facts.mx.records) if h.host][:MAX_MX_HOSTS]
        answers = await asyncio.gather(*(asker.ask(h, "A") for h in hosts))
        facts.mx_addresses = dict(zip(hosts, answers, strict=True))
        ips = sorted({ip for a in answers for ip in a.records})
        pairs = [(ip, zone) for ip in ips for zone in facts.dnsbl_zones]
        listed = await asyncio.gather(*(asker.ask(_reversed(ip) + "." + zone, "A") for ip, zone in pairs))
        facts.dnsbl = dict(zip(pairs, listed, strict=True))

    async def spf() -> None:
        facts.spf = await _spf_tree(asker, domain)

    async def dmarc() -> None:
        facts.dmarc = await asker.ask(f"_dmarc.{domain}", "TXT")
        org = organizational_domain(domain)
        found = [t for t in (txt_text(r) for r in facts.dmarc.records) if is_dmarc(t)]
        if org and org != domain and not found and facts.dmarc.error is None:
            facts.dmarc_org = (org, await asker.ask(f"_dmarc.{org}", "TXT"))

    async def dkim() -> None:
        selectors = list(dict.fromkeys([*([selector] if selector else []), *COMMON_SELECTORS]))
        answers = await asyncio.gather(*(asker.ask(f"{s}._domainkey.{domain}", "TXT") for s in selectors))
        facts.dkim = dict(zip(selectors, answers, strict=True))

    async def dbl() -> None:
        answers = await asyncio.gather(*(asker.ask(f"{domain}.{zone}", "A") for zone in facts.dbl_zones))
        facts.dbl = dict(zip(facts.dbl_zones, answers, strict=True))

    async def rdap() -> None:
        facts.rdap = await _rdap(http, settings, organizational_domain(domain) or domain)

    await asyncio.gather(presence(), mail_servers(), spf(), dmarc(), dkim(), dbl(), rdap())
    return facts


def _reversed(ip: str) -> str:
    return ".".join(reversed(ip.split(".")))


async def _spf_tree(asker: Asker, domain: str) -> dict[str, Answer]:
    """TXT answers of the domain and of every name its SPF record includes or redirects to, level by level
    (each level's names at once), at most `MAX_SPF_NAMES` names: a loop or an over-long chain is then
    judged by the rules from what was fetched."""
    fetched: dict[str, Answer] = {}
    level = [domain]
    while level and len(fetched) < MAX_SPF_NAMES:
        level = level[: MAX_SPF_NAMES - len(fetched)]
        answers = await asyncio.gather(*(asker.ask(name, "TXT") for name in level))
        following: list[str] = []
        for name, answer in zip(level, answers, strict=True):
            fetched[name] = answer
            records = spf_records(answer.records)
            if len(records) != 1:
                continue
            record = parse_spf(records[0])
            targets = [*record.includes, *([record.redirect] if record.redirect else [])]
            for target in targets:
                target = target.rstrip(".").lower()
                if target and not has_macro(target) and target not in fetched and target not in following:
                    following.append(target)
        level = following
    return fetched


async def _rdap(http: HttpClient | None, settings: Settings, domain: str) -> Rdap:
    """The registration date from RDAP (`OUTREACH_RDAP_URL` with `{domain}`), through the guarded HTTP
    client (the URL and every address connected to are checked like any outgoing request)."""
    if not settings.rdap_url:
        return Rdap(False)
    if http is None:
        return Rdap(True, error="no HTTP client is configured")
    url = settings.rdap_url.replace("{domain}", domain)
    status, body = await http.get(
        url,
        {"Accept": "application/rdap+json, application/json"},
        settings.domain_check_rdap_timeout_s,
        max_bytes=RDAP_MAX_BYTES,
    )
    if status == 0:
        return Rdap(True, error=f"the RDAP server did not answer ({body.decode(errors='replace')[:200]})")
    if status == 404:
        return Rdap(True, error="the RDAP server has no record of the domain")
    if status != 200:
        return Rdap(True, error=f"the RDAP server answered HTTP {status}")
    try:
        data = json.loads(body)
        events = data.get("events") or []
        for event in events:
            if isinstance(event, dict) and event.get("eventAction") == "registration":
                when = datetime.fromisoformat(str(event.get("eventDate")).replace("Z", "+00:00"))
                if when.tzinfo is None:
                    return Rdap(True, error="the RDAP registration date has no time zone")
                return Rdap(True, registered=when)
    except (ValueError, TypeError, AttributeError):
        return Rdap(True, error="the RDAP answer is not readable JSON")
    return Rdap(True, error="the RDAP answer has no registration date")
