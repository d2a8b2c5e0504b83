from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.targets.schemas import TargetIn
from outreach_core.verification.operations import verify_leads
from outreach_core.verification.schemas import VerifyQueued

ENDPOINTS = (
    Endpoint(
        "POST",
        "/leads/verify",
        verify_leads,
        VerifyQueued,
        body=TargetIn,
        tag="leads",
        open_world=True,
    ),
)
