"""`outreach analytics rebuild` gives the counters the recording transactions kept: generated histories of
sends, refusals, hard and soft bounces, replies (again, to follow-ups, relabeled) and wins, recorded one
transaction at a time as the sender and the inbox record them, then counted again from scratch."""

from __future__ import annotations

import datetime as dt
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from outreach_core.analytics.rebuild import rebuild
from outreach_core.kernel.runtime import Runtime
from tests.analytics.ledger import Ledger
from tests.conftest import MakeWorkspace

T0 = dt.datetime(2026, 3, 20, 0, 0, tzinfo=dt.UTC)
LABELS = st.sampled_from([None, "positive", "negative", "neutral", "warning"])
HOURS = st.integers(min_value=0, max_value=24 * 20)

ACTION = st.one_of(
    st.tuples(
        st.just("send"),
        st.integers(0, 4),  # lead
        st.integers(0, 1),  # campaign
        st.integers(0, 1),  # step
        st.integers(0, 1),  # variant
        st.integers(0, 1),  # mailbox
        HOURS,
        st.sampled_from(["sent", "sent", "sent", "bounced"]),
    ),
    st.tuples(st.just("reply"), st.integers(0, 30), HOURS, LABELS),
    st.tuples(st.just("relabel"), st.integers(0, 30), LABELS),
    st.tuples(st.just("hard_bounce"), st.integers(0, 30)),
    st.tuples(st.just("soft_bounce"), st.integers(0, 30), HOURS),
    st.tuples(st.just("won"), st.integers(0, 4), HOURS, st.sampled_from([None, 0, 1])),
)


async def play(ledger: Ledger, actions: list[tuple[Any, ...]]) -> int:
    boxes = [await ledger.mailbox(), await ledger.mailbox()]
    campaigns = [await ledger.campaign([2, 2]), await ledger.campaign([2, 2])]
    leads = [
        await ledger.lead(esp="google", country="DE", timezone="America/New_York"),
        await ledger.lead(esp="microsoft"),
        await ledger.lead(esp="other", country="FR", timezone="Asia/Kolkata"),
        await ledger.lead(esp="google", timezone="Nope/Unknown"),
        await ledger.lead(esp="unknown", country="US"),
    ]
    sent: list[str] = []
    taken: set[tuple[str, str, int]] = set()
    threads: list[str] = []
    sends_made = 0
    for action in actions:
        kind = action[0]
        if kind == "send":
            _, lead, c, step, variant, box, hours, status = action
            campaign_id, variants = campaigns[c]
            key = (leads[lead], campaign_id, step)
            if key in taken:  # one send per lead and step, as the ledger's unique key says
                continue
            taken.add(key)
            sent.append(
                await ledger.send(
                    campaign_id,
                    leads[lead],
                    boxes[box],
                    at=T0 + dt.timedelta(hours=hours),
                    step=step,
                    variant_id=variants[step][variant],
                    status=status,
                )
            )
            sends_made += 1
        elif kind == "reply" and sent:
            _, i, hours, label = action
            threads.append(
                await ledger.reply(
                    sent[i % len(sent)], at=T0 + dt.timedelta(hours=hours, minutes=7), label=label
                )
            )
        elif kind == "relabel" and threads:
            _, i, label = action
            await ledger.relabel(threads[i % len(threads)], label)
        elif kind == "hard_bounce" and sent:
            await ledger.hard_bounce(sent[action[1] % len(sent)])
        elif kind == "soft_bounce" and sent:
            _, i, hours = action
            send_id = sent[i % len(sent)]
            await ledger.soft_bounce(send_id)
            if hours % 2:
                await ledger.resend(send_id, T0 + dt.timedelta(hours=hours))
        elif kind == "won":
            _, lead, hours, c = action
            await ledger.won(
                leads[lead], T0 + dt.timedelta(hours=hours), None if c is None else campaigns[c][0]
            )
    return sends_made


@settings(
    max_examples=12,
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # a failing history is shown whole, unshrunk
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(actions=st.lists(ACTION, min_size=1, max_size=25), zone=st.sampled_from(["UTC", "Europe/Berlin"]))
async def test_rebuild_equals_what_the_transactions_kept(
    runtime: Runtime, make_workspace: MakeWorkspace, actions: list[tuple[Any, ...]], zone: str
) -> None:
    ledger = Ledger(await make_workspace())
    await ledger.timezone(zone)
    await play(ledger, actions)
    kept = await ledger.counters()
    # an independent count: the workspace's daily `sent` counters add up to the ledger rows sent or bounced
    daily_sent = sum(r[5] for r in kept if r[0] == "w" and r[3] == "d")
    assert daily_sent == await ledger.ledger_sent()
    done = await runtime.system(rebuild, ledger.ws.workspace_id)
    assert [d.workspace_id for d in done] == [ledger.ws.workspace_id]
    assert await ledger.counters() == kept
