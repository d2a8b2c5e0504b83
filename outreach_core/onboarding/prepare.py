"""`draft_offer`'s pre-transaction step: fetch the website, read it, and draft the profile (with AI when
the workspace may use it), all with no transaction open."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Literal

from outreach_core.ai.answers import ask_json
from outreach_core.ai.keys import OwnKey, choose_ai, own_key
from outreach_core.billing.ai_allowance import ensure_ai_draft_left
from outreach_core.billing.rules import in_force
from outreach_core.billing.store import billing_row
from outreach_core.kernel.context import WorkspaceContext
from outreach_core.kernel.endpoint import Outside
from outreach_core.kernel.errors import InvalidInput, WebUnavailable
from outreach_core.kernel.ports import WebFetchError
from outreach_core.kernel.urls import url_problem
from outreach_core.offer.schemas import OfferProfile
from outreach_core.onboarding.offer_draft import prompt, read_profile
from outreach_core.onboarding.rules import website_url
from outreach_core.onboarding.schemas import DraftOfferIn
from outreach_core.onboarding.website import page_draft, read_website

FILL_IN = "Check it, fill in audience, problem, proof and cta, and save it with save_offer_profile."


@dataclass(frozen=True)
class DraftPrepared:
    profile: OfferProfile
    url: str
    drafted: Literal["ai", "page"]
    own_key: bool
    message: str | None
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _State:
    key: OwnKey | None
    plan_in_force: bool


async def _state(ctx: WorkspaceContext) -> _State:
    key = await own_key(ctx)
    plan = in_force(await billing_row(ctx), ctx.now)
    if key is None and plan is not None and ctx.ports.ai is not None:
        await ensure_ai_draft_left(ctx, own_key=False)  # used up: the spec's message, and no draft at all
    return _State(key, plan is not None)


def _refused(reason: str) -> InvalidInput:
    return InvalidInput.field("url", f"The website could not be used: {reason}")


async def prepare_draft_offer(outside: Outside, *, body: DraftOfferIn) -> DraftPrepared:
    url = website_url(body.url)
    problem = url_problem(url, allow_private=outside.settings.allow_private_urls)
    if problem is not None:
        raise _refused(problem)  # the problem already says how to allow private servers
    state = await outside.read(_state)
    if outside.ports.web is None:
        raise WebUnavailable("This server cannot fetch websites.")
    try:
        page = await outside.ports.web.fetch_page(url)
    except WebFetchError as exc:
        raise _refused(exc.reason) from None
    site = await asyncio.to_thread(read_website, page.url, page.html, page.robots)
    if site.noindex:
        raise _refused(
            "the page asks not to be indexed (noindex), so it is not read; give the address of another "
            "page, or fill in the profile with save_offer_profile"
        )
    if site.empty:
        raise _refused("the page has no readable text (a page built by scripts alone cannot be read)")
    choice = choose_ai(outside.ports, state.key)
    if choice.chat is None:
        return DraftPrepared(
            page_draft(site), page.url, "page", False,
            f"Drafted without AI from the page's title, description and headings: this server has no AI "
            f"endpoint and the workspace no AI key of its own. {FILL_IN}",
        )  # fmt: skip
    if not choice.own_key and not state.plan_in_force:
        return DraftPrepared(
            page_draft(site), page.url, "page", False,
            "Drafted without AI from the page's title, description and headings: AI drafts come with a plan "
            f"(start_checkout) or the workspace's own AI key (set_ai_key). {FILL_IN}",
        )  # fmt: skip
    asked = await ask_json(choice.chat, prompt(site), read_profile)
    if asked.result is None:
        return DraftPrepared(
            page_draft(site), page.url, "page", choice.own_key,
            "The AI's answers could not be used (see problems), so this was drafted without AI from the "
            f"page's title, description and headings; it does not count as an AI draft. {FILL_IN}",
            asked.problems,
        )  # fmt: skip
    return DraftPrepared(
        asked.result, page.url, "ai", choice.own_key,
        "Drafted by AI from the page's own words: check every fact in proof before emails cite it, then save "
        "it with save_offer_profile if you change anything.",
        asked.problems,
    )  # fmt: skip
