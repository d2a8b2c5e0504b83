"""Pure campaign rules: A/B choice, schedule checks, dates in a time zone, the launch checklist.

No I/O here: operations gather the facts in SQL and these functions decide.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from zoneinfo import ZoneInfo

from outreach_core.campaigns.schemas import ChecklistItem
from outreach_core.mail.content import LONG_EMAIL_WORDS

LABELS = "ABCDE"


def variant_label(position: int) -> str:
    """A, B, C ... for the variants of a step, in order."""
    return LABELS[position] if position < len(LABELS) else str(position + 1)


@dataclass(frozen=True)
class WeightedVariant:
    id: str
    weight: int
    active: bool


def pick_variant(variants: Sequence[WeightedVariant], seed: str) -> WeightedVariant | None:
    """The variant a lead gets for a step: chosen by weight among the active ones, fixed by `seed`.

    The same seed (lead and step) always gives the same variant while the step's variants and weights stay
    the same, so the preview shows exactly what the sender will send."""
    active = [v for v in variants if v.active and v.weight > 0]
    if not active:
        return None
    total = sum(v.weight for v in active)
    point = int.from_bytes(hashlib.sha256(f"variant:{seed}".encode()).digest()[:8], "big") % total
    for variant in active:
        if point < variant.weight:
            return variant
        point -= variant.weight
    return active[-1]  # pragma: no cover - the loop always returns


def assign_mailbox(lead_id: str, mailbox_ids: Sequence[str]) -> str | None:
    """The mailbox a lead is spread onto: a hash of the lead over the sorted ids, so leads split evenly
    across a campaign's mailboxes and the preview names the mailbox the sender will use."""
    if not mailbox_ids:
        return None
    ordered = sorted(mailbox_ids)
    return ordered[
        int.from_bytes(hashlib.sha256(f"mailbox:{lead_id}".encode()).digest()[:8], "big") % len(ordered)
    ]


def local_today(now: dt.datetime, timezone: str) -> dt.date:
    """The calendar date at `now` in `timezone`."""
    return now.astimezone(ZoneInfo(timezone)).date()


def next_window_opening(
    now: dt.datetime, *, timezone: str, window_start: int, window_end: int, days: int, start_on: str | None
) -> dt.datetime | None:
    """The first moment at or after `now` inside the sending window on an allowed day (bit 0 = Monday), in
    `timezone`, not before `start_on`; None when no day is allowed or the window is empty."""
    if days & 127 == 0 or window_start >= window_end:
        return None
    zone = ZoneInfo(timezone)
    local = now.astimezone(zone)
    first_day = max(local.date(), dt.date.fromisoformat(start_on)) if start_on else local.date()
    for offset in range(8):
        day = first_day + dt.timedelta(days=offset)
        if not days & (1 << day.weekday()):
            continue
        midnight = dt.datetime.combine(day, dt.time(), tzinfo=zone)
        opens = midnight + dt.timedelta(minutes=window_start)
        closes = midnight + dt.timedelta(minutes=window_end)
        if local < closes:
            return max(opens, local)
    return None  # pragma: no cover - some allowed day comes within a week


def past_end(end_on: str | None, now: dt.datetime, timezone: str) -> bool:
    """True once the last sending day (`endOn`, in the campaign's fallback time zone) has passed."""
    return end_on is not None and local_today(now, timezone) > dt.date.fromisoformat(end_on)


def schedule_problems(
    *,
    window_start: int,
    window_end: int,
    days: int,
    start_on: str | None,
    end_on: str | None,
    today: dt.date,
) -> list[str]:
    """What makes a schedule unable to send anything; empty when it is valid."""
    problems = []
    if not window_start < window_end:
        problems.append("The sending window must start before it ends.")
    if not 1 <= days <= 127:
        problems.append("Pick at least one sending day.")
    if start_on and end_on and start_on > end_on:
        problems.append("startOn is after endOn.")
    if end_on and dt.date.fromisoformat(end_on) < today:
        problems.append(f"endOn ({end_on}) has passed.")
    return problems


@dataclass(frozen=True)
class VariantFacts:
    step: int
    label: str
    subject: str
    body: str
    active: bool
    words: int
    spam_words: tuple[str, ...]
    problems: tuple[str, ...]  # template syntax problems
    unknown: tuple[str, ...]  # variables no campaign lead can fill
    has_unsubscribe: bool


@dataclass(frozen=True)
class ChecklistFacts:
    """Everything the launch checklist decides on, gathered by the caller."""

    campaign_id: str  # named in the REST routes the messages point to
    mailboxes_attached: int
    mailboxes_active: int
    steps: int
    same_thread: tuple[bool, ...]  # per step
    variants: tuple[VariantFacts, ...]
    leads_waiting: int  # campaign leads that can still get email
    risky_leads: int  # risky or catch-all campaign leads still waiting (when the campaign does not skip them)
    schedule: tuple[str, ...]
    plan_active: bool
    link_domain_required: bool
    link_domain_active: bool
    tracking: bool
    unsubscribe_mode: str
    # warmup (issue 32 item 1, docs/warmup.md): one line per attached mailbox with a warmup problem
    warmup_problems: tuple[str, ...] = ()
    # deliverability (issue 27): sending domains of the campaign's mailboxes graded D or F, as
    # "domain (grade D, score 55)"
    weak_domains: tuple[str, ...] = ()


def _item(
    id: str, label: str, ok: bool, message: str, *, required: bool = True, details: list[str] | None = None
) -> ChecklistItem:
    return ChecklistItem(
        id=id, label=label, required=required, ok=ok, message=None if ok else message, details=details or []
    )


def _route(method: str, path: str, tool: str, what: str = "") -> str:
    """How to fix something, for a REST client and an AI assistant alike: the route and the MCP tool."""
    return f"{method} /api/v1{path}{what} (tool {tool})"


def checklist(f: ChecklistFacts) -> list[ChecklistItem]:
    """The launch checklist: required items first (any failure blocks launch), then warnings. Each failing
    item's message names the REST route and the MCP tool that fix it."""
    campaign = f"/campaigns/{f.campaign_id}"

    def update_campaign(what: str) -> str:
        return _route("PATCH", campaign, "update_campaign", what)

    edit_emails = (
        f"{_route('PATCH', f'{campaign}/variants/{{variantId}}', 'update_variant')}, or replace the sequence "
        f"with {_route('PUT', f'{campaign}/sequence', 'set_sequence')}"
    )
    active = [v for v in f.variants if v.active]
    per_step_active = [[v for v in active if v.step == s] for s in range(f.steps)]
    content: list[str] = []
    for step, variants in enumerate(per_step_active):
        if not variants:
            content.append(f"Email {step + 1} has no active variant.")
        for v in variants:
            name = f"Email {step + 1}{v.label}"
            needs_subject = step == 0 or not f.same_thread[step]
            if needs_subject and not v.subject.strip():
                content.append(f"{name} has no subject.")
            if not v.body.strip():
                content.append(f"{name} has no body.")
    first = per_step_active[0] if per_step_active else []
    no_unsubscribe = [f"Email 1{v.label}" for v in first if not v.has_unsubscribe]
    variable_problems = [
        f"Email {v.step + 1}{v.label}: unknown variable {{{{{name}}}}}" for v in active for name in v.unknown
    ] + [f"Email {v.step + 1}{v.label}: {p}" for v in active for p in v.problems]
    spam = sorted({w for v in active for w in v.spam_words})
    long_emails = [
        f"Email {v.step + 1}{v.label} ({v.words} words)" for v in active if v.words > LONG_EMAIL_WORDS
    ]
    unsubscribe_label = (
        "The first email has {{unsubscribe}}"
        if f.unsubscribe_mode == "link"
        else "The first email has {{unsubscribe}} (reply-with-stop line)"
    )
    return [
        _item(
            "mailboxes",
            "At least one active mailbox is attached",
            f.mailboxes_active > 0,
            f"Attach an active mailbox: {update_campaign(' with mailboxIds')}; connect one first with "
            f"{_route('POST', '/mailboxes', 'create_mailbox')}."
            if f.mailboxes_attached == 0
            else "Every attached mailbox is paused or has an error: resume a paused one with "
            f"{_route('PATCH', '/mailboxes/{mailboxId}', 'update_mailbox', ' with status active')}, or "
            "test one in error again with "
            f"{_route('POST', '/mailboxes/{mailboxId}/test', 'retest_mailbox')}.",
        ),
        _item(
            "sequence",
            "Every email has an active variant with a subject and a body",
            not content,
            f"Complete the emails listed in details: {edit_emails}.",
            details=content,
        ),
        _item(
            "unsubscribe",
            unsubscribe_label,
            bool(first) and not no_unsubscribe,
            f"Add {{{{unsubscribe}}}} to every active variant of the first email: {edit_emails}.",
            details=no_unsubscribe,
        ),
        _item(
            "variables",
            "Every variable can be filled in",
            not variable_problems,
            "Fix the variables listed in details, or give them a fallback like {{company|your team}}: "
            f"{edit_emails}.",
            details=variable_problems,
        ),
        _item(
            "leads",
            "The campaign has leads to contact",
            f.leads_waiting > 0,
            f"Add leads: {_route('POST', f'{campaign}/leads', 'add_leads_to_campaign')} with leadIds, "
            "listIds or allLeads.",
        ),
        _item(
            "schedule",
            "The schedule can send",
            not f.schedule,
            f"Fix the schedule listed in details: {update_campaign('')}.",
            details=list(f.schedule),
        ),
        _item(
            "plan",
            "The workspace has an active plan",
            f.plan_active,
            "Launching needs an active plan; no route or tool sets one: the server's operator runs "
            "`outreach plan set --workspace <slug> --plan <plan>`.",
        ),
        _item(
            "link_domain",
            "An active link domain"
            if f.link_domain_required
            else "Link domain (not required on this server)",
            f.link_domain_active or not f.link_domain_required,
            "This server requires an active link domain before a campaign can launch: set one with "
            f"{_route('PUT', '/link-domain', 'set_link_domain')}, publish its CNAME record and wait for it "
            f"to become active; see {_route('GET', '/link-domain', 'get_link_domain')}.",
        ),
        _item(
            "risky_leads",
            "No risky or catch-all leads",
            f.risky_leads == 0,
            f"{f.risky_leads:,} risky or catch-all leads will be emailed; leave them out with "
            f"{update_campaign(' with skipRisky true')}.",
            required=False,
        ),
        _item(
            "tracking_link_domain",
            "Tracking uses a link domain",
            not f.tracking or f.link_domain_active,
            "Open or click tracking is on without an active link domain: links point at this server's own "
            "address, which hurts deliverability. Set a link domain with "
            f"{_route('PUT', '/link-domain', 'set_link_domain')}, or turn tracking off with "
            f"{update_campaign(' with trackOpens and trackClicks false')}.",
            required=False,
        ),
        _item(
            "sending_domains",
            "The sending domains are graded A to C",
            not f.weak_domains,
            "Emails from the domains listed in details are likely to land in spam: fix what their reports "
            f"list ({_route('GET', '/domains', 'list_domains')}), then check again with "
            f"{_route('POST', '/domains/check', 'check_sending_domain')}.",
            required=False,
            details=list(f.weak_domains),
        ),
        _item(
            "spam_words",
            "No spam-trigger words",
            not spam,
            f"Some words often trip spam filters: {edit_emails}.",
            required=False,
            details=spam,
        ),
        _item(
            "long_emails",
            f"Emails are at most {LONG_EMAIL_WORDS} words",
            not long_emails,
            f"Long cold emails get fewer replies: {edit_emails}.",
            required=False,
            details=long_emails,
        ),
        _item(
            "warmup",
            "Warmed-up mailboxes land in the inbox",
            not f.warmup_problems,
            "Some attached mailboxes have a low warmup score or warmup problems (details): send less from "
            "them, or check them with "
            f"{_route('GET', '/mailboxes/{mailboxId}', 'get_mailbox')} (warmup).",
            required=False,
            details=list(f.warmup_problems),
        ),
    ]


def can_launch(items: Sequence[ChecklistItem]) -> bool:
    return all(item.ok for item in items if item.required)
