from __future__ import annotations

from outreach_core.deliverability.operations import (
    add_domain,
    check_domain,
    check_sending_domain,
    delete_domain,
    list_domains,
)
from outreach_core.deliverability.prepare import (
    prepare_add_domain,
    prepare_check_domain,
    prepare_check_sending_domain,
)
from outreach_core.deliverability.schemas import CheckQuery, DomainIn, DomainItem, DomainReport
from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok

# `POST /domains/check` comes before anything with a path parameter: routes match in this order.
ENDPOINTS = (
    Endpoint(
        "GET",
        "/check",
        check_domain,
        DomainReport,
        query=CheckQuery,
        read_only=True,
        prepare=prepare_check_domain,
        open_world=True,
        tag="deliverability",
    ),
    Endpoint("GET", "/domains", list_domains, list[DomainItem], read_only=True, tag="deliverability"),
    Endpoint(
        "POST",
        "/domains",
        add_domain,
        DomainReport,
        body=DomainIn,
        prepare=prepare_add_domain,
        idempotent=True,
        open_world=True,
        tag="deliverability",
    ),
    Endpoint(
        "POST",
        "/domains/check",
        check_sending_domain,
        DomainReport,
        body=DomainIn,
        prepare=prepare_check_sending_domain,
        idempotent=True,
        open_world=True,
        tag="deliverability",
    ),
    Endpoint(
        "DELETE",
        "/domains/{domain}",
        delete_domain,
        Ok,
        destructive=True,
        tag="deliverability",
    ),
)
