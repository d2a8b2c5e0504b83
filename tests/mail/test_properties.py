"""Property-based checks (hypothesis) of rendering, spintax and sanitising on arbitrary input."""

from __future__ import annotations

from html.parser import HTMLParser

from hypothesis import given, settings
from hypothesis import strategies as st

from outreach_core.mail.rendering import (
    SENDER_VARIABLES,
    SPECIAL_VARIABLES,
    STANDARD_VARIABLES,
    VARIABLE_RE,
    Sender,
    Unsubscribe,
    normalize_name,
    render_email,
    resolve_spintax,
)
from outreach_core.mail.sanitize import sanitize_body

KNOWN = set(STANDARD_VARIABLES + SENDER_VARIABLES + SPECIAL_VARIABLES)

# Characters that matter to the template language and to HTML, plus ordinary text.
SYNTAX = st.sampled_from(["{", "}", "{{", "}}", "|", "<", ">", "&", '"', "\n", "\n\n", " ", "_", "-"])
NAMES = st.sampled_from(["first_name", "firstName", "company", "nope", "unsubscribe", "signature", "x"])
WORDS = st.text(alphabet="abcXYZ019 ", min_size=1, max_size=6)


@st.composite
def variables(draw: st.DrawFn) -> str:
    name, fallback = draw(NAMES), draw(st.none() | st.text(alphabet="ab &<|\n", max_size=5))
    return "{{" + name + ("" if fallback is None else "|" + fallback) + "}}"


templates = st.lists(SYNTAX | WORDS | variables() | st.text(max_size=5), max_size=25).map("".join)
# Lead values without braces: a value may legitimately contain "{{...}}", which is then sent as written.
values = st.text(alphabet=st.characters(blacklist_characters="{}"), max_size=12)
leads = st.fixed_dictionaries(
    {"email": st.just("bob@acme.com"), "first_name": values, "company": values},
    optional={"custom": st.dictionaries(st.sampled_from(["x", "nope_not"]), values, max_size=2)},
)
senders = st.none() | st.builds(
    Sender, name=st.none() | values, email=st.just("a@b.io"), signature=st.none() | templates
)
unsubscribes = st.builds(
    Unsubscribe,
    mode=st.sampled_from(["link", "reply_text"]),
    url=st.none() | st.just("https://l.example/u/1"),
)


def spintax_groups(depth: int) -> st.SearchStrategy[str]:
    option = WORDS | st.just("")
    if depth > 0:
        option = option | spintax_groups(depth - 1)
    return st.lists(option, min_size=2, max_size=4).map(lambda options: "{" + "|".join(options) + "}")


@settings(max_examples=300)
@given(templates, templates, leads, senders, unsubscribes, st.text(max_size=8))
def test_rendering_never_raises_and_replaces_every_variable(
    subject: str,
    body: str,
    lead: dict[str, object],
    sender: Sender | None,
    unsubscribe: Unsubscribe,
    seed: str,
) -> None:
    email = render_email(
        subject=subject, body=body, lead=lead, sender=sender, unsubscribe=unsubscribe, seed=seed
    )
    assert "\n" not in email.subject and "\r" not in email.subject
    for template in (subject, body):
        for match in VARIABLE_RE.finditer(template):
            # the whole variable as written (a literal "{{" before a rendered value is fine)
            written = match.group(0)
            assert written not in email.subject
            assert written not in email.text
            assert written not in email.html
    assert "<script" not in email.html.lower()
    custom = {normalize_name(key) for key in lead.get("custom", {})}  # type: ignore[attr-defined]
    for name in email.unknown:
        assert name == "unsubscribe" or (name not in KNOWN and name not in custom)
    again = render_email(
        subject=subject, body=body, lead=lead, sender=sender, unsubscribe=unsubscribe, seed=seed
    )
    assert again == email


@given(st.lists(spintax_groups(2) | WORDS, min_size=1, max_size=6), st.text(max_size=8))
def test_spintax_leaves_no_bar_or_brace_of_a_well_formed_group(parts: list[str], seed: str) -> None:
    result = resolve_spintax("".join(parts), seed)
    assert "|" not in result
    assert "{" not in result and "}" not in result
    assert resolve_spintax("".join(parts), seed) == result


@given(templates, st.text(max_size=8))
def test_spintax_is_deterministic_and_keeps_variables(template: str, seed: str) -> None:
    result = resolve_spintax(template, seed)
    assert resolve_spintax(template, seed) == result
    # A variable is never cut open by spintax: every one in the output was written in the template.
    written = {m.group() for m in VARIABLE_RE.finditer(template)}
    assert all(m.group() in written or "{" in template for m in VARIABLE_RE.finditer(result))


@settings(max_examples=300)
@given(
    st.one_of(
        templates,
        st.text(),
        st.lists(
            st.sampled_from(
                [
                    "<p>",
                    "</p>",
                    "<b>",
                    "</i>",
                    "<a href='",
                    "javascript:x()",
                    "'>",
                    "<img src=x ",
                    "onerror=y>",
                    "<script>",
                    "</script>",
                    "<li>",
                    "<ul>",
                    "<div ",
                    "onclick='z'>",
                    "text",
                    "{{x}}",
                    "&amp;",
                    "\n\n",
                    "<br>",
                ]
            ),
            max_size=20,
        ).map("".join),
    )
)
def test_sanitising_is_idempotent_and_safe(body: str) -> None:
    once = sanitize_body(body)
    assert sanitize_body(once) == once
    assert "<script" not in once.lower()
    attributes = _attributes(once)
    assert not any(name.startswith("on") for name, _ in attributes)
    assert not any(value.strip().lower().startswith("javascript") for _, value in attributes)


def _attributes(markup: str) -> list[tuple[str, str]]:
    """Every attribute (name, value) of every tag, as a browser would parse them."""
    found: list[tuple[str, str]] = []

    class Collector(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            found.extend((name, value or "") for name, value in attrs)

    Collector().feed(markup)
    return found
