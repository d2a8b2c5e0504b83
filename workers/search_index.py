"""Fills the lead search index in the background (see `index_search`): imports never wait for it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from outreach_core.enrichment.pipeline import index_search_batch

if TYPE_CHECKING:
    from outreach_core.kernel.runtime import Runtime


async def tick(runtime: Runtime) -> int:
    """One batch of leads put into the search index; returns how many."""
    return await index_search_batch(runtime)
