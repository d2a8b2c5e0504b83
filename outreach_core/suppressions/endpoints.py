from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.suppressions.operations import (
    add_suppressions,
    list_suppressions,
    remove_suppressions,
    suppress_leads,
)
from outreach_core.suppressions.schemas import (
    AddSuppressionsIn,
    ListSuppressionsQuery,
    RemoveSuppressionsIn,
    SuppressionPage,
    SuppressionsAdded,
)
from outreach_core.targets.schemas import Removed, Suppressed, SuppressTargetIn

ENDPOINTS = (
    Endpoint(
        "GET",
        "/suppressions",
        list_suppressions,
        SuppressionPage,
        query=ListSuppressionsQuery,
        read_only=True,
        tag="suppressions",
    ),
    Endpoint(
        "POST",
        "/suppressions",
        add_suppressions,
        SuppressionsAdded,
        body=AddSuppressionsIn,
        tag="suppressions",
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/suppressions/remove",
        remove_suppressions,
        Removed,
        body=RemoveSuppressionsIn,
        destructive=True,
        tag="suppressions",
        idempotent=True,
    ),
    Endpoint(
        "POST",
        "/leads/suppress",
        suppress_leads,
        Suppressed,
        body=SuppressTargetIn,
        tag="leads",
        idempotent=True,
    ),
)
