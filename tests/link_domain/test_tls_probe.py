"""The TLS probe on its own: real handshakes to the loopback TLS server, each outcome as a person reads it."""

from __future__ import annotations

from outreach_app.adapters import DnspythonResolver
from outreach_app.adapters.tls_probe import TlsHandshakeProbe
from tests.conftest import free_port
from tests.dns_server import DnsServer
from tests.link_domain.conftest import TlsServer
from tests.mail_servers import MailCA


def _probe(
    ca: MailCA, dns: DnsServer, *, allow_private: bool = True, trusted: bool = True
) -> TlsHandshakeProbe:
    resolver = DnspythonResolver(dns.nameservers, timeout_s=1.0)
    return TlsHandshakeProbe(
        tls_ca_file=str(ca.ca_file) if trusted else None, allow_private=allow_private, dns=resolver
    )


async def test_each_outcome(mail_ca: MailCA, dns_server: DnsServer, tls_server: TlsServer) -> None:
    names = {
        kind: f"probe-{kind.replace('_', '-')}.links-probe.example.com"
        for kind in ("valid", "wrong_name", "expired")
    }
    for kind, name in names.items():
        dns_server.remove(name, "A")
        dns_server.add(name, "A", "127.0.0.1")
        tls_server.present(name, kind)  # type: ignore[arg-type]
    probe = _probe(mail_ca, dns_server)
    port = tls_server.port

    assert (await probe.handshake(names["valid"], port, 3)).ok
    wrong = await probe.handshake(names["wrong_name"], port, 3)
    assert (wrong.ok, wrong.problem, wrong.reason) == (
        False,
        "certificate",
        "the certificate is for another name",
    )
    expired = await probe.handshake(names["expired"], port, 3)
    assert (expired.problem, expired.reason) == ("certificate", "the certificate has expired")

    untrusted = await _probe(mail_ca, dns_server, trusted=False).handshake(names["valid"], port, 3)
    assert (untrusted.problem, untrusted.reason) == (
        "certificate",
        "the certificate is not from a trusted authority",
    )

    unknown = "probe-nocert.links-probe.example.com"
    dns_server.remove(unknown, "A")
    dns_server.add(unknown, "A", "127.0.0.1")
    no_cert = await probe.handshake(unknown, port, 3)
    assert no_cert.problem == "unreachable" and "without a certificate" in no_cert.reason

    closed = await probe.handshake(names["valid"], free_port(), 3)
    assert closed.problem == "unreachable" and "could not connect" in closed.reason

    nowhere = await probe.handshake("probe-missing.links-probe.example.com", port, 3)
    assert nowhere.problem == "unreachable" and "not found" in nowhere.reason

    private = await _probe(mail_ca, dns_server, allow_private=False).handshake(names["valid"], port, 3)
    assert private.problem == "unreachable" and "loopback" in private.reason
