"""The link domain's pre-transaction steps: DNS lookups and TLS handshakes, with no transaction open
(docs/architecture.md, "Pre-transaction steps"). The operation re-checks what may have changed meanwhile."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Outside
from outreach_core.link_domain.probe import check_host, look_up
from outreach_core.link_domain.rules import Dns, Tls, link_target, refuse_replacing
from outreach_core.link_domain.schemas import CheckLinkQuery, SetLinkDomainIn
from outreach_core.link_domain.store import link_domain_row


@dataclass(frozen=True)
class Checked:
    """What the checks of `hostname` showed."""

    hostname: str
    dns: Dns
    tls: Tls


async def _current(ctx: WorkspaceContext) -> Any | None:
    return await link_domain_row(ctx)


def _target(outside: Outside) -> str | None:
    return link_target(outside.settings.link_target, outside.settings.public_url)


async def prepare_set_link_domain(outside: Outside, *, body: SetLinkDomainIn) -> Checked:
    """DNS of the new host name (refused first when it would replace an active one without `replace`). The
    certificate is tried at once only for the host name already set: the reverse proxy asks `/tls/ask`
    about a host name before issuing one, and a new one is not stored yet."""
    current = await outside.read(_current)
    if current is not None:
        refuse_replacing(current.status, current.hostname, body.hostname, replace=body.replace)
    if current is not None and current.hostname == body.hostname:
        found, tls = await check_host(outside.ports, outside.settings, body.hostname, _target(outside))
        return Checked(body.hostname, found, tls)
    found = await look_up(outside.ports.dns, body.hostname, _target(outside))
    return Checked(body.hostname, found, Tls("untested"))


async def prepare_check_link_domain(outside: Outside) -> Checked | None:
    """DNS and, when it is right, the certificate of the workspace's link domain; None when none is set."""
    current = await outside.read(_current)
    if current is None:
        return None
    found, tls = await check_host(outside.ports, outside.settings, current.hostname, _target(outside))
    return Checked(current.hostname, found, tls)


async def prepare_check_link_cname(outside: Outside, *, query: CheckLinkQuery) -> Dns:
    return await look_up(outside.ports.dns, f"links.{query.domain}", _target(outside))
