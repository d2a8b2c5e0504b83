"""What every check of the domain checker is built with: the weights (points of each check), the grade
bounds and the check constructor (pure)."""

from __future__ import annotations

from outreach_core.deliverability.schemas import Check, CheckSource, Grade, SourceKind, Status

WEIGHTS = {"mx": 15, "spf": 20, "dkim": 20, "dmarc": 20, "blacklists": 15, "domain_age": 10}
"""Points of each check; they add up to 100. `exists` is a gate (no domain: score 0)."""
GRADES: tuple[tuple[int, Grade], ...] = ((90, "A"), (80, "B"), (65, "C"), (50, "D"), (0, "F"))
"""The lowest score of each grade."""
SPF_LOOKUP_LIMIT = 10
SPF_VOID_LIMIT = 2
NEW_DOMAIN_DAYS = 30
YOUNG_DOMAIN_DAYS = 90
MAX_SPF_VISITS = 200
PROVIDER_SPF = {"google": "_spf.google.com", "microsoft": "spf.protection.outlook.com"}


def grade_of(score: int) -> Grade:
    return next(g for low, g in GRADES if score >= low)


def src(kind: SourceKind, reference: str) -> CheckSource:
    return CheckSource(kind=kind, reference=reference)


def check(
    id: str,
    label: str,
    status: Status,
    points: float,
    summary: str,
    source: CheckSource,
    *,
    details: list[str] | None = None,
    fix: str | None = None,
    max: float | None = None,
) -> Check:
    top = WEIGHTS.get(id, 0) if max is None else max
    return Check(
        id=id,
        label=label,
        status=status,
        points=points if status != "info" else 0,
        max=top,
        summary=summary,
        details=details or [],
        fix=fix,
        source=source,
    )
