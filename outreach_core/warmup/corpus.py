"""The built-in warmup corpus (pure, no I/O): short, ordinary emails written with spintax, so that no two
warmup emails read the same. `{a|b|c}` picks one of its options (options may nest); there are no links,
no images and no tracking in any of them."""

from __future__ import annotations

import random
import re

_GROUP = re.compile(r"\{([^{}]*)\}")

SUBJECTS: tuple[str, ...] = (
    "{Quick|Small|Short} question about {next week|Thursday|the schedule}",
    "{Notes|Thoughts} from {our call|yesterday|the meeting}",
    "{Lunch|Coffee} {on Friday|next week|sometime soon}?",
    "{Following up|Checking in} on the {draft|plan|proposal}",
    "{Update|News} on the {project|timeline|budget}",
    "{Thanks|Thank you} for {the help|your notes|the quick reply}",
    "{Agenda|Plan} for {Monday|Tuesday|Wednesday}",
    "{Book|Podcast|Article} {recommendation|suggestion}",
    "{Question|Idea} about the {report|slides|numbers}",
    "{Weekend|Holiday} plans",
)

OPENINGS: tuple[str, ...] = (
    "{Hi|Hello|Hey} {there|again},",
    "{Good morning|Good afternoon}{,|!}",
    "{Hi|Hello},",
)

BODIES: tuple[str, ...] = (
    "{I hope|Hope} your week is {going well|off to a good start}. {I was wondering|I wanted to ask} "
    "whether {you had a chance|you found time} to look at the {draft|notes|plan} I {sent|shared} "
    "{earlier|last week}.",
    "{Thanks again|Many thanks} for {the call|your time} {yesterday|this morning}. {I wrote up|I put "
    "together} a {few|couple of} {notes|points} and {will share them|can send them over} "
    "{tomorrow|later today}.",
    "{Would|Could} you {be free|have time} for a {quick|short} {chat|call} {on Thursday|next week|this "
    "afternoon}? {Any time after ten works for me.|I am flexible on the time.}",
    "{I just finished|I finally read} the {book|article} you {mentioned|recommended}. {It was great|I really "
    "enjoyed it}, {especially|in particular} the {second half|last chapter|part about planning}.",
    "{The numbers|The figures} for {this month|the quarter} {look good|are in}. {I will|Let me} {go through "
    "them|walk you through them} {when we meet|on Monday}.",
    "{Do you|Would you} {still|} want to {grab lunch|get coffee} {this week|on Friday}? {There is a new "
    "place|I found a nice place} {near the office|around the corner}.",
    "{I moved|We moved} the {meeting|review} to {Wednesday|Thursday} {at two|in the morning}. {Let me know "
    "if that works.|Does that still work for you?}",
    "{Quick note|Just a heads up}: {the printer|the coffee machine} on the {second|third} floor is {fixed|"
    "working again}. {Small wins!|Good news for everyone.}",
)

CLOSINGS: tuple[str, ...] = (
    "{Thanks|Thank you|Cheers}{,|!}",
    "{Best|All the best|Kind regards},",
    "{Talk soon|Speak soon|See you soon},",
)

REPLIES: tuple[str, ...] = (
    "{Thanks|Thank you} for {the note|your message|letting me know}! {Sounds good|That works for me}.",
    "{Great|Perfect}, {I will|I'll} {take a look|have a look} {today|tomorrow|this week}.",
    "{Sure|Of course}, {Thursday|next week|that} {works|is fine} for me. {Talk then!|See you then.}",
    "{Good to hear|Nice}! {Thanks for the update.|I appreciate it.}",
    "{Yes|Absolutely}, {let's do it|count me in}. {I'll bring the notes.|Looking forward to it.}",
)


def spin(text: str, rng: random.Random) -> str:
    """`text` with every `{a|b|...}` replaced by one of its options, innermost first."""
    while True:
        replaced = _GROUP.sub(lambda m: rng.choice(m.group(1).split("|")), text)
        if replaced == text:
            return re.sub(r" {2,}", " ", replaced).replace(" ,", ",").replace(" .", ".").strip()
        text = replaced


def compose(rng: random.Random, sender_name: str | None) -> tuple[str, str]:
    """A new warmup email: (subject, plain text body)."""
    subject = spin(rng.choice(SUBJECTS), rng)
    lines = [
        spin(rng.choice(OPENINGS), rng),
        "",
        spin(rng.choice(BODIES), rng),
        "",
        spin(rng.choice(CLOSINGS), rng),
    ]
    if sender_name:
        lines.append(sender_name)
    return subject, "\n".join(lines) + "\n"


def compose_reply(rng: random.Random, sender_name: str | None) -> str:
    """The plain text of a warmup reply."""
    lines = [spin(rng.choice(REPLIES), rng), "", spin(rng.choice(CLOSINGS), rng)]
    if sender_name:
        lines.append(sender_name)
    return "\n".join(lines) + "\n"
