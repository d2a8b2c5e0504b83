"""The offer profile: what the workspace sells, to whom, and how it may be described (the spec's fields,
limits and defaults). The writing tools draft only from it and from lead fields."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import SINGLE_LINE, Timestamp, WireModel

Tone = Literal["plain", "friendly", "direct", "formal"]
LIMITS: dict[str, int] = {
    "company": 120,
    "product": 1000,
    "audience": 1000,
    "problem": 1000,
    "proof": 2000,
    "cta": 300,
    "avoid": 1000,
}
"""Most characters of each text field (the spec's Limits)."""

Company = Annotated[str, StringConstraints(max_length=120, strip_whitespace=True), SINGLE_LINE]
Cta = Annotated[str, StringConstraints(max_length=300, strip_whitespace=True), SINGLE_LINE]

Text1000 = Annotated[str, StringConstraints(max_length=1000, strip_whitespace=True)]
Text2000 = Annotated[str, StringConstraints(max_length=2000, strip_whitespace=True)]


class OfferProfile(WireModel):
    """The offer profile's fields; each text field is empty by default, `tone` plain."""

    company: Company = Field(default="", description="The company's name, at most 120 characters.")
    product: Text1000 = Field(
        default="", description="What it sells, in a few sentences; at most 1000 characters."
    )
    audience: Text1000 = Field(
        default="", description="Who it is for (roles, company types); at most 1000 characters."
    )
    problem: Text1000 = Field(
        default="", description="The problem it solves for them; at most 1000 characters."
    )
    proof: Text2000 = Field(
        default="",
        description="Facts the emails may cite (customers, numbers, results), one point per line; at most "
        "2000 characters. Emails make no claim that is not here.",
    )
    cta: Cta = Field(default="", description="The one call to action, e.g. a 15-minute call; at most 300.")
    tone: Tone = Field(
        default="plain", description="How the emails sound: plain, friendly, direct or formal."
    )
    avoid: Text1000 = Field(
        default="", description="Words, topics or claims never to use, one item per line; at most 1000."
    )


class StoredOfferProfile(OfferProfile):
    """GET/PUT /offer-profile: the profile with whether it was saved, when, and the website it came from."""

    saved: bool = Field(description="A profile has been saved (writing with AI needs one).")
    source_url: str | None = Field(description="The website it was drafted from, if it was.")
    updated_at: Timestamp | None = Field(description="When it was last saved.")
