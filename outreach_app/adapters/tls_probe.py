"""`ports.TlsProbe`: the real TLS handshake that makes a link domain active (docs/link-domain.md).

The host is resolved once through the DNS port (`OUTREACH_DNS_NAMESERVERS`) by `outgoing.AddressGuard`, the
connection goes to an address it returned, and the handshake sends the host name as SNI and verifies the
chain and the name against the system store plus `OUTREACH_TLS_CA_FILE`. Link domains point at this service
(often on a private address behind its proxy), so private addresses are refused only when the server refuses
them everywhere else too (`OUTREACH_ALLOW_PRIVATE_URLS`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl

from outreach_app.outgoing import AddressGuard, NotContacted, open_socket, tls_context
from outreach_core.kernel.ports import DnsResolver, TlsHandshake
from outreach_core.kernel.settings import Settings


class TlsHandshakeProbe:
    def __init__(
        self, *, tls_ca_file: str | None = None, allow_private: bool = False, dns: DnsResolver | None = None
    ) -> None:
        self._tls = tls_context(tls_ca_file)
        self._guard = AddressGuard(allow_private=allow_private, dns=dns)

    @classmethod
    def from_settings(cls, settings: Settings, dns: DnsResolver | None) -> TlsHandshakeProbe:
        return cls(tls_ca_file=settings.tls_ca_file, allow_private=settings.allow_private_urls, dns=dns)

    async def handshake(self, host: str, port: int, timeout_s: float) -> TlsHandshake:
        connected = False
        try:
            async with asyncio.timeout(timeout_s):
                addresses = await self._guard.addresses(host, port)
                sock = await open_socket(addresses, port)
                connected = True
                _, writer = await asyncio.open_connection(
                    sock=sock, ssl=self._tls, server_hostname=host, ssl_handshake_timeout=timeout_s
                )
        except NotContacted as exc:
            return TlsHandshake(False, "unreachable", exc.reason)
        except ssl.SSLCertVerificationError as exc:
            return TlsHandshake(False, "certificate", _certificate_problem(exc))
        except TimeoutError:
            reason = f"no TLS answer from {host}:{port} within {timeout_s:g}s"
            return TlsHandshake(False, "unreachable", reason)
        except OSError:
            if not connected:
                return TlsHandshake(False, "unreachable", f"could not connect to {host}:{port}")
            # no certificate for this name (yet): the proxy ends the handshake (an alert, or it hangs up)
            reason = f"{host}:{port} ended the TLS handshake without a certificate"
            return TlsHandshake(False, "unreachable", reason)
        writer.close()
        with contextlib.suppress(OSError, TimeoutError, ssl.SSLError):
            await asyncio.wait_for(writer.wait_closed(), 2)
        return TlsHandshake(True)


def _certificate_problem(exc: ssl.SSLCertVerificationError) -> str:
    """A short phrase for a refused certificate (never the exception's text as such)."""
    code = exc.verify_code
    if code == 10:  # X509_V_ERR_CERT_HAS_EXPIRED
        return "the certificate has expired"
    if code == 9:  # X509_V_ERR_CERT_NOT_YET_VALID
        return "the certificate is not valid yet"
    if code == 62:  # X509_V_ERR_HOSTNAME_MISMATCH
        return "the certificate is for another name"
    if code in (18, 19, 20, 21):  # self-signed, unknown issuer
        return "the certificate is not from a trusted authority"
    return "the certificate could not be verified"
