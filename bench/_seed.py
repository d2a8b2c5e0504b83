"""Lead rows written straight into the database by the benchmarks that need many leads but do not measure
the import (the import has its own benchmark)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from outreach_core.targets.rules import derived_columns


def bench_lead(i: int, lead_id: str, workspace_id: str, now: datetime, **overrides: Any) -> dict[str, Any]:
    """Lead number `i`: `person{i}@company{i % 5000}.example`, verified valid, active and enriched."""
    email = f"person{i}@company{i % 5000}.example"
    first, company = f"First{i % 100}", f"Company {i % 5000}"
    return {
        "id": lead_id,
        "workspace_id": workspace_id,
        "email": email,
        "domain": f"company{i % 5000}.example",
        "first_name": first,
        "last_name": "Bench",
        "company": company,
        "custom": {},
        **derived_columns(email, first, "Bench", company),
        "verify_status": "valid",
        "status": "active",
        "enriched_at": now,
        "created_at": now,
        **overrides,
    }
