"""The bounce corpus (tests/data/bounces, BSD 2-Clause, see its README): 430 real bounces, complaint reports
and auto-replies with the verdicts of a mature bounce parser. Prints the three figures (run with `-s` for
the misses per family) and holds the classifier to the thresholds of issue 17."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from outreach_core.inbox.rules import Classification, classify, parse_message

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bounces"


@dataclass
class Figures:
    bounces: int = 0
    recognised: int = 0
    recipient_found: int = 0
    hard_rows: int = 0
    hard_agree: int = 0
    misses: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    kinds: Counter[tuple[str, str]] = field(default_factory=Counter)


def manifest() -> list[dict[str, Any]]:
    return list(json.loads((CORPUS / "manifest.json").read_text()))


def verdict(entry: dict[str, Any]) -> Classification:
    return classify(parse_message((CORPUS / entry["file"]).read_bytes()))


def is_delivered_dsn(entry: dict[str, Any]) -> bool:
    """The corpus README: successful-delivery DSNs carry kind `bounce` but are not failures."""
    return entry["kind"] == "bounce" and all(row["reason"] == "delivered" for row in entry["expected"])


@cache
def figures() -> Figures:
    f = Figures()
    for entry in manifest():
        v = verdict(entry)
        name = entry["file"].rsplit("/", 1)[-1]
        f.kinds[(entry["kind"], v.kind)] += 1
        if entry["kind"] != "bounce" or is_delivered_dsn(entry):
            continue
        f.bounces += 1
        if v.kind != "bounce":
            f.misses[entry["family"]].append(f"{name}: not a bounce ({v.kind}: {v.reason})")
            continue
        f.recognised += 1
        found = {b.recipient: b for b in v.bounces}
        expected = [row["recipient"].lower() for row in entry["expected"] if row["recipient"]]
        if any(r in found for r in expected):
            f.recipient_found += 1
        else:
            f.misses[entry["family"]].append(f"{name}: recipient {expected} not in {list(found)}")
        for row in entry["expected"]:
            if row["hard"] is None:
                continue
            f.hard_rows += 1
            got = found.get((row["recipient"] or "").lower())
            if got is None and len(v.bounces) == 1 and len(entry["expected"]) == 1:
                got = v.bounces[0]  # a notice that names its one recipient differently (quoted, %-hack)
            if got is not None and got.hard == row["hard"]:
                f.hard_agree += 1
            else:
                said = f"{got.reason}, hard={got.hard}" if got else "no row"
                f.misses[entry["family"]].append(
                    f"{name}: hard={row['hard']} ({row['reason']} {row['status']}), we said {said}"
                )
    return f


def test_corpus_figures_meet_the_thresholds() -> None:
    f = figures()
    recognised = f.recognised / f.bounces
    recipients = f.recipient_found / f.bounces
    hard = f.hard_agree / f.hard_rows
    print(
        f"\nbounce corpus: {f.bounces} bounces (delivered DSNs excluded)\n"
        f"  recognised as bounces:   {f.recognised}/{f.bounces} = {recognised:.1%}  (threshold 97 %)\n"
        f"  failed recipient found:  {f.recipient_found}/{f.bounces} = {recipients:.1%}  (threshold 95 %)\n"
        f"  hard/soft flag agrees:   {f.hard_agree}/{f.hard_rows} = {hard:.1%}  (threshold 90 %)"
    )
    for family in sorted(f.misses):
        print(f"  {family}:")
        for miss in f.misses[family]:
            print(f"    {miss}")
    assert recognised >= 0.97
    assert recipients >= 0.95
    assert hard >= 0.90


def entries(kind: str) -> list[dict[str, Any]]:
    return [e for e in manifest() if e["kind"] == kind]


@pytest.mark.parametrize("entry", entries("feedback_report"), ids=lambda e: e["file"])
def test_feedback_reports_are_complaints_for_the_reported_recipient(entry: dict[str, Any]) -> None:
    v = verdict(entry)
    expected = {row["recipient"] for row in entry["expected"] if row["recipient"]}
    if entry["file"].endswith("arf-26.eml"):
        # Apple Mail's "Unsubscribe" button, mailed to a list address (X-Apple-Unsubscribe): the person opted
        # out; it is not a spam complaint, so it must not count as one. The sender is the one to unsubscribe.
        assert v.kind == "unsubscribe_request"
        assert parse_message((CORPUS / entry["file"]).read_bytes()).from_address in expected
        return
    assert v.kind == "complaint", v.reason
    assert v.complaint is not None
    assert set(v.complaint.recipients) >= expected


@pytest.mark.parametrize("entry", entries("auto_reply"), ids=lambda e: e["file"])
def test_auto_replies_are_auto_replies(entry: dict[str, Any]) -> None:
    assert verdict(entry).kind in ("auto_reply", "out_of_office")


def test_the_not_bounce_is_not_a_bounce() -> None:
    (entry,) = entries("not_bounce")
    v = verdict(entry)
    assert v.kind == "reply"
    assert v.bounces == ()


@pytest.mark.parametrize("entry", [e for e in manifest() if is_delivered_dsn(e)], ids=lambda e: e["file"])
def test_delivered_dsns_are_delivery_reports(entry: dict[str, Any]) -> None:
    v = verdict(entry)
    assert v.kind == "delivery_report"
    assert v.bounces == ()
    assert set(v.delivered) & {row["recipient"] for row in entry["expected"]}


def test_bounces_carry_the_original_message_id_for_matching() -> None:
    """Most bounces return our email or its headers: its Message-ID is what the worker matches on."""
    bounces = [e for e in manifest() if e["kind"] == "bounce" and not is_delivered_dsn(e)]
    with_id = sum(1 for e in bounces if parse_message((CORPUS / e["file"]).read_bytes()).original_message_ids)
    print(f"\nbounces with the original Message-ID found: {with_id}/{len(bounces)}")
    assert with_id / len(bounces) >= 0.75
    postfix = parse_message((CORPUS / "bounces/lhost-postfix-01.eml").read_bytes())
    assert postfix.message_id not in postfix.original_message_ids
