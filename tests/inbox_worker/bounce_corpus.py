"""The labelled bounce corpus (tests/data/bounces, BSD 2-Clause, see its README and LICENSE) as it would reach
a mailbox of ours: which leads each message is about, which campaign round sends them an email, each message
rewritten to return *our* email, and the per-stage figures of the end-to-end run.

A corpus bounce returns somebody else's email. In production it returns ours: the returned original (or its
headers) carries the Message-ID our sender gave it, and the bounce is addressed to our mailbox. `as_ours`
makes exactly those two changes to the bytes, nothing else: every Message-ID quoted below the top-level
header block (`Message-ID:` lines of the returned message or its headers, wherever they are), and the
email it answers in its own `In-Reply-To` and `References` (the last one), becomes the Message-ID of the
email we sent, and the bounce's own recipient (the original's sender) becomes our
mailbox's address. Parts encoded in base64 are left as they are (the parser decodes them; the quoted
Message-ID then does not match and the bounce is matched by its failed recipient, as in production when a
server mangles the copy).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from outreach_core.inbox.rules import classify, parse_message
from outreach_core.targets.rules import normalize_email

CORPUS = Path(__file__).resolve().parents[1] / "data" / "bounces"

_HEADER_END = re.compile(rb"\r?\n\r?\n")
_QUOTED_ID = re.compile(rb"(?im)^[ \t>]*message-id:[ \t]*(?:\r?\n[ \t]+)?(<[^<>\s]+>)")
_TO = re.compile(rb"(?im)^to:[ \t]*(.*(?:\r?\n[ \t].*)*)")
_ADDRESS = re.compile(rb"[A-Za-z0-9._%+=-]+@[A-Za-z0-9.-]+")
_OWN_ID = re.compile(rb"(?im)^message-id:[ \t]*(?:\r?\n[ \t]+)?(<[^<>\s]+>)")
_ANSWERED = re.compile(rb"(?im)^(?:in-reply-to|references):[ \t]*(.*(?:\r?\n[ \t].*)*)")
_ID = re.compile(rb"<[^<>\s]+>")


@dataclass(frozen=True)
class Case:
    """One labelled corpus message: its file, kind (`bounce`, `feedback_report`, `auto_reply`,
    `not_bounce`), the leads it is about (normalised, in the label's order) and the expected rows."""

    file: str
    kind: str
    family: str
    leads: tuple[str, ...]
    expected: tuple[dict[str, Any], ...]

    @property
    def name(self) -> str:
        return self.file.rsplit("/", 1)[-1]

    @property
    def raw(self) -> bytes:
        return (CORPUS / self.file).read_bytes()

    @property
    def delivered_dsn(self) -> bool:
        """The corpus README: successful-delivery DSNs carry kind `bounce` but are not failures."""
        return self.kind == "bounce" and all(r["reason"] == "delivered" for r in self.expected)

    @property
    def failure(self) -> bool:
        return self.kind == "bounce" and not self.delivered_dsn

    def expected_hard(self, recipient: str | None) -> bool | None:
        """The label's hard flag for the row of `recipient` (the only row when there is one)."""
        rows = [r for r in self.expected if r["hard"] is not None]
        for row in rows:
            if recipient is not None and normalize(row["recipient"]) == recipient:
                return bool(row["hard"])
        return bool(rows[0]["hard"]) if len(rows) == 1 else None


def normalize(address: str | None) -> str | None:
    found = normalize_email(address) if address else None
    return None if found is None else found[0]


@cache
def cases() -> tuple[Case, ...]:
    out: list[Case] = []
    for entry in json.loads((CORPUS / "manifest.json").read_text()):
        named = [normalize(r["recipient"]) for r in entry["expected"]]
        leads = tuple(dict.fromkeys(a for a in named if a))
        out.append(Case(entry["file"], entry["kind"], entry["family"], leads, tuple(entry["expected"])))
    return tuple(out)


def rounds(of: tuple[Case, ...]) -> list[list[Case]]:
    """Cases in rounds where no lead appears twice: round n is one campaign, so every message gets an email
    of its own to return (the corpus names `kijitora@example.com` in 41 messages)."""
    out: list[list[Case]] = []
    used: list[set[str]] = []
    for case in of:
        if not case.leads:
            continue
        n = next((i for i, taken in enumerate(used) if not taken & set(case.leads)), len(out))
        if n == len(out):
            out.append([])
            used.append(set())
        out[n].append(case)
        used[n].update(case.leads)
    return out


def as_ours(raw: bytes, message_id: str, mailbox: str, leads: tuple[str, ...]) -> bytes:
    """The message as it would return our email `message_id` sent from `mailbox` (module docstring)."""
    split = _HEADER_END.search(raw)
    top, body = (raw[: split.start()], raw[split.start() :]) if split else (raw, b"")
    own = _OWN_ID.search(top)
    own_id = own.group(1) if own else None
    quoted = {m.group(1) for m in _QUOTED_ID.finditer(body)}
    for answered in _ANSWERED.finditer(top):  # the email it answers, named in its own headers
        quoted.update(_ID.findall(answered.group(1))[-1:])
    quoted.discard(own_id or b"")
    for old in quoted:
        raw = raw.replace(old, message_id.encode())
    to = _TO.search(top)
    for found in _ADDRESS.findall(to.group(1)) if to else []:
        address = found.decode("ascii", "replace")
        if normalize(address) in leads or address.lower().startswith(("postmaster@", "mailer-daemon@")):
            continue
        raw = re.sub(re.escape(found), mailbox.encode(), raw, flags=re.IGNORECASE)
    return raw


@dataclass
class Figures:
    """Per-stage counts over the failures (bounces, delivered DSNs excluded) of the run."""

    bounces: int = 0
    classified: int = 0  # the pure classifier: a bounce naming one of the right leads
    matched: int = 0  # recorded (any kind) for one of the right leads
    recorded: int = 0  # recorded as a bounce of one of the right leads
    hard_rows: int = 0
    hard_right: int = 0
    misses: list[str] = field(default_factory=list)
    kinds: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, case: Case, ours: bytes, stored: Any | None, lead_email: str | None) -> None:
        """`stored` is the recorded message (None: not recorded), `lead_email` its thread's lead."""
        verdict = classify(parse_message(ours))
        self.kinds[(case.kind, stored.kind if stored is not None else "-")] += 1
        if not case.failure:
            return
        self.bounces += 1
        named = {b.recipient for b in verdict.bounces}
        if verdict.kind == "bounce" and named & set(case.leads):
            self.classified += 1
        right = stored is not None and lead_email in case.leads
        self.matched += right
        if not right:
            why = "not recorded" if stored is None else f"recorded for {lead_email}"
            self.misses.append(f"{case.name}: {why} (classifier: {verdict.kind}: {verdict.reason})")
            return
        if stored.kind != "bounce":
            self.misses.append(f"{case.name}: recorded as {stored.kind}")
            return
        self.recorded += 1
        bounce = stored.bounce or {}
        want = case.expected_hard(bounce.get("recipient"))
        if want is None:
            want = case.expected_hard(lead_email)
        if want is None:
            return
        self.hard_rows += 1
        if bounce.get("hard") == want:
            self.hard_right += 1
        else:
            self.misses.append(
                f"{case.name}: hard={want}, recorded {bounce.get('reason')} hard={bounce.get('hard')}"
            )

    def report(self) -> str:
        def pct(n: int, d: int) -> str:
            return f"{n}/{d} = {n / d:.1%}" if d else "0/0"

        lines = [
            f"bounce corpus end to end: {self.bounces} failures (delivered DSNs excluded)",
            f"  classifier (bounce, right recipient): {pct(self.classified, self.bounces)}",
            f"  matched to the right lead:            {pct(self.matched, self.bounces)}",
            f"  recorded as a bounce of that lead:    {pct(self.recorded, self.bounces)}",
            f"  hard/soft right (recorded bounces):   {pct(self.hard_right, self.hard_rows)}",
            *(f"    {m}" for m in self.misses),
        ]
        return "\n".join(lines)
