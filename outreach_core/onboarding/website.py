"""What a website says, read from its HTML (pure, no I/O): title, description, site name, headings, the
readable text (`trafilatura`, which drops navigation, footers and boilerplate), and whether the page asks
not to be indexed. And the offer profile drafted from it without AI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from outreach_core.offer.schemas import LIMITS, OfferProfile

TEXT_LIMIT = 12_000
"""Characters of the readable text handed to the AI (the start of the page says what a company does)."""
_SPACES = re.compile(r"\s+")
_TITLE_SPLIT = re.compile("\\s+[|\\-\u2013\u2014:\u00b7]\\s+")


@dataclass(frozen=True)
class Website:
    url: str
    title: str
    description: str
    site_name: str
    headings: tuple[str, ...]
    text: str
    noindex: bool

    @property
    def empty(self) -> bool:
        return not (self.title or self.description or self.headings or self.text)


def _clean(text: str | None) -> str:
    return _SPACES.sub(" ", text or "").strip()


def read_website(url: str, html: str, robots_header: str | None = None) -> Website:
    """Read a fetched page. `robots_header` is its `X-Robots-Tag` header, if any."""
    import lxml.html  # imported here: trafilatura and lxml take about a second to import
    import trafilatura

    try:
        tree = lxml.html.document_fromstring(html)
    except (ValueError, lxml.etree.ParserError):
        return Website(url, "", "", "", (), "", False)
    title = _clean(" ".join(tree.xpath("//title//text()")))
    description = ""
    site_name = ""
    noindex = "noindex" in (robots_header or "").lower()
    for meta in tree.xpath("//meta"):
        name = (meta.get("name") or meta.get("property") or "").strip().lower()
        content = _clean(meta.get("content"))
        if name in ("description", "og:description") and content and not description:
            description = content
        elif name == "og:site_name" and content:
            site_name = content
        elif name in ("robots", "googlebot") and "noindex" in content.lower():
            noindex = True
    headings = tuple(
        dict.fromkeys(h for h in (_clean(e.text_content()) for e in tree.xpath("//h1|//h2|//h3")) if h)
    )[:12]
    text = trafilatura.extract(html, output_format="txt", include_comments=False, favor_recall=True) or ""
    return Website(url, title, description, site_name, headings, text.strip()[:TEXT_LIMIT], noindex)


def page_draft(site: Website) -> OfferProfile:
    """The offer profile drafted without AI: the company from the site name or the title, the product from
    the description and the main heading. Audience, problem, proof and call to action are left for the
    person: a page's words are not facts to cite."""
    company = site.site_name or (_TITLE_SPLIT.split(site.title)[0] if site.title else "")
    product_parts = [site.description] if site.description else []
    if site.headings and site.headings[0] not in site.description:
        product_parts.append(site.headings[0])
    if not product_parts and site.text:
        product_parts.append(site.text.split("\n")[0])
    return OfferProfile(
        company=_fit(company, LIMITS["company"]),
        product=_fit("\n".join(product_parts), LIMITS["product"]),
    )


def _fit(text: str, limit: int) -> str:
    """`text` cut at a word boundary to `limit` characters."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut or text[:limit]
