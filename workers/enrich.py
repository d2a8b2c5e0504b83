"""Enriches leads waiting for it (email provider, mail server, country, timezone) and finishes imports: one
batch per tick (`outreach_core.enrichment.pipeline.enrich_batch`, docs/enrichment.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.enrichment.pipeline import enrich_batch

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One batch of up to `BATCH` leads; returns leads enriched plus imports finished."""
    return await enrich_batch(runtime)
