from __future__ import annotations

from outreach_core.endpoint import Endpoint
from outreach_core.leads.schemas import TargetIn, VerifyQueued
from outreach_core.verification.operations import verify_leads

ENDPOINTS: list[Endpoint] = [
    Endpoint(
        "POST",
        "/leads/verify",
        verify_leads,
        VerifyQueued,
        body=TargetIn,
        tag="leads",
    ),
]
