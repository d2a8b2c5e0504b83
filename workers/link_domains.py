"""Re-checks link domains (DNS, then the certificate): every minute for the first hour after one is set,
then hourly; one without DNS for a day is `failed` (docs/link-domain.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.link_domain.pipeline import recheck_link_domains

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One pass over the due link domains (`link_domain/pipeline.py`); returns how many were checked."""
    return await recheck_link_domains(runtime)
