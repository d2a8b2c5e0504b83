from __future__ import annotations

from outreach_core.interface import Endpoint

ENDPOINTS: list[Endpoint] = []
