"""GET /check through a real HTTP client, against a dnslib zone server with good, missing and broken records
of each kind, a DNSBL/DBL zone it serves and a local RDAP server (issue 27, scope item 1)."""

from __future__ import annotations

from typing import Any

import httpx
import idna

from tests.conftest import MakeWorkspace
from tests.deliverability.conftest import Rdap, checks_by_id
from tests.deliverability.zones import (
    DBL,
    DNSBL,
    GOOGLE_MX,
    LISTED_IP,
    bare,
    ed25519_key,
    good,
    rsa_key,
    txt,
    unique_domain,
    with_record,
    without,
)
from tests.dns_server import DnsServer


async def check(api: httpx.AsyncClient, headers: dict[str, str], domain: str, **query: str) -> dict[str, Any]:
    response = await api.get("/check", headers=headers, params={"domain": domain, **query})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


async def test_a_domain_set_up_right_gets_an_a(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer, rdap: Rdap
) -> None:
    ws = await make_workspace()
    domain = good(dns_server)
    rdap.register(domain, days_ago=800)
    report = await check(api, ws.headers, domain)
    checks = checks_by_id(report)
    assert (report["domain"], report["exists"], report["cached"]) == (domain, True, False)
    assert (report["score"], report["grade"], report["mxFamily"]) == (100, "A", "google")
    assert report["mxLabel"] == "Google Workspace"
    assert "ready for cold email" in report["verdict"]
    assert {c: checks[c]["status"] for c in checks} == {
        "exists": "pass",
        "mx": "pass",
        "spf": "pass",
        "dkim": "pass",
        "dmarc": "pass",
        "blacklists": "pass",
        "domain_age": "pass",
    }
    assert sum(c["max"] for c in report["checks"]) == 100
    assert "DNS lookups: 1 of 10" in checks["spf"]["details"]
    assert "google (rsa 2048-bit)" in checks["dkim"]["summary"] or "2048-bit" in checks["dkim"]["summary"]
    assert checks["spf"]["source"] == {"kind": "rfc", "reference": "RFC 7208"}
    assert checks["domain_age"]["source"]["kind"] == "opinion"
    assert f"142.250.102.27 ({GOOGLE_MX}) on {DNSBL}: not listed" in checks["blacklists"]["details"]
    assert any(f"{domain} on {DBL}: not listed" in d for d in checks["blacklists"]["details"])
    assert report["durationMs"] > 0 and report["checkedAt"].endswith("Z")

    again = await check(api, ws.headers, domain)
    assert again["cached"] is True and again["checkedAt"] == report["checkedAt"]
    assert again["checks"] == report["checks"]


async def test_urls_emails_and_international_names_are_normalised(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = good(dns_server)
    for typed in (
        f"https://www.{domain.upper()}/about?x=1",
        f"Ann.Lee@{domain}",
        f" {domain}. ",
        f"{domain}/x",
    ):
        assert (await check(api, ws.headers, typed))["domain"] == domain
    idn = await check(api, ws.headers, "bücher-beispiel.de")
    assert idn["domain"] == "xn--bcher-beispiel-gsb.de" == idna.encode("bücher-beispiel.de").decode()
    assert idn["exists"] is False and idn["score"] == 0 and idn["grade"] == "F"
    assert "does not exist" in idn["verdict"]


async def test_bad_input_is_refused_with_the_field(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace
) -> None:
    ws = await make_workspace()
    bad = [
        "co.uk",
        "com",
        "localhost",
        "mail.localhost",
        "127.0.0.1",
        "[::1]",
        "https://10.0.0.1/x",
        "a" * 64 + ".com",
        ".".join(["abcdefghi"] * 26) + ".com",  # 264 characters
        "-bad-.com",
        "ex ample.com",
        "xn--a.com\u200b",
        "intranet",
        "x" * 301,
        "",
    ]
    for value in bad:
        response = await api.get("/check", headers=ws.headers, params={"domain": value})
        assert response.status_code == 422, (value, response.text)
        error = response.json()["error"]
        assert error["code"] == "invalid_input"
        assert [f["path"] for f in error["details"]["fields"]] == ["domain"], (value, error)
    response = await api.get(
        "/check", headers=ws.headers, params={"domain": "example.com", "selector": "bad selector"}
    )
    assert response.status_code == 422
    assert [f["path"] for f in response.json()["error"]["details"]["fields"]] == ["selector"]


async def test_missing_records_fail_with_the_record_to_publish(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = bare(dns_server)
    report = await check(api, ws.headers, domain)
    checks = checks_by_id(report)
    assert report["exists"] is True and report["grade"] == "F" and report["mxFamily"] == "none"
    assert "not ready" in report["verdict"]
    assert checks["mx"]["status"] == "fail" and f"{domain} MX" in checks["mx"]["fix"]
    assert checks["spf"]["status"] == "fail"
    assert f'{domain} TXT "v=spf1 mx ~all"' in checks["spf"]["fix"]
    assert checks["dmarc"]["status"] == "fail"
    assert (
        f'_dmarc.{domain} TXT "v=DMARC1; p=none; rua=mailto:dmarc-reports@{domain}"' in checks["dmarc"]["fix"]
    )
    assert checks["dmarc"]["source"]["kind"] == "provider"
    # DKIM may use a selector we do not know: not found is a warning, never a wrong fail
    assert checks["dkim"]["status"] == "warn" and checks["dkim"]["points"] == 0
    assert checks["domain_age"]["status"] == "info"  # the RDAP server does not know it


async def test_spf_loops_over_limit_and_all_qualifiers(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    loop = unique_domain("loop")
    dns_server.add(loop, "MX", f"1 {GOOGLE_MX}.")
    dns_server.add(loop, "TXT", txt(f"v=spf1 include:_spf.google.com include:a.{loop} -all"))
    dns_server.add(f"a.{loop}", "TXT", txt(f"v=spf1 include:{loop} -all"))
    spf = checks_by_id(await check(api, ws.headers, loop))["spf"]
    assert spf["status"] == "fail" and "loop" in spf["summary"]
    assert any(f"{loop} -> a.{loop} -> {loop}" in d for d in spf["details"])

    over = unique_domain("over")
    includes = " ".join(f"include:i{n}.{over}" for n in range(4))
    dns_server.add(over, "TXT", txt(f"v=spf1 {includes} -all"))
    for n in range(4):
        dns_server.add(f"i{n}.{over}", "TXT", txt(f"v=spf1 a mx include:j{n}.{over} ~all"))
        dns_server.add(f"j{n}.{over}", "TXT", txt("v=spf1 ip4:192.0.2.0/24 -all"))
    spf = checks_by_id(await check(api, ws.headers, over))["spf"]
    assert spf["status"] == "fail" and "16 DNS lookups, over the limit of 10" in spf["details"]
    assert spf["source"]["reference"].startswith("RFC 7208 section")

    plus = with_record(dns_server, "", "TXT", txt("v=spf1 include:_spf.google.com +all"))
    spf = checks_by_id(await check(api, ws.headers, plus))["spf"]
    assert spf["status"] == "fail" and "+all" in spf["summary"]
    neutral = with_record(dns_server, "", "TXT", txt("v=spf1 include:_spf.google.com ?all"))
    spf = checks_by_id(await check(api, ws.headers, neutral))["spf"]
    assert spf["status"] == "warn" and "?all" in spf["summary"]
    two = with_record(dns_server, "", "TXT", txt("v=spf1 -all"), txt("v=spf1 include:_spf.google.com ~all"))
    spf = checks_by_id(await check(api, ws.headers, two))["spf"]
    assert spf["status"] == "fail" and "2 SPF records" in spf["summary"]
    dangling = with_record(dns_server, "", "TXT", txt("v=spf1 include:nothing-here.example.org ~all"))
    spf = checks_by_id(await check(api, ws.headers, dangling))["spf"]
    assert spf["status"] == "fail" and "nothing-here.example.org" in spf["summary"]


async def test_two_dmarc_records_and_policies(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    two = with_record(dns_server, "_dmarc", "TXT", txt("v=DMARC1; p=none"), txt("v=DMARC1; p=reject"))
    report = await check(api, ws.headers, two)
    dmarc = checks_by_id(report)["dmarc"]
    assert dmarc["status"] == "fail" and "2 DMARC records" in dmarc["summary"]
    assert dmarc["source"]["reference"] == "RFC 7489 section 6.6.3"
    monitoring = with_record(dns_server, "_dmarc", "TXT", txt("v=DMARC1; p=none"))
    dmarc = checks_by_id(await check(api, ws.headers, monitoring))["dmarc"]
    assert dmarc["status"] == "warn" and "p=quarantine" in dmarc["fix"]
    assert any("No rua=" in d for d in dmarc["details"])
    invalid = with_record(dns_server, "_dmarc", "TXT", txt("v=DMARC1; p=maybe"))
    dmarc = checks_by_id(await check(api, ws.headers, invalid))["dmarc"]
    assert dmarc["status"] == "fail" and "p=maybe" in dmarc["summary"]
    # a subdomain without its own record inherits the organizational domain's
    parent = good(dns_server)
    child = f"mail.{parent}"
    dns_server.add(child, "MX", f"1 {GOOGLE_MX}.")
    dmarc = checks_by_id(await check(api, ws.headers, child))["dmarc"]
    assert dmarc["status"] == "pass" and any(f"organizational domain {parent}" in d for d in dmarc["details"])


async def test_dkim_keys_malformed_weak_custom_and_ed25519(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    malformed = with_record(dns_server, "google._domainkey", "TXT", txt("v=DKIM1; k=rsa; p=notbase64!!"))
    dkim = checks_by_id(await check(api, ws.headers, malformed))["dkim"]
    assert dkim["status"] == "fail" and "malformed" in dkim["summary"] and "base64" in dkim["summary"]
    garbage = with_record(dns_server, "google._domainkey", "TXT", txt("v=DKIM1; k=rsa; p=" + "QUJD" * 20))
    dkim = checks_by_id(await check(api, ws.headers, garbage))["dkim"]
    assert dkim["status"] == "fail" and "not a readable RSA public key" in dkim["summary"]

    custom = without(dns_server, "google._domainkey", "TXT")
    dns_server.add(f"mk2024._domainkey.{custom}", "TXT", txt(f"v=DKIM1; k=rsa; p={rsa_key(1024)}"))
    report = await check(api, ws.headers, custom, selector="MK2024")
    assert report["selector"] == "mk2024"
    dkim = checks_by_id(report)["dkim"]
    assert dkim["status"] == "warn" and "1024-bit" in dkim["summary"]
    missing = checks_by_id(await check(api, ws.headers, custom, selector="nope"))["dkim"]
    assert missing["status"] == "fail" and f"nope._domainkey.{custom}" in missing["summary"]

    modern = without(dns_server, "google._domainkey", "TXT")
    dns_server.add(f"s1._domainkey.{modern}", "TXT", txt(f"v=DKIM1; k=ed25519; p={ed25519_key()}"))
    dkim = checks_by_id(await check(api, ws.headers, modern))["dkim"]
    assert dkim["status"] == "pass" and "ed25519" in dkim["summary"]


async def test_a_listed_mail_server_and_a_listed_domain_fail(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = with_record(dns_server, "", "MX", "10 mx.listed-host.net.")
    dns_server.add("mx.listed-host.net", "A", LISTED_IP)
    reversed_ip = ".".join(reversed(LISTED_IP.split(".")))
    dns_server.add(f"{reversed_ip}.{DNSBL}", "A", "127.0.0.2")
    blocklists = checks_by_id(await check(api, ws.headers, domain))["blacklists"]
    assert blocklists["status"] == "fail"
    assert f"{LISTED_IP} (mx.listed-host.net) on {DNSBL}: listed (127.0.0.2)" in blocklists["details"]

    spammy = good(dns_server)
    dns_server.add(f"{spammy}.{DBL}", "A", "127.0.1.2")
    blocklists = checks_by_id(await check(api, ws.headers, spammy))["blacklists"]
    assert (
        blocklists["status"] == "fail" and f"{spammy} on {DBL}: listed (127.0.1.2)" in blocklists["details"]
    )
    refused = good(dns_server)
    dns_server.add(f"{refused}.{DBL}", "A", "127.255.255.254")  # the zone refuses the resolver: not a listing
    blocklists = checks_by_id(await check(api, ws.headers, refused))["blacklists"]
    assert blocklists["status"] == "pass"


async def test_timeouts_and_servfail_are_info_never_fail(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    domain = good(dns_server)
    dns_server.fail(f"_dmarc.{domain}")
    dns_server.slow_down(domain, 3.0)  # MX, SPF and the domain's own records time out (1.5 s here)
    report = await check(api, ws.headers, domain)
    checks = checks_by_id(report)
    assert checks["dmarc"]["status"] == "info" and "SERVFAIL" in checks["dmarc"]["summary"]
    assert checks["mx"]["status"] == "info" and "no answer within 1.5 s" in checks["mx"]["summary"]
    assert checks["spf"]["status"] == "info" and checks["exists"]["status"] == "info"
    assert report["exists"] is True  # never a wrong "does not exist"
    assert checks["dkim"]["status"] == "pass"
    assert report["score"] == 100 and report["grade"] == "A"  # only what could be checked counts
    assert all(c["status"] != "fail" for c in report["checks"])


async def test_domain_age_from_rdap(
    api: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer, rdap: Rdap
) -> None:
    ws = await make_workspace()
    young, new = good(dns_server), good(dns_server)
    rdap.register(young, days_ago=45)
    rdap.register(new, days_ago=3)
    age = checks_by_id(await check(api, ws.headers, young))["domain_age"]
    assert age["status"] == "warn" and "45 days" in age["summary"]
    age = checks_by_id(await check(api, ws.headers, new))["domain_age"]
    assert age["status"] == "fail" and age["fix"]
    sub = f"mail.{young}"
    dns_server.add(sub, "MX", f"1 {GOOGLE_MX}.")
    await check(api, ws.headers, sub)
    assert rdap.asked[-1] == young  # RDAP knows registered domains, not their subdomains
    unknown = checks_by_id(await check(api, ws.headers, good(dns_server)))["domain_age"]
    assert unknown["status"] == "info" and "no record" in unknown["summary"]


async def test_the_session_server_without_rdap_or_zones_says_so(
    http: httpx.AsyncClient, make_workspace: MakeWorkspace, dns_server: DnsServer
) -> None:
    ws = await make_workspace()
    response = await http.get("/api/v1/check", headers=ws.headers, params={"domain": good(dns_server)})
    checks = checks_by_id(response.json())
    assert checks["domain_age"]["status"] == "info" and "OUTREACH_RDAP_URL" in checks["domain_age"]["summary"]
    assert (
        checks["blacklists"]["status"] == "info" and "OUTREACH_DNSBL_ZONES" in checks["blacklists"]["summary"]
    )
    assert response.json()["grade"] == "A"
