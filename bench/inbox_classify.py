"""Throughput of the inbox's pure rules: parse + classify, one process, no I/O.

Input: the 430 messages of the bounce corpus (tests/data/bounces) and N generated replies as mail clients
write them (plain and HTML, quoted originals, out-of-office replies with return dates, unsubscribe requests,
in English, German, French and Spanish). Each set is run `--rounds` times; prints messages per second and
the per-message p50/p99 for each set and for the mix, plus the time for one message with a 25 MB
attachment (kept out of the mix: it measures the parser's worst case, not the usual mail).

The target for parse + classify + matching is 500 messages/s per worker process (issue 17); this pure part
should be far faster.

    .venv/bin/python bench/inbox_classify.py [--replies 3000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import statistics
import sys
import time
from email.message import EmailMessage
from email.policy import SMTP
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from outreach_core.inbox.rules import classify, parse_message  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "bounces"
ARRIVED = dt.datetime(2025, 3, 3, 9, 0, tzinfo=dt.UTC)

OURS = (
    "Hi {name},\n\nWe help teams like yours book more meetings with less busywork. Would a 15-minute call"
    ' next week make sense?\n\nBest,\nBob Smith\nAcme Inc.\n\nReply "stop" to unsubscribe.\n'
)
ANSWERS = [
    "Thanks Bob, sounds interesting. Can you send pricing?",
    "Not interested, thanks.",
    "Let's talk Thursday at 3pm CET.",
    "Please remove me from your list.",
    "STOP",
    "Danke, wir haben schon einen Anbieter.",
    "Bitte nehmen Sie mich aus Ihrem Verteiler.",
    "Merci, je ne suis pas la bonne personne. Contactez plutôt marie@lead.example.",
    "Je ne souhaite plus recevoir vos messages.",
    "Gracias, ahora no es buen momento.",
    "Por favor, denme de baja.",
]
HEADERS = [
    "On Mon, Mar 3, 2025 at 9:00 AM Bob Smith <bob@acme.example> wrote:",
    "Am Mo., 3. März 2025 um 09:00 Uhr schrieb Bob Smith <bob@acme.example>:",
    "Le 3 mars 2025 à 09:00, Bob Smith <bob@acme.example> a écrit :",
    "El lun, 3 mar 2025 a las 9:00, Bob Smith (<bob@acme.example>) escribió:",
]
OUT_OF_OFFICE = [
    ("Automatic reply: Quick question", "I am out of the office until Monday, March 10th, no email access."),
    ("Abwesenheitsnotiz", "Ich bin bis zum 14.03.2025 nicht im Büro. Ab dem 17. März wieder erreichbar."),
    ("Réponse automatique", "Je suis en congés du 3 au 14 mars. Je serai de retour le lundi 17 mars."),
    ("Respuesta automática", "Estaré fuera de la oficina hasta el 5 de abril."),
]


def generated_reply(i: int, rng: random.Random) -> bytes:
    """One reply to our email, as Gmail/Outlook/Apple Mail send it."""
    msg = EmailMessage(policy=SMTP)
    msg["From"] = f"Lead {i} <lead{i}@company{i % 97}.example>"
    msg["To"] = "Bob Smith <bob@acme.example>"
    msg["Date"] = "Mon, 03 Mar 2025 10:15:00 +0100"
    msg["Message-ID"] = f"<reply-{i}@company{i % 97}.example>"
    msg["In-Reply-To"] = f"<send-{i}@mail.acme.example>"
    msg["References"] = f"<send-{i}@mail.acme.example>"
    ours = OURS.format(name=f"Lead {i}")
    if i % 10 == 0:
        subject, text = OUT_OF_OFFICE[i // 10 % len(OUT_OF_OFFICE)]
        msg["Subject"] = subject
        msg["Auto-Submitted"] = "auto-replied"
        msg.set_content(text)
        return msg.as_bytes(policy=SMTP)
    msg["Subject"] = "Re: Quick question"
    answer = rng.choice(ANSWERS)
    header = rng.choice(HEADERS)
    quoted = "\n".join(f"> {line}" for line in ours.split("\n"))
    text = f"{answer}\n\n{header}\n{quoted}\n"
    msg.set_content(text)
    if i % 2:
        html_quote = ours.replace("\n", "<br>")
        msg.add_alternative(
            f"<div dir='ltr'>{answer}</div><div class='gmail_quote'><div>{header}</div>"
            f"<blockquote class='gmail_quote'>{html_quote}</blockquote></div>",
            subtype="html",
        )
    return msg.as_bytes(policy=SMTP)


def huge_message() -> bytes:
    msg = EmailMessage(policy=SMTP)
    msg["From"] = "lead@company.example"
    msg["Subject"] = "Re: deck"
    msg.set_content("See the attached deck.")
    msg.add_attachment(random.Random(1).randbytes(25 * 1024 * 1024), maintype="application", subtype="pdf")
    return msg.as_bytes(policy=SMTP)


def run(messages: list[bytes], rounds: int) -> tuple[float, list[float]]:
    times: list[float] = []
    for _ in range(rounds):
        for raw in messages:
            start = time.perf_counter()
            classify(parse_message(raw), ARRIVED)
            times.append(time.perf_counter() - start)
    return len(times) / sum(times), times


def report(name: str, count: int, rate: float, times: list[float]) -> None:
    ordered = sorted(times)
    p50 = ordered[len(ordered) // 2] * 1000
    p99 = ordered[int(len(ordered) * 0.99)] * 1000
    print(f"{name:<34} {count:>6} msgs  {rate:>8.0f} msgs/s  p50 {p50:6.2f} ms  p99 {p99:6.2f} ms")


def main() -> None:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--replies", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    corpus = [p.read_bytes() for p in sorted(CORPUS.glob("*/*.eml"))]
    rng = random.Random(17)
    replies = [generated_reply(i, rng) for i in range(args.replies)]
    print(f"python {sys.version.split()[0]}, {args.rounds} rounds each, single process\n")
    corpus_rate, corpus_times = run(corpus, args.rounds)
    report("bounce corpus (bounces, ARF, OOO)", len(corpus), corpus_rate, corpus_times)
    replies_rate, replies_times = run(replies, args.rounds)
    report("generated replies", len(replies), replies_rate, replies_times)
    mixed = corpus_times + replies_times
    report("all", len(corpus) + len(replies), len(mixed) / sum(mixed), mixed)
    huge = huge_message()
    start = time.perf_counter()
    classify(parse_message(huge), ARRIVED)
    print(f"\none message with a 25 MB attachment ({len(huge) / 2**20:.0f} MB raw): "
          f"{(time.perf_counter() - start) * 1000:.0f} ms")  # fmt: skip
    print(f"median per message, all: {statistics.median(mixed) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
