"""`ports.WebFetcher`: GET a person's website (the offer draft of onboarding) under the outgoing rules.

Built on `GuardedHttpClient` (`http.py`), so every connection goes to an address `AddressGuard` checked:
globally routable only, unless `OUTREACH_ALLOW_PRIVATE_URLS=1` (DESIGN section 7), checked on the address
actually connected to. On top of it:

- redirects are followed by hand, at most `MAX_REDIRECTS`, and each new URL is checked with
  `urls.url_problem` before it is requested (a redirect to a private address is refused, never fetched);
- `OUTREACH_WEB_TIMEOUT_S` bounds the whole fetch, redirects included;
- only HTML is read (`text/html`, `application/xhtml+xml`); a larger page than `OUTREACH_WEB_MAX_BYTES` is
  refused (by its `Content-Length`, or once that many bytes were read), never cut and used in part.

Failures are `WebFetchError` with a sentence for the person, never an exception's text.
"""

from __future__ import annotations

import asyncio
from urllib.parse import urljoin

import aiohttp

from outreach_app.adapters.dns import DnspythonResolver
from outreach_app.adapters.http import GuardedHttpClient, describe
from outreach_app.outgoing import NotContacted
from outreach_core.kernel.ports import DnsResolver, WebFetchError, WebPage
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.urls import url_problem

MAX_REDIRECTS = 5
HTML_TYPES = ("text/html", "application/xhtml+xml")
_HEADERS = {
    "Accept": "text/html,application/xhtml+xml;q=0.9",
    "User-Agent": "Mozilla/5.0 (compatible; outreach-offer-draft/1.0)",
}


class WebPageFetcher(GuardedHttpClient):
    def __init__(
        self,
        *,
        timeout_s: float,
        max_bytes: int,
        tls_ca_file: str | None = None,
        allow_private_urls: bool = False,
        dns: DnsResolver | None = None,
    ) -> None:
        super().__init__(
            tls_ca_file=tls_ca_file,
            allow_private_urls=allow_private_urls,
            max_response_bytes=max_bytes,
            dns=dns,
            max_connections=10,
        )
        self._timeout_s = timeout_s
        self._max_page_bytes = max_bytes

    @classmethod
    def from_settings(cls, settings: Settings) -> WebPageFetcher:
        dns = DnspythonResolver(settings.dns_nameservers) if settings.dns_nameservers else None
        return cls(
            timeout_s=settings.web_timeout_s,
            max_bytes=settings.web_max_bytes,
            tls_ca_file=settings.tls_ca_file,
            allow_private_urls=settings.allow_private_urls,
            dns=dns,
        )

    async def fetch_page(self, url: str) -> WebPage:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await self._follow(url)
        except TimeoutError:
            raise WebFetchError(f"the website did not answer within {self._timeout_s:g} seconds") from None
        except NotContacted as exc:
            raise WebFetchError(exc.reason) from None
        except aiohttp.ClientError as exc:
            raise WebFetchError(f"the website could not be read: {describe(exc)}") from None
        except (ValueError, UnicodeError):
            raise WebFetchError("not a valid URL") from None

    async def _follow(self, url: str) -> WebPage:
        for _ in range(MAX_REDIRECTS + 1):
            problem = url_problem(url, allow_private=self._allow_private)
            if problem is not None:
                raise WebFetchError(f"refused {url}: {problem}")  # the problem says how to allow private
            async with self._client().get(url, headers=_HEADERS, allow_redirects=False) as response:
                if response.status in (301, 302, 303, 307, 308):
                    location = response.headers.get("Location")
                    if not location:
                        raise WebFetchError(
                            f"the website redirected without saying where (HTTP {response.status})"
                        )
                    url = urljoin(url, location)
                    continue
                if not 200 <= response.status < 300:
                    raise WebFetchError(f"the website answered HTTP {response.status}")
                kind = response.content_type.lower()
                if kind not in HTML_TYPES:
                    raise WebFetchError(f"the address is not an HTML page ({kind or 'no content type'})")
                too_large = WebFetchError(
                    f"the page is larger than {self._max_page_bytes // 1024:,} kB; give the address of a "
                    "shorter page (the home page or an about page)"
                )
                if response.content_length is not None and response.content_length > self._max_page_bytes:
                    raise too_large
                body = await response.content.read(self._max_page_bytes + 1)
                while len(body) <= self._max_page_bytes:
                    more = await response.content.read(self._max_page_bytes + 1 - len(body))
                    if not more:
                        break
                    body += more
                if len(body) > self._max_page_bytes:
                    raise too_large
                charset = response.charset or "utf-8"
                try:
                    text = body.decode(charset, errors="replace")
                except LookupError:
                    text = body.decode("utf-8", errors="replace")
                return WebPage(url=str(response.url), html=text, robots=response.headers.get("X-Robots-Tag"))
        raise WebFetchError(f"the website redirected more than {MAX_REDIRECTS} times")
