"""Wire models of lead verification (its target input is the shared `TargetIn`)."""

from __future__ import annotations

from pydantic import Field

from outreach_core.kernel.wire import WireModel


class VerifyQueued(WireModel):
    queued: int
    api: bool = Field(description="False when only local checks run (no verifier API configured).")
