from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.link_domain.operations import (
    check_link_cname,
    check_link_domain,
    delete_link_domain,
    get_link_domain,
    set_link_domain,
)
from outreach_core.link_domain.prepare import (
    prepare_check_link_cname,
    prepare_check_link_domain,
    prepare_set_link_domain,
)
from outreach_core.link_domain.schemas import CheckLinkQuery, LinkCname, LinkDomain, SetLinkDomainIn

# Setting and removing the link domain changes every email's links: owners and admins, as workspace
# settings (docs/api.md "Roles"). Checking only refreshes what DNS and the certificate show: any member.
ENDPOINTS = (
    Endpoint("GET", "/link-domain", get_link_domain, LinkDomain, read_only=True, tag="link-domain"),
    Endpoint(
        "PUT",
        "/link-domain",
        set_link_domain,
        LinkDomain,
        body=SetLinkDomainIn,
        prepare=prepare_set_link_domain,
        role="admin",
        idempotent=True,
        destructive=True,  # with replace: true, links in emails already sent break
        open_world=True,  # DNS
        tag="link-domain",
    ),
    Endpoint(
        "DELETE",
        "/link-domain",
        delete_link_domain,
        Ok,
        role="admin",
        idempotent=True,
        destructive=True,
        tag="link-domain",
    ),
    Endpoint(
        "POST",
        "/link-domain/check",
        check_link_domain,
        LinkDomain,
        prepare=prepare_check_link_domain,
        idempotent=True,
        open_world=True,  # DNS and a TLS handshake
        tag="link-domain",
    ),
    Endpoint(
        "GET",
        "/check/link",
        check_link_cname,
        LinkCname,
        query=CheckLinkQuery,
        prepare=prepare_check_link_cname,
        read_only=True,
        open_world=True,
        tag="link-domain",
    ),
)
