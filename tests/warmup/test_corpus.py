"""The built-in warmup corpus: every email varies, reads as plain text, and has no link or leftover
spintax; the marker is found in a message's own header only, and quoted in a bounce report."""

from __future__ import annotations

import random
import re

from outreach_core.warmup import corpus
from outreach_core.warmup.rules import header_token, new_token, quoted_tokens, score


def test_emails_vary_and_carry_no_link_or_spintax() -> None:
    rng = random.Random(7)
    made = [corpus.compose(rng, "Ann Lee") for _ in range(500)]
    replies = [corpus.compose_reply(rng, None) for _ in range(200)]
    assert len({s for s, _ in made}) > 50 and len({b for _, b in made}) > 300 and len(set(replies)) > 30
    for text in [s for s, _ in made] + [b for _, b in made] + replies:
        assert not re.search(r"[{}|<>]|https?:|www\.|\.com\b", text), text
        assert "  " not in text and " ," not in text
    assert all(body.rstrip().endswith("Ann Lee") for _, body in made)


def test_the_marker_is_read_from_the_header_and_from_a_quoting_report() -> None:
    token = new_token()
    email = f"From: a@x.test\r\nX-Outreach-Warmup: {token}\r\nSubject: Hi\r\n\r\nBody\r\n".encode()
    assert header_token(email) == token
    in_body = f"From: a@x.test\r\nSubject: Fwd\r\n\r\nX-Outreach-Warmup: {token}\r\n".encode()
    assert header_token(in_body) is None and quoted_tokens(in_body) == [token]
    assert header_token(b"From: a@x.test\r\nX-Outreach-Warmup: wu1-short\r\n\r\n") is None


def test_score_needs_ten_emails() -> None:
    assert score(9, 0, 0) is None
    assert score(7, 2, 1) == 70.0
    assert score(0, 0, 10) == 0.0
