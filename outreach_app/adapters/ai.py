"""`ports.AiChat`: an OpenAI-compatible Chat Completions client (`POST {base}/chat/completions`).

Configured by the operator (`OUTREACH_AI_BASE_URL`, `OUTREACH_AI_API_KEY`, `OUTREACH_AI_MODEL`,
`OUTREACH_AI_TIMEOUT_S`); without a base URL and a model there is no AI port and rules label replies. The
requests go through the guarded aiohttp client of `http.py` (no redirects, bounded body, one timeout for
the whole exchange). The endpoint is the operator's own choice, so a provider on a private or loopback
address (a local model server) is allowed whatever `OUTREACH_ALLOW_PRIVATE_URLS` says. Failures come back
as a short reason, never an exception or the key.
"""

from __future__ import annotations

import json
from typing import Any

from outreach_app.adapters.http import GuardedHttpClient
from outreach_core.kernel.ports import ChatAnswer, HttpClient
from outreach_core.kernel.settings import Settings

MAX_ANSWER_BYTES = 256 * 1024


class ChatCompletionsClient:
    def __init__(
        self, base_url: str, model: str, *, api_key: str | None, timeout_s: float, http: HttpClient
    ) -> None:
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._http = http

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatCompletionsClient | None:
        """The client the settings describe, or None when no AI endpoint is configured."""
        if not settings.ai_base_url or not settings.ai_model:
            return None
        http = GuardedHttpClient(
            tls_ca_file=settings.tls_ca_file, allow_private_urls=True, max_connections=20
        )
        return cls(
            settings.ai_base_url,
            settings.ai_model,
            api_key=settings.ai_api_key,
            timeout_s=settings.ai_timeout_s,
            http=http,
        )

    async def complete(self, messages: list[dict[str, str]], *, json_answer: bool = True) -> ChatAnswer:
        body: dict[str, Any] = {"model": self._model, "messages": messages, "temperature": 0}
        if json_answer:
            body["response_format"] = {"type": "json_object"}
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        status, raw = await self._http.post_json(
            self._url, json.dumps(body).encode(), headers, self._timeout_s, max_bytes=MAX_ANSWER_BYTES
        )
        if status == 0:
            what = raw.decode("utf-8", "replace")[:120]
            return ChatAnswer(None, f"timeout after {self._timeout_s:g}s" if what == "timed out" else what)
        if not 200 <= status < 300:
            return ChatAnswer(None, f"HTTP {status}")
        return ChatAnswer(*_content(raw))

    async def aclose(self) -> None:
        close = getattr(self._http, "aclose", None)
        if close is not None:
            await close()


def _content(raw: bytes) -> tuple[str | None, str | None]:
    """The first choice's message text of a Chat Completions response, or why there is none."""
    try:
        data = json.loads(raw)
        content = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, "malformed response"
    if not isinstance(content, str):
        return None, "malformed response"
    return content, None


class OwnKeyClients:
    """`ports.AiKeys`: Chat Completions clients on a workspace's own key, at its provider's OpenAI-compatible
    endpoint (`OUTREACH_AI_OPENAI_BASE_URL` / `OUTREACH_AI_GOOGLE_BASE_URL`, models `..._MODEL`). One HTTP
    client serves them all. Like the server's endpoint, the provider URLs are the operator's settings, so a
    loopback address (a local proxy, the tests) is allowed."""

    def __init__(self, settings: Settings, http: HttpClient | None = None) -> None:
        self._settings = settings
        self._http = http or GuardedHttpClient(
            tls_ca_file=settings.tls_ca_file, allow_private_urls=True, max_connections=20
        )

    def client(self, provider: str, key: str) -> ChatCompletionsClient:
        s = self._settings
        base, model = (
            (s.ai_google_base_url, s.ai_google_model)
            if provider == "google"
            else (s.ai_openai_base_url, s.ai_openai_model)
        )
        return ChatCompletionsClient(base, model, api_key=key, timeout_s=s.ai_timeout_s, http=self._http)

    async def aclose(self) -> None:
        close = getattr(self._http, "aclose", None)
        if close is not None:
            await close()
