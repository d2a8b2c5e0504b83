"""The content checklist every AI draft runs (pure, no I/O): length, spam words, links, `{{unsubscribe}}` in
the first email, variables that exist, one call to action, and no claims the offer profile does not make.

The unsupported-claims check compares the email with the profile's own words (all its fields): a number
(`37%`, `$2M`, `300`), a name (a capitalised word inside a sentence: `Stripe`, `Gartner`) or a claim word
(`guaranteed`, `#1`, `leading` ...) that the profile never uses is flagged. Variables (`{{company}}`) are
left out: they are the lead's own fields. It is a heuristic: it may flag a harmless word, never silently
pass an invented number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from outreach_core.mail.content import LONG_EMAIL_WORDS, spam_words, word_count
from outreach_core.mail.rendering import template_problems, unknown_variables, variables_in

LONG_SUBJECT = 60
MAX_LINKS = 1
_VARIABLE = re.compile(r"\{\{[^{}]*\}\}")
_LINK = re.compile(r"https?://[^\s<>\"')]+|www\.[^\s<>\"')]+|<a\s", re.IGNORECASE)
_NUMBER = re.compile(r"(?<![\w.])[$€£]?\d[\d,.]*(?:\s?%|\s?[kKmMbB]\b|x\b)?")
_WORD = re.compile("[A-Za-z][A-Za-z'\u2019-]*")
_SENTENCE_END = re.compile(r"[.!?:;\n]\s*$")
CLAIM_WORDS = (
    "guarantee", "guaranteed", "proven", "#1", "number one", "leading", "best", "award-winning", "trusted by",
    "world-class", "fastest", "cheapest", "only", "certified", "official", "industry-leading", "top-rated",
)  # fmt: skip
_CLAIM = re.compile(
    r"(?<![\w#])(?:"
    + "|".join(re.escape(c) for c in sorted(CLAIM_WORDS, key=len, reverse=True))
    + r")(?!\w)",
    re.IGNORECASE,
)
# Capitalised words that are not names: greetings, sign-offs, days and months, pronouns, common sentence
# starters after a line break or a colon.
COMMON_CAPITALS = frozenset(
    [
        "i",
        "hi",
        "hello",
        "hey",
        "dear",
        "thanks",
        "thank",
        "best",
        "regards",
        "cheers",
        "sincerely",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
        "ps",
        "p.s.",
        "re",
        "fwd",
        "ok",
        "okay",
        "yes",
        "no",
        "quick",
        "question",
        "would",
        "could",
        "can",
        "will",
        "just",
        "if",
        "so",
        "we",
        "you",
        "our",
        "your",
        "the",
        "a",
        "an",
        "it",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "when",
        "what",
        "why",
        "how",
        "who",
        "worth",
        "happy",
        "glad",
        "looking",
        "let",
    ]
)


@dataclass(frozen=True)
class Draft:
    """One email as the AI wrote it: its position in the sequence (0 = the first email)."""

    step: int
    subject: str
    body: str  # plain text (or simple HTML) as written; variables like {{first_name|there}}


def structural_problems(draft: Draft, allowed_custom: Iterable[str]) -> list[str]:
    """What makes a draft unusable (asked again once, then not saved): template syntax the renderer would
    send literally, and variables that do not exist for these leads."""
    problems = [f"subject: {p}" for p in template_problems(draft.subject)]
    problems += [f"body: {p}" for p in template_problems(draft.body)]
    unknown = unknown_variables(draft.subject + "\n" + draft.body, allowed_custom)
    problems += [f"the variable {{{{{name}}}}} does not exist" for name in unknown]
    return problems


def content_problems(draft: Draft, profile_text: str, cta: str) -> list[str]:
    """The content checklist of one draft (what a person should look at; the draft is still saved)."""
    label = f"Email {draft.step + 1}"
    text = _VARIABLE.sub(" ", draft.body)
    problems: list[str] = []
    words = word_count(text)
    if words > LONG_EMAIL_WORDS:
        problems.append(f"{label}: {words} words; keep cold emails under {LONG_EMAIL_WORDS}")
    if len(draft.subject) > LONG_SUBJECT:
        problems.append(
            f"{label}: the subject is {len(draft.subject)} characters; keep it under {LONG_SUBJECT}"
        )
    spam = spam_words(_VARIABLE.sub(" ", draft.subject) + "\n" + text)
    if spam:
        problems.append(f"{label}: spam-trigger words: {', '.join(spam)}")
    links = len(_LINK.findall(draft.body))
    if links > MAX_LINKS:
        problems.append(f"{label}: {links} links; cold emails do best with one link at most")
    if draft.step == 0 and "unsubscribe" not in variables_in(draft.body):
        problems.append(f"{label}: no {{{{unsubscribe}}}}; the first email needs it")
    questions = text.count("?")
    if questions > 1:
        problems.append(f"{label}: {questions} questions; ask for one thing (one call to action)")
    elif questions == 0 and draft.step == 0 and not _mentions(text, cta):
        problems.append(f"{label}: no call to action; end with one question or the profile's cta")
    problems += [
        f"{label}: {claim}" for claim in unsupported_claims(draft.subject + "\n" + text, profile_text)
    ]
    return problems


def unsupported_claims(text: str, profile_text: str) -> list[str]:
    """Numbers, names and claim words in `text` that the offer profile (`profile_text`, all its fields)
    never uses, each once, in text order."""
    text = _VARIABLE.sub(" ", text)
    known = profile_text.lower()
    known_numbers = {_digits(m.group()) for m in _NUMBER.finditer(profile_text)}
    found: dict[str, None] = {}
    for match in _NUMBER.finditer(text):
        number = match.group().strip()
        if _digits(number) and _digits(number) not in known_numbers:
            found.setdefault(f"the number {number} is not in the offer profile", None)
    for match in _WORD.finditer(text):
        word = match.group().strip("'\u2019-")
        if len(word) < 2 or not word[0].isupper() or word.lower() in COMMON_CAPITALS:
            continue
        if _SENTENCE_END.search(text[: match.start()]) or not text[: match.start()].strip():
            continue  # the first word of a sentence or line
        if word.lower() not in known:
            found.setdefault(f"the name {word} is not in the offer profile", None)
    for match in _CLAIM.finditer(text):
        claim = match.group()
        if claim.lower() not in known:
            found.setdefault(f"the claim '{claim}' is not in the offer profile", None)
    return list(found)


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number)


def _mentions(text: str, cta: str) -> bool:
    """Whether the email carries the profile's call to action (most of its longer words appear)."""
    words = {w.lower() for w in _WORD.findall(cta) if len(w) > 3}
    if not words:
        return False
    present = {w for w in words if w in text.lower()}
    return len(present) * 2 >= len(words)
