"""What write_sequence asks the AI, and the validation of its answers (a JSON object with `emails`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from outreach_core.ai.answers import Unusable
from outreach_core.mail.rendering import SENDER_VARIABLES, STANDARD_VARIABLES
from outreach_core.offer.schemas import OfferProfile
from outreach_core.writing.checklist import Draft, structural_problems
from outreach_core.writing.schemas import WriteIn

MAX_SUBJECT = 200
MAX_BODY = 5_000

RULES = (
    "You write cold sales emails for the company described in the offer profile below. Rules:\n"
    "- Use only facts from the offer profile and the lead's fields (as variables). Never invent numbers, "
    "customers, names, results or claims; cite proof only as the profile states it.\n"
    "- Never use anything the profile's 'avoid' lists.\n"
    "- Plain text; blank lines between paragraphs; under 120 words; no links unless the profile gives one.\n"
    "- One call to action per email (the profile's cta for the first).\n"
    "- Personalise only with these variables, written exactly so, ideally with a fallback after a bar: "
    "{variables}. Example: Hi {{{{first_name|there}}}},\n"
    "- The first email ends with {{{{unsubscribe}}}} on its own line. Follow-ups may leave the subject "
    "empty (they are sent as replies in the same thread).\n"
    "- Tone: {tone}.\n"
    'Answer with one JSON object: {{"emails": [{{"subject": "...", "body": "...", "waitDays": 3}}]}} '
    "(waitDays: days after the previous email, 1 to 14; ignored for the first)."
)


def allowed_variables(custom_keys: Sequence[str]) -> list[str]:
    return [*STANDARD_VARIABLES, *SENDER_VARIABLES, "unsubscribe", *custom_keys]


def profile_block(profile: OfferProfile) -> str:
    return "\n".join(
        f"{name}: {getattr(profile, name) or '(empty)'}"
        for name in ("company", "product", "audience", "problem", "proof", "cta", "avoid")
    )


def prompt(
    body: WriteIn,
    profile: OfferProfile,
    custom_keys: Sequence[str],
    current: tuple[int, str, str] | None,
) -> list[dict[str, str]]:
    """The messages for `body`'s mode; `current` is (step, subject, text) of the variant to redraft."""
    system = RULES.format(
        variables=", ".join(f"{{{{{v}}}}}" for v in allowed_variables(custom_keys)), tone=profile.tone
    )
    persona = f"\nWrite for this reader: {body.persona}" if body.persona else ""
    if body.mode == "sequence":
        task = (
            f"Write a sequence of exactly {body.steps} emails: a first email and "
            f"{body.steps - 1} follow-ups, each adding something new.{persona}"
        )
    else:
        assert current is not None
        step, subject, text = current
        which = "the first email" if step == 0 else f"follow-up email {step + 1}"
        how = {
            "rewrite": "Rewrite it: same facts and call to action, better words.",
            "shorter": "Make it much shorter: at most half the words, the same call to action.",
            "angle": f"Rewrite it around this angle: {body.angle}.",
        }[body.mode]
        task = (
            f"This is {which} of the sequence.\nSubject: {subject or '(same thread, no subject)'}\n"
            f"Body:\n<<<\n{text}\n>>>\n{how}{persona}\nAnswer with exactly one email in `emails`."
        )
    user = f"Offer profile:\n{profile_block(profile)}\n\nTask: {task}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def read_emails(
    answer: dict[str, Any], *, count: int, first_step: int, custom_keys: Sequence[str]
) -> list[tuple[Draft, int]]:
    """The answer's emails as drafts with their waitDays; `Unusable` when the answer is not `count` emails
    of text within the limits, or uses template syntax or variables that do not exist."""
    emails = answer.get("emails")
    if not isinstance(emails, list) or len(emails) != count:
        raise Unusable(f'the answer must hold "emails", a list of exactly {count} email(s)')
    drafts: list[tuple[Draft, int]] = []
    for index, email in enumerate(emails):
        where = f"email {index + 1}"
        if not isinstance(email, dict):
            raise Unusable(f"{where} is not an object with subject and body")
        subject, text, wait = email.get("subject", ""), email.get("body"), email.get("waitDays", 3)
        if not isinstance(subject, str) or not isinstance(text, str) or not text.strip():
            raise Unusable(f"{where} needs a text body (and a text subject)")
        if len(subject) > MAX_SUBJECT or len(text) > MAX_BODY:
            raise Unusable(f"{where} is too long (subject at most {MAX_SUBJECT}, body {MAX_BODY} characters)")
        if "\n" in subject.strip():
            raise Unusable(f"{where}: the subject must be one line")
        step = first_step + index
        if step == 0 and not subject.strip():
            raise Unusable(f"{where} is the first email and needs a subject")
        if not isinstance(wait, int) or isinstance(wait, bool) or not 0 <= wait <= 365:
            wait = 3
        draft = Draft(step=step, subject=subject.strip(), body=text.strip())
        problems = structural_problems(draft, custom_keys)
        if problems:
            raise Unusable(f"{where}: {'; '.join(problems)}")
        drafts.append((draft, wait))
    return drafts
