"""The template language, checked through what a lead would see: subject, HTML and plain text."""

from __future__ import annotations

from typing import Any

import pytest

from outreach_core.mail.content import LONG_EMAIL_WORDS, spam_words, word_count
from outreach_core.mail.plaintext import html_to_text
from outreach_core.mail.rendering import (
    RenderedEmail,
    Sender,
    Unsubscribe,
    render_email,
    resolve_spintax,
    spin_seed,
    template_problems,
    unknown_variables,
    variables_in,
)

LEAD: dict[str, Any] = {
    "email": "bob@acme.com",
    "first_name": "Bob",
    "last_name": "Stone",
    "company": "Acme",
    "title": "CTO",
    "website": "acme.com",
    "phone": None,
    "custom": {"Pain Point": "slow builds", "empty": "", "seats": 12},
}
SENDER = Sender(name="Ann Lee", email="ann@sender.io", signature=None)
LINK = Unsubscribe(mode="link", url="https://links.example/u/abc")
REPLY = Unsubscribe(mode="reply_text", url=None)


def render(
    body: str,
    subject: str = "Hello",
    lead: dict[str, Any] | None = None,
    sender: Sender | None = SENDER,
    unsubscribe: Unsubscribe = LINK,
    seed: str = "seed",
) -> RenderedEmail:
    return render_email(
        subject=subject,
        body=body,
        lead=LEAD if lead is None else lead,
        sender=sender,
        unsubscribe=unsubscribe,
        seed=seed,
    )


# Variables


def test_variables_with_and_without_fallbacks() -> None:
    email = render("Hi {{first_name}} from {{ company }}, {{phone|no phone}} {{title|boss}}.")
    assert email.html == "<p>Hi Bob from Acme, no phone CTO.</p>"
    assert email.text == "Hi Bob from Acme, no phone CTO."
    assert email.unknown == ()


def test_names_are_case_insensitive_and_camel_case_is_accepted() -> None:
    email = render("{{firstName}} {{FIRST_NAME}} {{FirstName}} {{lastName}} {{fullName}} {{Domain}}")
    assert email.text == "Bob Bob Bob Stone Bob Stone acme.com"


def test_custom_fields_match_in_any_spelling() -> None:
    email = render("{{pain_point}} / {{painPoint}} / {{seats}} / {{empty|none}} / {{empty}}.")
    assert email.text == "slow builds / slow builds / 12 / none / ."
    assert email.unknown == ()


def test_unknown_variables_are_reported_and_never_sent_raw() -> None:
    email = render("Hi {{frist_name}}, {{budget|your budget}} {{frist_name}}", subject="{{topic}} for you")
    assert email.unknown == ("topic", "frist_name", "budget")
    assert email.subject == "for you"
    assert email.text == "Hi , your budget"
    assert "{{" not in email.html


def test_missing_lead_fields_render_their_fallback() -> None:
    email = render("Hi {{first_name|there}} at {{company}}!", lead={"email": "x@y.com"})
    assert email.text == "Hi there at !"
    assert email.unknown == ()


def test_values_are_html_escaped() -> None:
    lead = {**LEAD, "company": "A&B <x>", "first_name": '<script>alert("x")</script>'}
    email = render("<p>{{company}} {{first_name}}</p>", lead=lead)
    assert email.html == '<p>A&amp;B &lt;x&gt; &lt;script&gt;alert("x")&lt;/script&gt;</p>'
    assert email.text == 'A&B <x> <script>alert("x")</script>'


def test_values_in_links_are_escaped_and_checked() -> None:
    body = '<a href="https://e.com/{{company}}?e={{email}}">a</a> <a href="{{website}}">b</a>'
    lead = {**LEAD, "company": 'A B"&'}
    email = render(body, lead=lead)
    assert (
        email.html
        == '<a href="https://e.com/A%20B%22%26?e=bob@acme.com">a</a> <a href="https://acme.com">b</a>'
    )
    hostile = render('<a href="{{website}}">b</a>', lead={**LEAD, "website": "javascript:alert(1)"})
    assert hostile.html == "<a>b</a>"


def test_sender_variables() -> None:
    email = render("{{sender_name}} / {{senderFirstName}} / {{sender_email}}")
    assert email.text == "Ann Lee / Ann / ann@sender.io"


def test_without_a_sender_sender_variables_use_fallbacks_and_are_not_unknown() -> None:
    email = render("{{sender_first_name|The team}} {{sender_email}}.", sender=None)
    assert email.text == "The team ."
    assert email.unknown == ()


def test_nested_fallback() -> None:
    assert render("{{nickname|{{first_name}}}}").text == "Bob"


# Spintax


def test_nested_spintax_is_deterministic_per_seed() -> None:
    template = "{Hi|Hello {there|friend}|Hey}"
    outputs = {seed: resolve_spintax(template, seed) for seed in map(str, range(60))}
    assert set(outputs.values()) == {"Hi", "Hello there", "Hello friend", "Hey"}
    assert all(resolve_spintax(template, seed) == text for seed, text in outputs.items())


def test_spintax_options_appear_across_seeds_in_rendered_emails() -> None:
    seen = {render("{Hi|Hello} {{first_name}}", seed=f"s{i}").text for i in range(50)}
    assert seen == {"Hi Bob", "Hello Bob"}


def test_same_seed_gives_the_same_email() -> None:
    body = "{Hi|Hello|Hey} {{first_name}}, {quick|short} {question|note}"
    assert len({render(body, subject="{A|B|C}", seed="lead-1") for _ in range(5)}) == 1


def test_groups_are_chosen_independently() -> None:
    template = "{a|b}{a|b}{a|b}{a|b}"
    assert {resolve_spintax(template, str(seed)) for seed in range(100)} >= {"aaaa", "abab", "bbba", "abba"}


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{not spintax}", "{not spintax}"),
        ("{{first_name}}", "{{first_name}}"),
        ("{{company|a b}}", "{{company|a b}}"),
        ("a | b", "a | b"),
        ("{a|b", "{a|b"),
        ("a}|b}", "a}|b}"),
        ("{x|x}", "x"),
        ("{ {x|x} }", "{ x }"),
        ("{{x|x} there|{x|x} there}", "x there"),
    ],
)
def test_literal_braces_and_bars(template: str, expected: str) -> None:
    assert resolve_spintax(template, "any") == expected


def test_empty_spintax_options_are_allowed() -> None:
    assert {resolve_spintax("{Hi |}there", str(seed)) for seed in range(40)} == {"Hi there", "there"}


def test_spintax_in_a_lead_value_is_not_spun() -> None:
    lead = {**LEAD, "company": "{Acme|Other}", "custom": {"x": "{a|b}"}}
    email = render("{{company}} {{x}}", subject="{{company}}", lead=lead)
    assert email.text == "{Acme|Other} {a|b}"
    assert email.subject == "{Acme|Other}"


def test_spin_seed_is_stable_and_distinct() -> None:
    assert spin_seed("l1", "s1", "v1") == spin_seed("l1", "s1", "v1")
    assert len({spin_seed("l1", "s1", "v1"), spin_seed("l2", "s1", "v1"), spin_seed("l1", "s1", "v2")}) == 3


# Unsubscribe


def test_unsubscribe_link_in_html_and_text() -> None:
    email = render("Bye\n\n{{unsubscribe}}")
    assert email.html == '<p>Bye</p><p><a href="https://links.example/u/abc">unsubscribe</a></p>'
    assert email.text == "Bye\n\nunsubscribe: https://links.example/u/abc"


def test_unsubscribe_link_with_fallback_text() -> None:
    email = render("{{unsubscribe|opt out here}}")
    assert email.html == '<p><a href="https://links.example/u/abc">opt out here</a></p>'
    assert email.text == "opt out here: https://links.example/u/abc"


def test_unsubscribe_url_in_an_href() -> None:
    email = render('<p><a href="{{unsubscribe}}">Leave</a></p>')
    assert email.html == '<p><a href="https://links.example/u/abc">Leave</a></p>'
    assert email.text == "Leave (https://links.example/u/abc)"


def test_unsubscribe_reply_text_mode() -> None:
    email = render("Bye\n\n{{unsubscribe}}", unsubscribe=REPLY)
    assert email.html == '<p>Bye</p><p>Reply "stop" to unsubscribe.</p>'
    assert email.text == 'Bye\n\nReply "stop" to unsubscribe.'
    custom = render("{{unsubscribe|Not interested? Just say so.}}", unsubscribe=REPLY)
    assert custom.text == "Not interested? Just say so."
    assert "href" not in custom.html


def test_unsubscribe_in_a_subject_is_empty_and_reported() -> None:
    email = render("x", subject="Hi {{unsubscribe}}")
    assert email.subject == "Hi"
    assert email.unknown == ("unsubscribe",)


# Signature


def test_signature_is_appended_when_the_body_has_no_placeholder() -> None:
    sender = Sender(name="Ann", email="ann@sender.io", signature="Ann Lee\nCEO, Sender")
    email = render("Thanks", sender=sender)
    assert email.html == "<p>Thanks</p><br><div>Ann Lee<br>CEO, Sender</div>"
    assert email.text == "Thanks\n\nAnn Lee\nCEO, Sender"


def test_signature_replaces_its_placeholder() -> None:
    sender = Sender(name="Ann", email="ann@sender.io", signature="<b>Ann</b> <script>x()</script>")
    email = render("Thanks,<br>{{signature}}<p>P.S. {{unsubscribe}}</p>", sender=sender)
    assert email.html == (
        'Thanks,<br><b>Ann</b> <p>P.S. <a href="https://links.example/u/abc">unsubscribe</a></p>'
    )
    assert email.text == "Thanks,\nAnn\n\nP.S. unsubscribe: https://links.example/u/abc"


def test_signature_placeholder_without_a_signature_uses_its_fallback() -> None:
    assert render("Hi\n\n{{signature|The team}}").text == "Hi\n\nThe team"
    assert render("Hi\n\n{{signature}}", sender=None).text == "Hi"


# Subject


def test_subject_is_one_header_safe_line() -> None:
    lead = {**LEAD, "first_name": "Bob\r\nBcc: victim@example.com", "company": "A&B"}
    email = render("x", subject="  {Hi|Hi} {{first_name}}\r\n at {{company}}\t ", lead=lead)
    assert email.subject == "Hi Bob Bcc: victim@example.com at A&B"
    assert "\n" not in email.subject and "\r" not in email.subject


# Plain-text part


@pytest.mark.parametrize(
    ("markup", "expected"),
    [
        ("<p>One</p><p>Two<br>Three</p>", "One\n\nTwo\nThree"),
        ("<h1>Title</h1><div>Body</div>", "Title\n\nBody"),
        ("<p>Pick:</p><ul><li>one</li><li>two</li></ul><p>end</p>", "Pick:\n\n- one\n- two\n\nend"),
        ('<a href="https://e.com">site</a>', "site (https://e.com)"),
        ('<a href="https://e.com">https://e.com</a>', "https://e.com"),
        ('<a href="mailto:a@e.com">a@e.com</a>', "a@e.com"),
        ("<p>A &amp; B&nbsp;&lt;C&gt; &quot;q&quot;</p>", 'A & B <C> "q"'),
        ("<p>a   \n  b  </p>\n\n\n<p></p><p></p><p>c</p>", "a b\n\nc"),
        ("x<br><br><br><br>y", "x\n\ny"),
    ],
)
def test_html_to_text(markup: str, expected: str) -> None:
    assert html_to_text(markup) == expected


# Template inspection


def test_variables_in_and_unknown_variables() -> None:
    template = (
        "{{FirstName}} {{pain_point}} {Hi {{Budget}}|Hey} {{first_name}} {{unsubscribe}} {{sender_name}}"
    )
    assert variables_in(template) == ["first_name", "pain_point", "budget", "unsubscribe", "sender_name"]
    assert unknown_variables(template, ["Pain Point"]) == ["budget"]
    assert unknown_variables(template, ["painPoint", "BUDGET"]) == []


@pytest.mark.parametrize(
    ("template", "problems"),
    [
        ("Hi {{first_name}}, {Hi|Hello {there|friend}} {not spintax}", []),
        ("Hi {{first_name", ["unclosed '{{' at line 1, column 4"]),
        ("Hi\n  {{}} there", ["empty variable name at line 2, column 3"]),
        ("{{Hi|Hello} there|Hey}", []),
        ("{{first name}}", ["invalid variable name 'first name' at line 1, column 1"]),
        ("{{x|{a|b}}}", ["the fallback of '{{x}}' contains a brace at line 1, column 1"]),
        ("{Hi|Hello", ["unclosed spintax '{' at line 1, column 1"]),
        ("Hi|Hello}", ["unmatched '}' at line 1, column 9"]),
    ],
)
def test_template_problems(template: str, problems: list[str]) -> None:
    assert template_problems(template) == problems


@pytest.mark.parametrize(
    "template", ["{{", "{{{{", "}}{{|", "{" * 5000 + "|" + "}" * 10, "{{a|{{b|{{c}}}}}}" * 3]
)
def test_malformed_templates_render_without_raising(template: str) -> None:
    email = render(template, subject=template)
    assert isinstance(email.text, str)


# Content checks


def test_spam_words_whole_words_in_text_order() -> None:
    text = "FREE trial, risk-free and 100% guaranteed. Click  here! Freedom is not free. $$$ cashback"
    assert spam_words(text) == ["free", "risk-free", "100%", "guaranteed", "click here", "$$$"]
    assert spam_words("Nothing to see") == []


def test_word_count() -> None:
    assert word_count("Hi Bob, quick question — is it you?  ") == 7
    assert word_count("") == 0
    assert LONG_EMAIL_WORDS == 200
