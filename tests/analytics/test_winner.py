"""The A/B winner rule (docs/analytics.md): 50 sends on every variant, a two-proportion z-test at 95 % on
reply rate, positive replies breaking ties; through a campaign's breakdown at 49 and 50 sends."""

from __future__ import annotations

import datetime as dt

import pytest

from outreach_core.analytics.rules import Arm, two_proportion_p, winner
from tests.analytics.conftest import NOW, Reader
from tests.analytics.ledger import Ledger


def test_needs_fifty_sends_on_every_variant() -> None:
    short = winner([Arm("a", 50, 20, 5), Arm("b", 49, 0, 0)], {"a": "A", "b": "B"})
    assert short.metric is None and short.reason is not None and "B has 49" in short.reason
    full = winner([Arm("a", 50, 20, 5), Arm("b", 50, 0, 0)])
    assert (full.variant_id, full.metric) == ("a", "replyRate")
    assert full.confidence is not None and full.confidence > 0.95
    assert full.lift is None  # the runner-up has no replies: no relative lift


def test_the_difference_must_be_significant() -> None:
    close = winner([Arm("a", 100, 11, 2), Arm("b", 100, 10, 2)])
    assert close.metric is None and close.reason is not None and "95 %" in close.reason
    clear = winner([Arm("a", 1000, 150, 40), Arm("b", 1000, 100, 30)])
    assert clear.variant_id == "a" and clear.lift == pytest.approx(0.5)
    assert two_proportion_p(150, 1000, 100, 1000) < 0.05


def test_positive_replies_break_a_tie_on_reply_rate() -> None:
    tie = winner([Arm("a", 400, 40, 30), Arm("b", 400, 40, 5)])
    assert (tie.variant_id, tie.metric) == ("a", "positiveRate")


def test_a_single_variant_has_no_winner() -> None:
    assert winner([Arm("a", 500, 100, 50)]).reason is not None


@pytest.mark.parametrize(("b_sends", "named"), [(49, False), (50, True)])
async def test_breakdown_names_a_winner_from_fifty_sends(
    ledger: Ledger, reader: Reader, b_sends: int, named: bool
) -> None:
    box = await ledger.mailbox()
    campaign, variants = await ledger.campaign([2])
    a, b = variants[0]
    when = NOW - dt.timedelta(days=1)
    for i in range(60):
        sent = await ledger.send(campaign, await ledger.lead(), box, at=when, variant_id=a)
        if i < 20:
            await ledger.reply(sent, at=NOW - dt.timedelta(hours=1))
    for _ in range(b_sends):
        await ledger.send(campaign, await ledger.lead(), box, at=when, variant_id=b)
    step = (await reader.breakdown(campaign)).steps[0]
    assert [(v.name, v.sent, v.replied) for v in step.variants] == [("A", 60, 20), ("B", b_sends, 0)]
    if named:
        assert step.winner is not None and step.winner.variant_id == a and step.reason is None
        assert step.winner.metric == "replyRate" and step.winner.confidence > 0.95
    else:
        assert step.winner is None and step.reason is not None and "50 or more sends" in step.reason
