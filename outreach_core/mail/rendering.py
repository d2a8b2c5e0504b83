"""The template language of campaign emails: variables, fallbacks, spintax, unsubscribe and signature.

Pure functions, no I/O. Rendering never raises: malformed syntax is rendered literally and reported by
`template_problems`. The reference for users is `docs/rendering.md`.

Order of work in `render_email`: the body is sanitised, the signature is placed, spintax is resolved on the
template, variables are substituted (HTML-escaped, context by context), the result is sanitised once more
(a lead value can never add markup or a `javascript:` link) and the plain-text part is derived from it.
"""

from __future__ import annotations

import functools
import hashlib
import html
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote

from outreach_core.mail.plaintext import html_to_text
from outreach_core.mail.sanitize import (
    VARIABLE_RE,
    clean_html,
    header_safe,
    looks_like_html,
    plain_text_to_html,
    sanitize_body,
)

__all__ = [
    "SENDER_VARIABLES",
    "SPECIAL_VARIABLES",
    "STANDARD_VARIABLES",
    "VARIABLE_RE",
    "RenderedEmail",
    "Sender",
    "Unsubscribe",
    "normalize_name",
    "render_email",
    "resolve_spintax",
    "spin_seed",
    "template_problems",
    "unknown_variables",
    "variables_in",
]

STANDARD_VARIABLES = (
    "email", "first_name", "last_name", "full_name", "company", "title", "website", "phone", "linkedin",
    "country", "timezone", "domain",
)  # fmt: skip
SENDER_VARIABLES = ("sender_name", "sender_first_name", "sender_email", "signature")
SPECIAL_VARIABLES = ("unsubscribe",)
REPLY_TEXT_LINE = 'Reply "stop" to unsubscribe.'
UNSUBSCRIBE_LINK_TEXT = "unsubscribe"

_NAME = r"[A-Za-z][A-Za-z0-9_-]*"
_NAME_RE = re.compile(_NAME)
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_ALNUM_RE = re.compile(r"[^0-9A-Za-z]+")
_SPIN_TOKEN_RE = re.compile(r"\{\{|[{}|]")
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
_TAG_RE = re.compile(r"<[^<>]*>")
_ATTRIBUTE_RE = re.compile(r'([^\s"\'<>/=]+)="([^"]*)"')
_BLOCK_END_RE = re.compile(r"</(?:p|div|ul|ol|blockquote|h[1-6])>\s*$")

# Private-use characters delimit placeholders during rendering; they are removed from input first so a
# template can never forge one. Values are "\ue000<n>\ue001", final insertions "\ue002<n>\ue003".
_VALUE_OPEN, _VALUE_CLOSE, _FINAL_OPEN, _FINAL_CLOSE = "\ue000", "\ue001", "\ue002", "\ue003"
_SENTINELS_RE = re.compile("[\ue000-\ue003]")
_VALUE_RE = re.compile(_VALUE_OPEN + r"(\d+)" + _VALUE_CLOSE)
_FINAL_RE = re.compile(_FINAL_OPEN + r"(\d+)" + _FINAL_CLOSE)
# Nested fallbacks ({{a|{{b}}}}) need one pass per level; deeper nesting is left literal.
_MAX_PASSES = 8
_MAX_VARIABLE_LENGTH = 300

_STANDARD_KEYS = {name.replace("_", ""): name for name in STANDARD_VARIABLES}
_SENDER_KEYS = {name.replace("_", ""): name for name in SENDER_VARIABLES}
_SPECIAL_KEYS = {name.replace("_", ""): name for name in SPECIAL_VARIABLES}

Context = Literal["text", "attribute", "href_start", "href_inner", "subject"]


@dataclass(frozen=True)
class Sender:
    """The mailbox an email goes out from; `signature` is HTML or plain text."""

    name: str | None
    email: str
    signature: str | None


@dataclass(frozen=True)
class Unsubscribe:
    """What `{{unsubscribe}}` becomes: a link to `url`, or a line asking to reply "stop"."""

    mode: Literal["link", "reply_text"]
    url: str | None


@dataclass(frozen=True)
class RenderedEmail:
    """One email as a lead gets it; `unknown` lists variables that had no value source (rendered empty)."""

    subject: str
    html: str
    text: str
    unknown: tuple[str, ...]


def normalize_name(name: str) -> str:
    """The snake_case, lower-case spelling of a variable or custom-field name (`firstName`: `first_name`)."""
    return _NON_ALNUM_RE.sub("_", _CAMEL_RE.sub("_", name.strip())).strip("_").lower()


@functools.lru_cache(maxsize=4096)
def _match_key(name: str) -> str:
    # Underscores are ignored when matching, so first_name, firstName, FIRSTNAME and FirstName are one name.
    return normalize_name(name).replace("_", "")


@functools.lru_cache(maxsize=4096)
def _canonical(name: str) -> str:
    key = _match_key(name)
    return _STANDARD_KEYS.get(key) or _SENDER_KEYS.get(key) or _SPECIAL_KEYS.get(key) or normalize_name(name)


def _dedupe(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _strip_sentinels(value: str) -> str:
    return _SENTINELS_RE.sub("", value)


def variables_in(template: str) -> list[str]:
    """Variable names used in `template` (snake_case, lower case), in order of first use, without repeats.

    Variables inside every spintax option count, and so do variables nested in a fallback.
    """
    return list(_variables_in(template))


@functools.lru_cache(maxsize=1024)
def _variables_in(template: str) -> tuple[str, ...]:
    """`variables_in`, once per template: rendering asks it of every email, and a campaign's emails share
    a few templates (one per variant and spintax choice)."""
    found: list[str] = []

    def record(match: re.Match[str]) -> str:
        found.append(_canonical(match.group(1)))
        return _VALUE_OPEN  # no braces, so an enclosing {{name|...}} matches on the next pass

    text = _strip_sentinels(template)
    for _ in range(_MAX_PASSES):
        replaced = VARIABLE_RE.sub(record, text)
        if replaced == text:
            break
        text = replaced
    return tuple(_dedupe(found))


def unknown_variables(template: str, custom_keys: Iterable[str]) -> list[str]:
    """Variables of `template` that are not standard, sender or special variables, nor in `custom_keys`."""
    known = {_match_key(key) for key in custom_keys}
    known.update(_STANDARD_KEYS, _SENDER_KEYS, _SPECIAL_KEYS)
    return [name for name in variables_in(template) if _match_key(name) not in known]


def spin_seed(lead_id: str, step_id: str, variant_id: str) -> str:
    """The spintax seed of one lead's copy of one variant: stable across sends, previews and restarts."""
    return hashlib.sha256(f"{lead_id}\x1f{step_id}\x1f{variant_id}".encode()).hexdigest()


def _choose(seed: str, position: int, count: int) -> int:
    digest = hashlib.sha256(f"{seed}\x1f{position}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % count


def resolve_spintax(template: str, seed: str) -> str:
    """`template` with every spintax group `{a|b|c}` replaced by one option chosen from `seed`.

    Groups nest (`{Hi|Hello {there|friend}}`); each group's choice depends only on the seed and the group's
    position, so the same seed always gives the same text. A group without a top-level `|` (`{not spintax}`)
    keeps its braces, unmatched braces stay literal and `{{...}}` is never spintax.
    """
    if "|" not in template or "{" not in template:
        return template
    # One pass with an explicit stack (no recursion, linear time): a frame is (open position, options),
    # each option a list of pieces; closing a group resolves it into its parent's current option.
    output: list[str] = []
    stack: list[tuple[int, list[list[str]]]] = []

    def emit(piece: str) -> None:
        (stack[-1][1][-1] if stack else output).append(piece)

    position = 0
    while position < len(template):
        match = _SPIN_TOKEN_RE.search(template, position)
        if match is None:
            emit(template[position:])
            break
        start = match.start()
        if start > position:
            emit(template[position:start])
        token = match.group()
        if token == "{{":
            end = _variable_attempt_end(template, start)
            if end is not None:
                emit(template[start:end])
                position = end
                continue
            # Not a variable: two single braces, as in "{{Hi|Hello} there|Hey}".
            token = "{"
        position = start + 1
        if token == "{":
            stack.append((start, [[]]))
        elif token == "|":
            if stack:
                stack[-1][1].append([])
            else:
                emit("|")
        elif not stack:
            emit("}")
        else:
            group_start, options = stack.pop()
            if len(options) == 1:
                emit("{" + "".join(options[0]) + "}")
            else:
                emit("".join(options[_choose(seed, group_start, len(options))]))
    while stack:
        _, options = stack.pop()
        emit("{" + "|".join("".join(option) for option in options))
    return "".join(output)


def _position(template: str, index: int) -> str:
    line = template.count("\n", 0, index) + 1
    column = index - (template.rfind("\n", 0, index) + 1) + 1
    return f"line {line}, column {column}"


def template_problems(template: str) -> list[str]:
    """Human-readable syntax problems of a subject or body template; an empty list when it is well-formed.

    Reported: an unclosed `{{`, an empty or invalid variable name, a fallback containing braces, and
    unbalanced spintax braces. Rendering still works with these (the text is sent literally).
    """
    problems: list[str] = []
    opened: list[int] = []
    index = 0
    while index < len(template):
        char = template[index]
        if template.startswith("{{", index):
            end = _variable_attempt_end(template, index)
            if end is not None:
                if VARIABLE_RE.fullmatch(template, index, end) is None:
                    name, bar, fallback = template[index + 2 : end - 2].partition("|")
                    problems.append(_variable_problem(template, index, name.strip(), bar, fallback))
                index = end
                continue
        if char == "{":
            opened.append(index)
        elif char == "}":
            if opened:
                opened.pop()
            else:
                problems.append(f"unmatched '}}' at {_position(template, index)}")
        index += 1
    while opened:
        start = opened.pop()
        if opened and opened[-1] == start - 1:
            problems.append(f"unclosed '{{{{' at {_position(template, opened.pop())}")
        else:
            problems.append(f"unclosed spintax '{{' at {_position(template, start)}")
    return problems


def _variable_problem(template: str, start: int, name: str, bar: str, fallback: str) -> str:
    """What is wrong with the `{{...}}` at `start` that is not a well-formed variable."""
    where = _position(template, start)
    if not name:
        return f"empty variable name at {where}"
    if _NAME_RE.fullmatch(name) is None:
        return f"invalid variable name '{name}' at {where}"
    if bar and ("{" in fallback or "}" in fallback):
        return f"the fallback of '{{{{{name}}}}}' contains a brace at {where}"
    return f"malformed variable '{{{{{name}' at {where}"


def _variable_attempt_end(template: str, start: int) -> int | None:
    """End of the `{{name...}}` at `start` (a variable, well-formed or not), None when it is spintax.

    `{{` starts a variable attempt when a `}}` closes it (single braces inside balanced, within a few
    hundred characters) and the part before the first `|` holds no brace; otherwise the two braces are
    spintax braces, as in `{{Hi|Hello} there|Hey}`.
    """
    variable = VARIABLE_RE.match(template, start)
    if variable is not None:
        return variable.end()
    depth = 0
    limit = min(len(template), start + _MAX_VARIABLE_LENGTH)
    index = start + 2
    while index < limit:
        char = template[index]
        if char == "{":
            depth += 1
        elif char == "}":
            if depth:
                depth -= 1
            elif template.startswith("}}", index):
                name = template[start + 2 : index].partition("|")[0]
                return index + 2 if "{" not in name and "}" not in name else None
            else:
                return None
        index += 1
    return None


def _lead_text(value: Any) -> str:
    if value is None or isinstance(value, (dict, list, tuple, set)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return _strip_sentinels(str(value)).strip()


class _Renderer:
    """State of one render: the lead's values, placeholders, unknown names."""

    def __init__(self, lead: Mapping[str, Any], sender: Sender | None, unsubscribe: Unsubscribe) -> None:
        self.sender = sender
        self.unsubscribe = unsubscribe
        self.unknown: list[str] = []
        self.values: list[str] = []
        self.finals: list[tuple[str, str]] = []  # (html, text) inserted after the last sanitising pass
        custom = lead.get("custom")
        self.custom: dict[str, str] = {}
        if isinstance(custom, Mapping):
            for key, value in custom.items():
                self.custom.setdefault(_match_key(str(key)), _lead_text(value))
        standard = {name: _lead_text(lead.get(name)) for name in STANDARD_VARIABLES}
        email = standard["email"]
        standard["domain"] = email.rpartition("@")[2].lower() if "@" in email else ""
        standard["full_name"] = " ".join(
            part for part in (standard["first_name"], standard["last_name"]) if part
        )
        self.standard = standard

    def unknown_in(self, template: str, context: Context) -> list[str]:
        """Unknown variables of `template` for this lead (every spintax option counts)."""
        return [name for name in variables_in(template) if self._source(name, context) is None]

    def _source(self, name: str, context: Context) -> str | None:
        """The value source kind of a canonical name, None when unknown."""
        key = _match_key(name)
        if key in _STANDARD_KEYS:
            return "standard"
        if key in _SENDER_KEYS:
            return "sender"
        if key in _SPECIAL_KEYS:
            return None if context == "subject" else "unsubscribe"
        if key in self.custom:
            return "custom"
        return None

    def _value(self, name: str) -> str:
        key = _match_key(name)
        if key in _STANDARD_KEYS:
            return self.standard[_STANDARD_KEYS[key]]
        if key in self.custom:
            return self.custom[key]
        sender = self.sender
        if sender is None or key == "signature":
            # The signature was placed before spintax; one left here came from spintax or the signature.
            return ""
        sender_name = _lead_text(sender.name)
        if key == "sendername":
            return sender_name
        if key == "senderfirstname":
            return sender_name.split()[0] if sender_name else ""
        return _lead_text(sender.email)

    def substitute(self, template: str, context: Context) -> str:
        """`template` with its variables replaced for `context`, nested fallbacks included."""
        if "{{" not in template and _VALUE_OPEN not in template:
            return template  # most pieces of a body (between its tags) hold no variable
        for _ in range(_MAX_PASSES):
            replaced = VARIABLE_RE.sub(lambda m: self._replace(m, context), template)
            if replaced == template:
                break
            template = replaced
        return self._expand(template)

    def _expand(self, text: str) -> str:
        return _VALUE_RE.sub(lambda m: self.values[int(m.group(1))], text)

    def _store(self, value: str) -> str:
        self.values.append(self._expand(value))
        return f"{_VALUE_OPEN}{len(self.values) - 1}{_VALUE_CLOSE}"

    def _replace(self, match: re.Match[str], context: Context) -> str:
        name = _canonical(match.group(1))
        raw_fallback = match.group(2)
        fallback = None if raw_fallback is None else raw_fallback.strip()
        if fallback is not None and context != "subject":
            fallback = html.unescape(fallback)
        at_start = context == "href_inner" and not match.string[: match.start()].strip()
        if at_start:
            context = "href_start"
        source = self._source(name, context)
        if source is None:
            self.unknown.append(name)
            return self._store(self._encode(fallback or "", context))
        if source == "unsubscribe":
            return self._unsubscribe(fallback, context)
        value = self._value(name)
        if not value:
            return self._store(self._encode(fallback or "", context))
        if context == "href_start" and _SCHEME_RE.match(value) is None and not value.startswith(("/", "#")):
            value = "https://" + value  # a bare domain (acme.com) in an href means the website
        return self._store(self._encode(value, context))

    def _encode(self, text: str, context: Context) -> str:
        """Escape the literal parts of `text` for `context`; placeholders inside it are already encoded."""
        encode: Callable[[str], str]
        if context == "subject":
            return text
        if context == "href_inner":

            def encode(part: str) -> str:
                return html.escape(quote(part, safe="@"))

        else:
            encode = html.escape
        pieces = _VALUE_RE.split(text)
        # re.split with one group alternates literal text and placeholder numbers.
        return "".join(
            encode(piece) if i % 2 == 0 else f"{_VALUE_OPEN}{piece}{_VALUE_CLOSE}"
            for i, piece in enumerate(pieces)
        )

    def _unsubscribe(self, fallback: str | None, context: Context) -> str:
        mode, url = self.unsubscribe.mode, _lead_text(self.unsubscribe.url)
        if context != "text":
            # Inside an attribute (href="{{unsubscribe}}") only a URL makes sense.
            return self._store(html.escape(url) if mode == "link" else "")
        label = html.unescape(self._expand(fallback)) if fallback else ""
        if mode == "link":
            label = label or UNSUBSCRIBE_LINK_TEXT
            if url:
                link = clean_html(f'<a href="{html.escape(url)}">{html.escape(label)}</a>')
                final = (link, f"{label}: {url}")
            else:
                final = (html.escape(label), label)
        else:
            label = label or REPLY_TEXT_LINE
            final = (html.escape(label, quote=False), label)
        self.finals.append(final)
        return f"{_FINAL_OPEN}{len(self.finals) - 1}{_FINAL_CLOSE}"

    def substitute_html(self, markup: str) -> str:
        """Substitute variables in sanitised HTML, escaping each value for where it stands."""
        pieces: list[str] = []
        position = 0
        for tag in _TAG_RE.finditer(markup):
            pieces.append(self.substitute(markup[position : tag.start()], "text"))
            markup_tag = tag.group()
            if "{{" in markup_tag or _VALUE_OPEN in markup_tag:
                markup_tag = _ATTRIBUTE_RE.sub(self._attribute, markup_tag)
            pieces.append(markup_tag)
            position = tag.end()
        pieces.append(self.substitute(markup[position:], "text"))
        return "".join(pieces)

    def _attribute(self, match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        context: Context = "href_inner" if name.lower() in {"href", "src"} else "attribute"
        return f'{name}="{self.substitute(value, context)}"'

    def finish(self, cleaned: str, text: bool) -> str:
        """Insert the final pieces (unsubscribe) into the cleaned HTML or the derived text."""
        return _FINAL_RE.sub(lambda m: self.finals[int(m.group(1))][1 if text else 0], cleaned)


def _signature_html(signature: str | None) -> str:
    if not signature or not signature.strip():
        return ""
    if looks_like_html(signature):
        return _strip_sentinels(sanitize_body(signature))
    # Plain text stays inline (<br>) so it can stand inside a paragraph of the body.
    return _strip_sentinels(clean_html(plain_text_to_html(signature, inline=True)))


def _place_signature(body_html: str, signature_html: str) -> str:
    """Put the signature where `{{signature}}` stands, or after the body when it stands nowhere."""
    if not signature_html:
        return body_html
    placed = False

    def replace(match: re.Match[str]) -> str:
        nonlocal placed
        if _canonical(match.group(1)) != "signature":
            return match.group()
        placed = True
        return signature_html

    result = VARIABLE_RE.sub(replace, body_html)
    if placed:
        return result
    if not body_html:
        return f"<div>{signature_html}</div>"
    # After a paragraph a single <br> already leaves one blank line; after inline text it takes two.
    separator = "<br>" if _BLOCK_END_RE.search(body_html) else "<br><br>"
    return f"{body_html}{separator}<div>{signature_html}</div>"


def render_subject(
    subject: str, *, lead: Mapping[str, Any], sender: Sender | None, unsubscribe: Unsubscribe, seed: str
) -> str:
    """The subject `render_email` gives with the same arguments, without rendering the body."""
    return _subject(_Renderer(lead, sender, unsubscribe), subject, seed)[0]


def _subject(renderer: _Renderer, subject: str, seed: str) -> tuple[str, list[str]]:
    """The rendered subject (one header-safe line) and its unknown variables."""
    template = resolve_spintax(_strip_sentinels(subject), seed + ":subject")
    unknown = renderer.unknown_in(template, "subject")
    rendered = header_safe(_strip_sentinels(renderer.substitute(template, "subject")))
    unknown += renderer.unknown
    renderer.unknown = []
    return rendered, unknown


@functools.lru_cache(maxsize=256)
def _body_template(body: str, signature: str | None) -> str:
    """The sanitised body with the signature in place (the same for every lead of a variant and mailbox)."""
    return _place_signature(_strip_sentinels(sanitize_body(body)), _signature_html(signature))


def render_email(
    *,
    subject: str,
    body: str,
    lead: Mapping[str, Any],
    sender: Sender | None,
    unsubscribe: Unsubscribe,
    seed: str,
) -> RenderedEmail:
    """Render one variant for one lead: subject (one header-safe line), sanitised HTML and a plain-text part.

    Spintax uses `seed + ":subject"` for the subject and `seed + ":body"` for the body. `sender=None`
    (no mailbox yet) renders sender variables as their fallback. Never raises.
    """
    renderer = _Renderer(lead, sender, unsubscribe)
    rendered_subject, subject_unknown = _subject(renderer, subject, seed)

    signature = sender.signature if sender else None
    body_template = resolve_spintax(_body_template(body, signature), seed + ":body")
    body_unknown = renderer.unknown_in(body_template, "text")
    cleaned = clean_html(renderer.substitute_html(body_template))
    text = _strip_sentinels(renderer.finish(html_to_text(cleaned), text=True))
    # Unsubscribe links go in after the text part is derived (it reads "unsubscribe: URL", not a link).
    rendered_html = _strip_sentinels(
        clean_html(renderer.finish(cleaned, text=False)) if renderer.finals else cleaned
    )
    body_unknown += renderer.unknown

    return RenderedEmail(
        subject=rendered_subject,
        html=rendered_html,
        text=text,
        unknown=tuple(_dedupe(subject_unknown + body_unknown)),
    )
