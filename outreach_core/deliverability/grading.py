"""Grading a domain check (pure: no I/O): each check's status, points and fix from the `Facts`, then the
score, grade and verdict. Weights and sources are documented in docs/deliverability.md.

A check whose lookups timed out or failed is `info` with the reason and counts neither for nor against
the score: the score is the share of points over the checks that could be made.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from outreach_core.deliverability.auth_checks import dkim_check, dmarc_check, spf_check
from outreach_core.deliverability.check_kit import grade_of
from outreach_core.deliverability.facts import Facts
from outreach_core.deliverability.schemas import Check, Grade, MxFamily
from outreach_core.deliverability.server_checks import (
    age_check,
    blocklist_check,
    exists_check,
    known_to_exist,
    mx_check,
    mx_family,
)


@dataclass(frozen=True)
class Graded:
    exists: bool
    score: int
    grade: Grade
    verdict: str
    mx_family: MxFamily
    mx_label: str
    checks: list[Check]


def grade(facts: Facts, now: datetime, *, allow_private: bool) -> Graded:
    """Every check of `facts`, the score, the grade and a verdict a non-expert understands."""
    domain = facts.domain
    family, label = mx_family(facts.mx)
    exists = known_to_exist(facts)
    checks = [
        exists_check(domain, exists),
        mx_check(facts, family, allow_private),
        spf_check(facts, family),
        dkim_check(facts, family),
        dmarc_check(facts),
        blocklist_check(facts),
        age_check(facts, now),
    ]
    scored = [c for c in checks if c.status != "info" and c.max > 0]
    total = sum(c.max for c in scored)
    score = round(100 * sum(c.points for c in scored) / total) if total and exists is not False else 0
    grade = grade_of(score)
    return Graded(
        exists=exists is not False,
        score=score,
        grade=grade,
        verdict=_verdict(domain, exists, grade, checks, bool(scored)),
        mx_family=family,
        mx_label=label,
        checks=checks,
    )


def _verdict(domain: str, exists: bool | None, grade: Grade, checks: list[Check], scored: bool) -> str:
    if exists is False:
        return (
            f"{domain} does not exist in DNS: check the spelling, or register the domain and set up its "
            "email before sending from it."
        )
    if not scored:
        return f"{domain} could not be checked: the DNS servers did not answer. Try again in a minute."
    bad = [c.label for c in checks if c.status == "fail"] + [c.label for c in checks if c.status == "warn"]
    what = ", ".join(bad)
    if grade == "A":
        if bad:
            return f"{domain} is ready for cold email; the advice on {what} would make it even safer."
        return f"{domain} is ready for cold email: every check passed."
    if grade == "B":
        return f"{domain} is nearly ready for cold email: fix {what} to be safe."
    if grade == "C":
        return f"{domain} can send, but {what} will hurt inbox placement: fix them before a campaign."
    return (
        f"{domain} is not ready for cold email: emails from it are likely to land in spam or be rejected. "
        f"Fix {what} first."
    )
