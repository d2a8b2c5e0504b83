"""The pure sending rules with a fixed clock, and the message builder."""

from __future__ import annotations

import random
from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from outreach_core.billing.rules import month_start
from outreach_core.campaigns import schedule
from outreach_core.campaigns.rules import WeightedVariant, pick_variant
from outreach_core.campaigns.stops import is_company_domain
from outreach_core.kernel.ports import FixedClock
from outreach_core.mail.message import Outgoing, UnsafeHeader, build_message, new_message_id
from outreach_core.sending import rules

WEEKDAYS_9_TO_5 = schedule.Schedule("Europe/Berlin", 540, 1020, 31, None, None)
# 2026-06-01 is a Monday; Berlin is UTC+2 in summer, New York UTC-4.
MONDAY_10_BERLIN = datetime(2026, 6, 1, 8, 0, tzinfo=UTC)


def test_window_in_the_leads_time_zone_else_the_fallback() -> None:
    clock = FixedClock(MONDAY_10_BERLIN)
    assert schedule.in_window(clock.now(), None, WEEKDAYS_9_TO_5)  # 10:00 Berlin
    assert not schedule.in_window(clock.now(), "America/New_York", WEEKDAYS_9_TO_5)  # 04:00 there
    assert schedule.in_window(clock.now(), "not/a-zone", WEEKDAYS_9_TO_5)  # unknown zone: fallback
    opens = schedule.window_opens(clock.now(), "America/New_York", WEEKDAYS_9_TO_5)
    assert opens == datetime(2026, 6, 1, 13, 0, tzinfo=UTC)  # 09:00 New York
    clock.set(datetime(2026, 6, 1, 14, 59, 30, tzinfo=UTC))  # 16:59:30 Berlin: the last minute
    assert not schedule.in_window(clock.now(), None, WEEKDAYS_9_TO_5)
    assert schedule.window_opens(clock.now(), None, WEEKDAYS_9_TO_5) == datetime(2026, 6, 2, 7, 0, tzinfo=UTC)


def test_days_bitmask_monday_is_bit_zero() -> None:
    saturday = datetime(2026, 6, 6, 9, 0, tzinfo=UTC)  # 11:00 Berlin on a Saturday
    assert not schedule.in_window(saturday, None, WEEKDAYS_9_TO_5)
    assert schedule.window_opens(saturday, None, WEEKDAYS_9_TO_5) == datetime(2026, 6, 8, 7, 0, tzinfo=UTC)
    weekends = schedule.Schedule("Europe/Berlin", 540, 1020, 0b1100000, None, None)
    assert schedule.in_window(saturday, None, weekends)


def test_start_on_and_end_on_in_the_fallback_zone() -> None:
    s = schedule.Schedule("Asia/Tokyo", 0, 1440, 127, "2026-06-02", "2026-06-03")
    assert schedule.not_started(datetime(2026, 6, 1, 14, 0, tzinfo=UTC), s)  # 23:00 Tokyo on the 1st
    assert not schedule.not_started(datetime(2026, 6, 1, 15, 0, tzinfo=UTC), s)  # midnight on the 2nd
    assert not schedule.ended(datetime(2026, 6, 3, 14, 59, tzinfo=UTC), s)
    assert schedule.ended(datetime(2026, 6, 3, 15, 0, tzinfo=UTC), s)  # the 4th in Tokyo


def test_ramp_limit_counts_in_the_mailbox_day() -> None:
    m = rules.MailboxLimits(30, True, 5, 2, "2026-06-01", "America/Los_Angeles", "2026-06-03", 8)
    # 2026-06-04 05:00 UTC is still the 3rd in Los Angeles: ramp day 3 -> 9, 8 sent -> 1 left
    assert rules.today_limit(m, datetime(2026, 6, 4, 5, 0, tzinfo=UTC)) == 9
    assert rules.sends_left(m, datetime(2026, 6, 4, 5, 0, tzinfo=UTC)) == 1
    # a new day there: the count starts again, ramp day 4 -> 11
    assert rules.sends_left(m, datetime(2026, 6, 4, 8, 0, tzinfo=UTC)) == 11
    later = rules.MailboxLimits(30, True, 5, 2, "2026-01-01", "UTC", None, 0)
    assert rules.today_limit(later, MONDAY_10_BERLIN) == 30
    off = rules.MailboxLimits(30, False, 5, 2, "2026-06-01", "UTC", None, 0)
    assert rules.today_limit(off, MONDAY_10_BERLIN) == 30
    assert rules.next_local_midnight(
        datetime(2026, 6, 4, 5, 0, tzinfo=UTC), "America/Los_Angeles"
    ) == datetime(2026, 6, 4, 7, 0, tzinfo=UTC)


def test_gaps_stay_between_min_and_max() -> None:
    rng = random.Random(7)
    gaps = [rules.next_gap(30, 90, rng).total_seconds() for _ in range(500)]
    assert min(gaps) >= 30 and max(gaps) <= 90 and max(gaps) - min(gaps) > 40
    assert rules.next_gap(60, 60, rng) == timedelta(seconds=60)


def test_wait_days_and_retry_back_off() -> None:
    sent = MONDAY_10_BERLIN
    assert rules.next_step_at(sent, 3) == sent + timedelta(days=3)
    assert rules.retry_at(sent, 1) == sent + timedelta(minutes=10)
    assert rules.retry_at(sent, 3) == sent + timedelta(minutes=40)
    assert rules.retry_at(sent, 20) == sent + timedelta(hours=12)


def test_variant_by_weight_is_fixed_per_lead() -> None:
    variants = [WeightedVariant("a", 3, True), WeightedVariant("b", 1, True), WeightedVariant("c", 5, False)]
    picks = Counter(pick_variant(variants, f"lead{i}:step").id for i in range(4000))  # type: ignore[union-attr]
    assert set(picks) == {"a", "b"} and 2.5 < picks["a"] / picks["b"] < 3.5
    assert pick_variant(variants, "lead1:step") == pick_variant(variants, "lead1:step")


def test_first_emails_spread_evenly_and_prefer_the_leads_provider() -> None:
    boxes = [f"mbx{i}" for i in range(5)]
    counts: Counter[str] = Counter()
    for round_ in range(200):
        candidates = [rules.Candidate(f"cl{round_}-{k}", f"lead{round_}-{k}", "other") for k in range(10)]
        for _, box in rules.spread_first_emails(candidates, boxes, boxes, {}, esp_matching=False):
            counts[box] += 1
    assert set(counts.values()) == {200}  # every free mailbox sends once a pass
    families: dict[str, rules.ProviderFamily] = {"g": "google", "m": "microsoft"}
    leads = [rules.Candidate("x", "lead-x", "microsoft"), rules.Candidate("y", "lead-y", "google")]
    # neither preferred mailbox is free: the leftovers match providers
    pairs = rules.spread_first_emails(leads, ["g", "m"], ["a", "b"], families, esp_matching=True)
    assert sorted(pairs) == [("x", "m"), ("y", "g")]


def test_stop_rules() -> None:
    base = rules.LeadFacts(0, "active", "valid", False, False, False)
    all_on = rules.StopRules(stop_on_reply=True, stop_for_company=True, skip_risky=True)
    assert rules.stop_reason(base, all_on) is None
    assert rules.stop_reason(base.__class__(0, "unsubscribed", "valid", False, False, False), all_on)[0] == (  # type: ignore[index]
        "unsubscribed"
    )
    assert (
        rules.stop_reason(rules.LeadFacts(0, "active", "risky", False, False, False), all_on)[0] == "skipped"
    )  # type: ignore[index]
    assert rules.stop_reason(rules.LeadFacts(1, "active", "risky", False, False, False), all_on) is None
    assert (
        rules.stop_reason(rules.LeadFacts(1, "active", "valid", True, False, False), all_on)[0] == "stopped"
    )  # type: ignore[index]
    off = rules.StopRules(stop_on_reply=False, stop_for_company=False, skip_risky=False)
    assert rules.stop_reason(rules.LeadFacts(1, "replied", "valid", False, False, True), off) is None
    assert rules.stop_reason(rules.LeadFacts(1, "replied", "valid", False, False, False), all_on) == (
        "stopped",
        "The lead replied.",
    )
    assert not is_company_domain("gmail.com") and not is_company_domain("yahoo.co.uk")
    assert is_company_domain("acme.example")


@pytest.mark.parametrize(
    ("phase", "code", "text", "outcome"),
    [
        ("rcpt", 451, "4.3.0 try again later", "retry"),
        ("rcpt", 452, "4.2.2 mailbox full", "retry"),
        # from MAIL FROM on, a reply is this email's outcome ...
        ("data", 421, "4.7.0 rate limited", "retry"),
        ("rcpt", 450, "4.7.1 policy", "retry"),
        ("rcpt", 550, "5.1.1 no such user", "bounced"),
        ("rcpt", 550, "no such user", "bounced"),
        ("rcpt", 550, "5.2.1 mailbox disabled", "bounced"),
        ("rcpt", 554, "5.7.1 recipient address rejected: access denied", "failed"),
        ("data", 550, "5.7.1 message rejected as spam", "failed"),
        ("data", 554, "5.4.5 daily sending quota exceeded", "retry"),
        ("data", 552, "5.3.4 message too big", "failed"),
        ("mail", 552, "5.3.4 message size exceeds fixed limit", "failed"),
        ("mail", 451, "4.3.0 try again", "retry"),
        ("data", None, "the server closed the connection", "retry"),
        ("rcpt", None, "timed out", "retry"),
        ("message", None, "the address is not plain ASCII and the server does not offer SMTPUTF8", "failed"),
        # ... except authentication replies, and a refusal of the mailbox's own address at MAIL FROM
        ("rcpt", 530, "5.7.0 authentication required", "mailbox_error"),
        ("mail", 553, "5.7.1 sender address rejected: not owned by user", "mailbox_error"),
        # connection, TLS, login and the mailbox's own settings: the mailbox's
        ("auth", 535, "5.7.8 bad credentials", "mailbox_error"),
        ("connect", None, "connection refused", "mailbox_error"),
        ("tls", None, "TLS error", "mailbox_error"),
        ("credentials", None, "the stored password cannot be decrypted", "mailbox_error"),
        ("sender", None, "the mailbox's display name contains a line break", "mailbox_error"),
    ],
)
def test_smtp_outcome_classes(phase: rules.Phase, code: int | None, text: str, outcome: str) -> None:
    assert rules.classify(phase, code, text) == outcome


def test_bounce_threshold_needs_a_sample() -> None:
    assert not rules.bounce_threshold_reached(5, 10, None)  # 50 % but only 10 outcomes
    assert not rules.bounce_threshold_reached(0, 20, 0.0)  # no bounce, nothing to pause for
    assert rules.bounce_threshold_reached(1, 20, None)  # 5 % default
    assert not rules.bounce_threshold_reached(1, 21, None)
    assert rules.bounce_threshold_reached(2, 20, 10)


def test_month_start_follows_the_billing_period() -> None:
    now = datetime(2026, 6, 20, tzinfo=UTC)
    assert month_start(now, None) == datetime(2026, 6, 1, tzinfo=UTC)
    assert month_start(now, datetime(2026, 1, 25, tzinfo=UTC)) == datetime(2026, 5, 25, tzinfo=UTC)
    assert month_start(now, datetime(2026, 1, 5, tzinfo=UTC)) == datetime(2026, 6, 5, tzinfo=UTC)


def _outgoing(**changes: object) -> Outgoing:
    values: dict[str, object] = {
        "from_email": "sam@mail.test",
        "from_name": "Sam, Sender",
        "to_email": "ada@example.org",
        "subject": "Hello",
        "html": "<p>Hi</p>",
        "text": "Hi",
        "message_id": new_message_id("mail.test"),
        "date": MONDAY_10_BERLIN,
        "unsubscribe_url": "https://out.example/u/tok",
        "in_reply_to": None,
    }
    values.update(changes)
    return Outgoing(**values)  # type: ignore[arg-type]


def test_message_headers_and_parts() -> None:
    msg = build_message(_outgoing(in_reply_to="<first@mail.test>"))
    assert msg["From"] == '"Sam, Sender" <sam@mail.test>'
    assert msg["List-Unsubscribe"] == "<https://out.example/u/tok>"
    assert msg["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    assert msg["In-Reply-To"] == msg["References"] == "<first@mail.test>"
    assert msg.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    no_link = build_message(_outgoing(unsubscribe_url=None))
    assert no_link["List-Unsubscribe"] is None and no_link["List-Unsubscribe-Post"] is None


@pytest.mark.parametrize(
    ("field", "mailbox"),
    [
        ("subject", False),
        ("from_name", True),
        ("to_email", False),
        ("from_email", True),
        ("message_id", True),
        ("unsubscribe_url", False),
        ("in_reply_to", False),
    ],
)
@pytest.mark.parametrize(
    "breaker",
    ["\r\nBcc: victim@example.org", "\nX-Injected: 1", "a\rb", "\x00", "\x1b[31m", "\x85", "\u2028"],
)
def test_header_values_with_line_breaks_are_refused(field: str, mailbox: bool, breaker: str) -> None:
    """Refused, saying whose value it is: the mailbox's (every email from it would fail) or this email's."""
    with pytest.raises(UnsafeHeader) as refused:
        build_message(_outgoing(**{field: "value" + breaker}))
    assert refused.value.mailbox is mailbox
    if field == "from_name":
        assert "displayName" in refused.value.reason
