"""`GuardedHttpClient` (the HTTP port's adapter) against real servers on loopback, and the private-URL
rules."""

from __future__ import annotations

import pytest

from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.kernel.urls import ALLOW_PRIVATE_HINT, is_blocked_address, url_problem
from tests.conftest import free_port
from tests.verification.conftest import VerifierApi


@pytest.mark.parametrize(
    "address",
    [
        *("127.0.0.1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0"),
        *("::1", "fe80::1", "fd00::1", "::ffff:127.0.0.1", "224.0.0.1"),
        # not globally routable, though a denylist of the usual ranges let them through (issue 19)
        *("192.0.0.8", "198.18.0.1", "192.0.2.1", "240.0.0.1", "255.255.255.255", "ff02::1", "2001:db8::1"),
        # IPv6 spellings of IPv4 addresses: mapped, NAT64, 6to4, IPv4-compatible
        *("::ffff:10.0.0.1", "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::", "::7f00:1"),
    ],
)
def test_private_addresses_are_blocked(address: str) -> None:
    assert is_blocked_address(address)


@pytest.mark.parametrize(
    "address",
    ["93.184.216.34", "2606:4700::1111", "example.com", "192.0.0.9", "::ffff:8.8.8.8", "64:ff9b::808:808"],
)
def test_public_addresses_are_not(address: str) -> None:
    assert not is_blocked_address(address)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("https://api.example.com/v1", None),
        ("http://93.184.216.34:8080/x", None),
        ("ftp://example.com/", "only http and https URLs are allowed"),
        ("https:///nohost", "the URL has no host"),
        (
            "http://localhost:8000/",
            f"localhost is a local host name (this server itself); {ALLOW_PRIVATE_HINT}",
        ),
        (
            "http://api.localhost/",
            f"api.localhost is a local host name (this server itself); {ALLOW_PRIVATE_HINT}",
        ),
        ("http://127.0.0.1/", f"127.0.0.1 is a loopback address, not a public one; {ALLOW_PRIVATE_HINT}"),
        ("http://[::1]:80/", f"::1 is a loopback address, not a public one; {ALLOW_PRIVATE_HINT}"),
        ("http://10.0.0.8/", f"10.0.0.8 is a private address, not a public one; {ALLOW_PRIVATE_HINT}"),
        ("http://example.com:99999/", "not a valid URL"),
    ],
)
def test_url_problems(url: str, problem: str | None) -> None:
    assert url_problem(url, allow_private=False) == problem


def test_private_urls_allowed_when_configured() -> None:
    assert url_problem("http://127.0.0.1:9/", allow_private=True) is None
    assert url_problem("ftp://127.0.0.1/", allow_private=True) is not None


async def test_posts_json_to_a_real_server(verifier_api: VerifierApi) -> None:
    verifier_api.verdict("http-client@acme.test", "catch_all", "accepts all")
    client = GuardedHttpClient(allow_private_urls=True)
    try:
        status, body = await client.post_json(
            verifier_api.url,
            b'{"email":"http-client@acme.test"}',
            {"Content-Type": "application/json", "Authorization": "Bearer k"},
            2.0,
        )
    finally:
        await client.aclose()
    assert (status, body) == (200, b'{"status": "catch_all", "reason": "accepts all"}')
    headers, sent = verifier_api.requests[-1]
    assert sent == {"email": "http-client@acme.test"} and headers["Authorization"] == "Bearer k"


async def test_refuses_loopback_unless_allowed(verifier_api: VerifierApi) -> None:
    before = len(verifier_api.requests)
    client = GuardedHttpClient()
    try:
        status, body = await client.post_json(verifier_api.url, b"{}", {}, 2.0)
        named = await client.post_json(verifier_api.url.replace("127.0.0.1", "localhost"), b"{}", {}, 2.0)
    finally:
        await client.aclose()
    assert status == 0 and body.startswith(b"refused: ")
    assert named[0] == 0 and named[1].startswith(b"refused: ")
    assert len(verifier_api.requests) == before  # nothing was sent


async def test_timeouts_and_dead_peers_are_status_zero(verifier_api: VerifierApi) -> None:
    verifier_api.answer("slow@acme.test", json_body={"status": "valid"}, delay_s=1.0)
    client = GuardedHttpClient(allow_private_urls=True)
    try:
        slow = await client.post_json(verifier_api.url, b'{"email":"slow@acme.test"}', {}, 0.2)
        dead = await client.post_json(f"http://127.0.0.1:{free_port()}/", b"{}", {}, 1.0)
    finally:
        await client.aclose()
    assert slow == (0, b"timed out")
    assert dead == (0, b"connection failed")


async def test_long_answers_are_cut(verifier_api: VerifierApi) -> None:
    verifier_api.answer("big@acme.test", raw=b"x" * 5000)
    client = GuardedHttpClient(allow_private_urls=True, max_response_bytes=1000)
    try:
        status, body = await client.post_json(verifier_api.url, b'{"email":"big@acme.test"}', {}, 2.0)
    finally:
        await client.aclose()
    assert status == 200 and len(body) == 1000
