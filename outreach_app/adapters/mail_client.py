"""The constructor every mail adapter shares: TLS context, one timeout, the address guard."""

from __future__ import annotations

from typing import ClassVar, Self

from outreach_app.adapters.dns import configured_dns
from outreach_app.outgoing import AddressGuard, tls_context
from outreach_core.kernel.ports import DnsResolver
from outreach_core.kernel.settings import Settings


class GuardedMailClient:
    """Base of the SMTP/IMAP adapters (login tests, inbox, sent folder, warmup).

    - TLS trusts the system store plus `OUTREACH_TLS_CA_FILE`; certificates and host names are verified.
    - `timeout_s` bounds each exchange; a subclass says its default and how settings give it (`timeout_from`).
    - Hosts are checked by `AddressGuard`: unless `allow_private`, addresses that are not globally routable
      are refused without connecting.
    """

    default_timeout_s: ClassVar[float] = 10.0

    def __init__(
        self,
        *,
        tls_ca_file: str | None = None,
        timeout_s: float | None = None,
        allow_private: bool = False,
        dns: DnsResolver | None = None,
    ) -> None:
        self._tls = tls_context(tls_ca_file)
        self._timeout_s = self.default_timeout_s if timeout_s is None else timeout_s
        self._guard = AddressGuard(allow_private, dns)

    @classmethod
    def timeout_from(cls, settings: Settings) -> float:
        """The timeout this adapter uses under `settings`."""
        return settings.mail_login_timeout_s

    @classmethod
    def from_settings(cls, settings: Settings) -> Self:
        return cls(
            tls_ca_file=settings.tls_ca_file,
            timeout_s=cls.timeout_from(settings),
            allow_private=settings.allow_private_urls,
            dns=configured_dns(settings),
        )
