"""Wire models of onboarding: a new workspace, the onboarding answers, the offer drafted from a website."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from outreach_core.kernel.wire import NAME, SINGLE_LINE, NamedPattern, WireModel
from outreach_core.offer.schemas import OfferProfile
from outreach_core.webhooks.schemas import public_host_pattern, public_website_pattern

SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,58}[a-z0-9])?$"
# The document states the plain forms every server accepts (a public domain name; a website on a public
# name); the descriptions say what else is (URLs and addresses naming a domain, IDN names, private hosts on
# servers that allow them).
PUBLIC_DOMAIN = NamedPattern("public-domain-name", lambda: f"^{public_host_pattern()}$")
PUBLIC_WEBSITE = NamedPattern("public-website", public_website_pattern)
Domain = Annotated[str, StringConstraints(max_length=300, strip_whitespace=True), SINGLE_LINE, PUBLIC_DOMAIN]


class CreateWorkspaceIn(WireModel):
    name: Annotated[str, StringConstraints(min_length=1, max_length=60), NAME] = Field(
        description="The new workspace's name, 1 to 60 characters."
    )
    slug: Annotated[str, StringConstraints(pattern=SLUG_PATTERN)] = Field(
        description="Its short unique name: lowercase letters, digits and hyphens, 1 to 60 characters."
    )
    audience: Literal["own", "clients"] = Field(
        description="Who the workspace writes for: own (your own company) or clients (an agency's clients)."
    )
    sending_domain: Domain | None = Field(
        default=None,
        description="The domain its emails will come from (a URL or an address is accepted), at most 300.",
    )


class CreatedWorkspace(WireModel):
    slug: str = Field(description="The new workspace's slug.")
    workspace_id: str = Field(description="The new workspace's id.")
    api_key: str = Field(
        description="A first API key of the new workspace, for you as its owner: shown once, never again. "
        "Every call with it acts in the new workspace."
    )


class SaveOnboardingIn(WireModel):
    sending_domain: Domain | None = Field(
        default=None, description="The domain emails will come from (a URL or an address is accepted)."
    )
    expected_volume: int = Field(ge=0, le=100_000_000, description="Emails expected a month, 0 to 100000000.")


class DraftOfferIn(WireModel):
    url: Annotated[
        str,
        StringConstraints(min_length=3, max_length=300, strip_whitespace=True),
        SINGLE_LINE,
        PUBLIC_WEBSITE,
    ] = Field(description="The company's website (https:// is assumed when left out), 3 to 300 characters.")


class OfferDraft(WireModel):
    profile: OfferProfile = Field(description="The drafted offer profile.")
    url: str = Field(description="The page it was drafted from (after redirects).")
    drafted: Literal["ai", "page"] = Field(
        description="ai: written by AI from the page's text; page: taken from the page's title, description "
        "and headings without AI (see message)."
    )
    saved: bool = Field(
        description="Saved as the workspace's offer profile (only when none was saved before; otherwise "
        "review it and save it with save_offer_profile)."
    )
    message: str | None = Field(
        description="What to check or fill in, and why AI was not used when it was not."
    )
    problems: list[str] = Field(
        description="AI answers that could not be used (then the page draft is given)."
    )
