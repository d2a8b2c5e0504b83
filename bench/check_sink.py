"""Checks a sink log written by `bench/sender_scale.py --sink-seconds` against the rules, independently of
the sender's own bookkeeping: it reads only what the SMTP sink saw (arrival time, login, recipient,
Message-ID, In-Reply-To) and the configuration (mailbox gaps and limits, lead time zones, campaign windows).

    .venv/bin/python bench/check_sink.py sender-sink.jsonl   (same OUTREACH_DATABASE_URL as the run)

Rules checked: no recipient gets the same step twice and Message-IDs are unique (duplicates); consecutive
emails of one mailbox are at least `minGapS` apart, less `--tolerance` seconds of network jitter (gaps); no
mailbox sends more than its effective limit on a day of its time zone (daily limits); every email arrives
inside its campaign's window on an allowed day in the lead's time zone (windows).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import sys
from collections import Counter, defaultdict
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import text  # noqa: E402
from sqlalchemy.ext.asyncio import create_async_engine  # noqa: E402


async def load(url: str, recipients: set[str]) -> tuple[dict[str, dict], dict[str, dict]]:  # type: ignore[type-arg]
    engine = create_async_engine(url)
    async with engine.connect() as conn:
        boxes = {
            r["email"]: dict(r)
            for r in (
                await conn.execute(
                    text(
                        "SELECT email, min_gap_s, daily_limit, ramp_enabled, ramp_start, ramp_increment, "
                        "ramp_started_on, timezone FROM mailboxes"
                    )
                )
            ).mappings()
        }
        leads: dict[str, dict] = {}  # type: ignore[type-arg]
        for r in (
            await conn.execute(
                text(
                    "SELECT l.email, l.timezone, c.timezone_fallback, c.window_start, c.window_end, c.days "
                    "FROM campaign_leads cl JOIN leads l ON l.id = cl.lead_id "
                    "JOIN campaigns c ON c.id = cl.campaign_id"
                )
            )
        ).mappings():
            if r["email"] in recipients:
                leads[r["email"]] = dict(r)
    await engine.dispose()
    return boxes, leads


def limit_on(box: dict, day: date) -> int:  # type: ignore[type-arg]
    if not box["ramp_enabled"]:
        return int(box["daily_limit"])
    ramp_day = max(1, (day - date.fromisoformat(box["ramp_started_on"])).days + 1)
    return min(int(box["daily_limit"]), box["ramp_start"] + box["ramp_increment"] * (ramp_day - 1))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("log")
    parser.add_argument("--tolerance", type=float, default=1.0, help="seconds of arrival jitter allowed")
    args = parser.parse_args()
    url = os.environ["OUTREACH_DATABASE_URL"]
    entries = [json.loads(line) for line in Path(args.log).read_text().splitlines() if line.strip()]
    recipients = {to for e in entries for to in e["to"]}
    boxes, leads = asyncio.run(load(url, recipients))
    violations: Counter[str] = Counter(
        dict.fromkeys(
            (
                "duplicate Message-ID",
                "recipient got a first email twice",
                "follow-up sent twice",
                "gap below minGapS",
                "daily limit exceeded",
                "outside the window",
            ),
            0,
        )
    )

    ids = Counter(e["messageId"] for e in entries)
    violations["duplicate Message-ID"] = sum(n - 1 for n in ids.values() if n > 1)
    first_emails = Counter(to for e in entries if not e["inReplyTo"] for to in e["to"])
    violations["recipient got a first email twice"] = sum(n - 1 for n in first_emails.values() if n > 1)
    replies = Counter((to, e["subject"], e["inReplyTo"]) for e in entries if e["inReplyTo"] for to in e["to"])
    violations["follow-up sent twice"] = sum(n - 1 for n in replies.values() if n > 1)

    by_box: dict[str, list[float]] = defaultdict(list)
    for e in entries:
        # the AUTH user is the mailbox (older logs without it: the envelope sender, the same address)
        by_box[e["login"] or e["from"]].append(e["t"])
    per_day: Counter[tuple[str, date]] = Counter()
    smallest_gap = math.inf
    for login, times in by_box.items():
        box = boxes[login]
        times.sort()
        for a, b in itertools.pairwise(times):
            smallest_gap = min(smallest_gap, b - a)
            if b - a < box["min_gap_s"] - args.tolerance:
                violations["gap below minGapS"] += 1
        for t in times:
            per_day[(login, datetime.fromtimestamp(t, ZoneInfo(box["timezone"])).date())] += 1
    for (login, day), n in per_day.items():
        if n > limit_on(boxes[login], day):
            violations["daily limit exceeded"] += 1

    for e in entries:
        for to in e["to"]:
            lead = leads[to]
            zone = ZoneInfo(lead["timezone"] or lead["timezone_fallback"])
            local = datetime.fromtimestamp(e["t"], UTC).astimezone(zone)
            minute = local.hour * 60 + local.minute + local.second / 60
            allowed_day = bool(lead["days"] & (1 << local.weekday()))
            if not (allowed_day and lead["window_start"] <= minute < lead["window_end"]):
                violations["outside the window"] += 1

    span = (max(e["t"] for e in entries) - min(e["t"] for e in entries)) if entries else 0
    gaps = sorted(b - a for times in by_box.values() for a, b in itertools.pairwise(times))
    # The most the rules allow in this span: every mailbox sending from the first second, every minGapS,
    # up to its daily limit (the span is within one day here).
    allowed = sum(
        min(int(span // boxes[login]["min_gap_s"]) + 1, limit_on(boxes[login], date.today()))
        for login in boxes
    )
    print(
        f"{len(entries):,} emails from {len(by_box):,} mailboxes over {span:.0f} s "
        f"({len(entries) / span if span else 0:.1f}/s); the rules allow at most {allowed:,} "
        f"({len(entries) * 100 / allowed if allowed else 0:.1f} % delivered)"
    )
    if gaps:
        print(
            f"gaps between one mailbox's emails: smallest {smallest_gap:.1f} s, median "
            f"{gaps[len(gaps) // 2]:.1f} s, 95th percentile {gaps[int(len(gaps) * 0.95)]:.1f} s"
        )
    for rule, n in sorted(violations.items()):
        print(f"  {rule}: {n}")
    total = sum(violations.values())
    print("violations:", total)
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
