"""What the mail layer's text work costs: the HTML-to-text converter and rendering one email.

    .venv/bin/python bench/mail_text.py [--emails 3000]

Prints CPU microseconds (process time, best of three runs) for
- `mail.plaintext.html_to_text` on every `text/html` part of the test corpus (`tests/data/**/*.eml`), as the
  inbox reads HTML-only mail (`links=False`) and as the text part of an email we send (links shown);
- `mail.rendering.render_email` of a typical first email (variables, spintax, a link, a list, signature and
  unsubscribe link) for `--emails` different leads.
"""

from __future__ import annotations

import argparse
import email
import email.policy
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from outreach_core.mail.plaintext import html_to_text  # noqa: E402
from outreach_core.mail.rendering import Sender, Unsubscribe, render_email  # noqa: E402

BODY = (
    "Hi {{first_name|there}},\n\n{I saw|I noticed} that {{company}} is hiring <b>engineers</b>. "
    'We help teams like yours <a href="https://cal.com/ann?c={{company}}">book a call</a>.\n\n'
    "- fast\n- cheap\n\nBest,\n{{sender_first_name}}\n\n{{unsubscribe}}"
)
SENDER = Sender(
    name="Ann Lee",
    email="ann@s.io",
    signature='Ann Lee<br>CEO, <b>Sender</b><br><a href="https://s.io">s.io</a>',
)
UNSUBSCRIBE = Unsubscribe(mode="link", url="https://links.example/u/abc")


def best_cpu(run: Callable[[], None], n: int) -> float:
    """CPU microseconds per item, the best of three runs of `run` (which handles `n` items)."""
    best = float("inf")
    for _ in range(3):
        c0 = time.process_time()
        run()
        best = min(best, (time.process_time() - c0) / n * 1e6)
    return best


def corpus_html() -> list[str]:
    parts = []
    for path in sorted((ROOT / "tests" / "data").rglob("*.eml")):
        msg = email.message_from_bytes(path.read_bytes(), policy=email.policy.default)
        for part in msg.walk():
            if part.get_content_type() == "text/html":
                try:
                    parts.append(str(part.get_content()))  # type: ignore[attr-defined]
                except (LookupError, ValueError):
                    continue
    return parts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--emails", type=int, default=3000)
    args = parser.parse_args()
    parts = corpus_html()
    size = sum(len(p) for p in parts)
    print(f"{len(parts)} HTML parts, {size / 1024:.0f} KiB")
    for links in (False, True):
        cpu = best_cpu(lambda links=links: [html_to_text(p, links=links) for p in parts], len(parts))
        print(
            f"html_to_text(links={links}): {cpu:.0f} CPU us per part, {cpu / (size / len(parts) / 1024):.0f} per KiB"
        )

    def render_all() -> None:
        for i in range(args.emails):
            lead = {"email": f"p{i}@x.io", "first_name": f"Bob{i}", "company": f"Acme {i}"}
            render_email(
                subject="Hi {{first_name}}",
                body=BODY,
                lead=lead,
                sender=SENDER,
                unsubscribe=UNSUBSCRIBE,
                seed=str(i),
            )

    print(f"render_email: {best_cpu(render_all, args.emails):.0f} CPU us per email")


if __name__ == "__main__":
    main()
