"""Pure content checks of an email for the launch checklist: spam-trigger words and length."""

from __future__ import annotations

import re

# Cold emails past about 200 words get noticeably fewer replies: readers skim on phones, and long
# first emails look like bulk marketing to spam filters.
LONG_EMAIL_WORDS = 200

SPAM_WORDS: tuple[str, ...] = (
    "free",
    "guarantee",
    "guaranteed",
    "act now",
    "100%",
    "risk-free",
    "click here",
    "winner",
    "cash",
    "$$$",
    "limited time",
    "urgent",
    "buy now",
    "order now",
    "no obligation",
    "no cost",
    "earn money",
    "make money",
    "extra income",
    "double your",
    "million dollars",
    "congratulations",
    "you have been selected",
    "once in a lifetime",
    "special promotion",
    "exclusive deal",
    "best price",
    "lowest price",
    "cheap",
    "discount",
    "bonus",
    "prize",
    "credit card",
    "no credit check",
    "miracle",
    "amazing",
    "incredible deal",
    "this isn't spam",
    "unsubscribe now",
    "while supplies last",
    "dear friend",
    "apply now",
)

_CANONICAL = {re.sub(r"\s+", " ", phrase.lower()): phrase for phrase in SPAM_WORDS}
# Longest first, so "risk-free" wins over "free" where both start or overlap at the same place.
_SPAM_RE = re.compile(
    r"(?<!\w)(?:"
    + "|".join(
        r"\s+".join(re.escape(word) for word in phrase.split())
        for phrase in sorted(SPAM_WORDS, key=len, reverse=True)
    )
    + r")(?!\w)",
    re.IGNORECASE,
)


def spam_words(text: str) -> list[str]:
    """Spam-trigger words and phrases found in `text` (whole words, any case), distinct, in text order."""
    found: dict[str, None] = {}
    for match in _SPAM_RE.finditer(text):
        phrase = _CANONICAL.get(re.sub(r"\s+", " ", match.group().lower()))
        if phrase is not None:
            found.setdefault(phrase, None)
    return list(found)


def word_count(text: str) -> int:
    """Number of words in `text`: whitespace-separated tokens with at least one letter or digit."""
    return sum(1 for token in text.split() if any(char.isalnum() for char in token))
