"""Every domain's cases, collected: `PARITY_CASES` (tool -> parity case, from each module's `CASES`) and
`FOREIGN_CASES` (tool -> foreign case, from each module's `FOREIGN`), one module per domain package with
tools (`tests/parity/<domain>.py`)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from tests.doors import ENDPOINTS
from tests.parity.common import Foreign, Prepare

DOMAINS = sorted({e.operation.__module__.split(".")[1] for e in ENDPOINTS.values()})
"""The domain packages with tools; each has its cases in `tests/parity/<domain>.py`."""


def domain_of(tool: str) -> str:
    return ENDPOINTS[tool].operation.__module__.split(".")[1]


def _module(domain: str) -> ModuleType | None:
    try:
        return importlib.import_module(f"tests.parity.{domain}")
    except ModuleNotFoundError as exc:
        if exc.name != f"tests.parity.{domain}":
            raise
        return None


def cases_of(domain: str, kind: str) -> dict[str, Any]:
    """A domain module's `CASES` or `FOREIGN` (empty when the module or the mapping is missing)."""
    module = _module(domain)
    found: dict[str, Any] = getattr(module, kind, {}) if module is not None else {}
    return found


PARITY_CASES: dict[str, Prepare] = {t: c for d in DOMAINS for t, c in cases_of(d, "CASES").items()}
FOREIGN_CASES: dict[str, Foreign] = {t: c for d in DOMAINS for t, c in cases_of(d, "FOREIGN").items()}
