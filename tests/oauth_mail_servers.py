"""A local OAuth provider for Google and Microsoft mailboxes over OAuth (issue 32
item 3), on loopback.

- `OAuthProvider`: aiohttp. `GET /authorize` checks the client, the redirect URI and PKCE (S256) and
  redirects back with a code for `next_email`; `POST /token` takes the grants `authorization_code` (the
  code, the client secret and the PKCE verifier checked) and `refresh_token`, answering an ID token (not
  signed: it comes straight from the token endpoint), an access token living `access_ttl_s` and a refresh
  token. `refresh_answer` ("ok", "invalid_grant", "503") says how refreshes are answered. `bearer_ok(user,
  token)` is what the mail servers ask: the token is a live access token issued for `user`; a refresh
  ends the access tokens issued before it.
  `POST /introspect` (RFC 7662) answers Dovecot's `oauth2` passdb (`tests/mail_servers.py`
  `Dovecot(introspection_url=...)`): `active` and the `email` of a live access token.
- `google_mailboxes`: the provider configured as Google's, with an aiosmtpd taking AUTH XOAUTH2 (the bearer
  checked with the provider) and a Dovecot with the `oauth2` passdb, the app served with those settings;
  `connect_oauth` follows the whole sign-in as a browser would and `oauth_mailbox` reads the result.
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from aiohttp import web

from outreach_core.kernel.runtime import Runtime
from tests.conftest import WorkspaceHandle
from tests.mail_servers import HOST, Dovecot, MailCA, SmtpServer, Users, free_port, missing
from tests.served import served


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def id_token(claims: dict[str, Any]) -> str:
    header = _b64url(json.dumps({"alg": "RS256", "kid": "test"}).encode())
    return f"{header}.{_b64url(json.dumps(claims).encode())}.{_b64url(b'not-checked')}"


@dataclass
class _Code:
    client_id: str
    redirect_uri: str
    challenge: str
    email: str


@dataclass
class OAuthProvider:
    client_id: str = "test-client"
    client_secret: str = "test-client-secret"
    next_email: str = "someone@gmail.test"
    access_ttl_s: int = 3600
    refresh_answer: str = "ok"
    rotate_refresh: bool = False  # a refresh answers a new refresh token and ends the old one (Microsoft)
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)  # grant types answered with tokens, in order
    refused: list[str] = field(default_factory=list)  # why token requests were refused
    introspected: list[str] = field(default_factory=list)  # tokens Dovecot asked about
    _codes: dict[str, _Code] = field(default_factory=dict)
    _refresh: dict[str, str] = field(default_factory=dict)  # refresh token -> email
    _access: dict[str, tuple[str, float]] = field(default_factory=dict)  # access token -> (email, expiry)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _runner: web.AppRunner | None = None
    port: int = 0

    @property
    def base(self) -> str:
        return f"http://{HOST}:{self.port}"

    def bearer_ok(self, user: str, token: str) -> bool:
        with self._lock:
            found = self._access.get(token)
        return found is not None and found[0] == user and found[1] > time.time()

    def live_tokens(self, email: str) -> list[str]:
        """The access tokens of `email` still valid (one: a refresh ends those issued before it)."""
        with self._lock:
            return [t for t, (owner, exp) in self._access.items() if owner == email and exp > time.time()]

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        app.router.add_post("/introspect", self._introspect)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, HOST, self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _introspect(self, request: web.Request) -> web.Response:
        """RFC 7662 token introspection, for Dovecot's `oauth2` passdb."""
        token = str((await request.post()).get("token") or "")
        with self._lock:
            found = self._access.get(token)
        self.introspected.append(token)
        if found is None or found[1] <= time.time():
            return web.json_response({"active": "false"})
        return web.json_response({"active": "true", "email": found[0], "exp": int(found[1])})

    async def _authorize(self, request: web.Request) -> web.Response:
        q = dict(request.query)
        self.authorize_requests.append(q)
        if q.get("client_id") != self.client_id or q.get("response_type") != "code":
            return web.Response(status=400, text="unknown client")
        if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
            return web.Response(status=400, text="PKCE S256 required")
        code = secrets.token_urlsafe(16)
        self._codes[code] = _Code(self.client_id, q["redirect_uri"], q["code_challenge"], self.next_email)
        location = f"{q['redirect_uri']}?{urlencode({'code': code, 'state': q.get('state', '')})}"
        raise web.HTTPFound(location)

    def _tokens(self, email: str) -> dict[str, Any]:
        access, refresh = f"at-{secrets.token_urlsafe(12)}", f"rt-{secrets.token_urlsafe(12)}"
        with self._lock:
            for token, (owner, _) in list(self._access.items()):
                if owner == email:  # a refresh ends the access tokens issued before it
                    del self._access[token]
            self._access[access] = (email, time.time() + self.access_ttl_s)
            self._refresh[refresh] = email
        return {"access_token": access, "token_type": "Bearer", "expires_in": self.access_ttl_s,
                "refresh_token": refresh, "scope": "openid email https://mail.google.com/"}  # fmt: skip

    async def _token(self, request: web.Request) -> web.Response:
        form = dict(await request.post())
        if form.get("client_id") != self.client_id or form.get("client_secret") != self.client_secret:
            self.refused.append("invalid_client")
            return web.json_response({"error": "invalid_client"}, status=401)
        grant = form.get("grant_type")
        if grant == "authorization_code":
            code = self._codes.pop(str(form.get("code")), None)
            verifier = str(form.get("code_verifier") or "")
            if code is None or _b64url(hashlib.sha256(verifier.encode()).digest()) != code.challenge:
                self.refused.append("invalid_grant: code or PKCE verifier")
                return web.json_response({"error": "invalid_grant"}, status=400)
            if form.get("redirect_uri") != code.redirect_uri:
                self.refused.append("invalid_grant: redirect_uri")
                return web.json_response({"error": "invalid_grant"}, status=400)
            claims = {"iss": self.base, "aud": self.client_id, "sub": "1", "email": code.email,
                      "email_verified": True, "exp": int(time.time()) + 3600}  # fmt: skip
            self.grants.append(grant)
            return web.json_response({**self._tokens(code.email), "id_token": id_token(claims)})
        if grant == "refresh_token":
            if self.refresh_answer == "503":
                self.refused.append("503")
                return web.Response(status=503, text="try later")
            email = self._refresh.get(str(form.get("refresh_token")))
            if email is None or self.refresh_answer == "invalid_grant":
                self.refused.append("invalid_grant")
                return web.json_response(
                    {"error": "invalid_grant", "error_description": "Token has been expired or revoked."},
                    status=400,
                )
            self.grants.append(grant)
            answer = self._tokens(email)
            if self.rotate_refresh:
                with self._lock:
                    del self._refresh[str(form.get("refresh_token"))]
            else:
                del answer["refresh_token"]  # Google keeps the refresh token
            return web.json_response(answer)
        return web.json_response({"error": "unsupported_grant_type"}, status=400)


@dataclass
class Google:
    provider: OAuthProvider
    smtp: SmtpServer
    imap: Dovecot
    base: str  # the app, configured for this provider
    runtime: Runtime  # the same settings, for worker ticks
    ca: MailCA  # what the servers' certificates are signed with (`tests.imap_client.Maildrop(google, ...)`)


@asynccontextmanager
async def google_mailboxes(runtime: Runtime, mail_ca: MailCA) -> AsyncIterator[Google]:
    """The local provider as Google's, its mail servers, and the app served for it (see the docstring)."""
    provider = OAuthProvider(client_id="google-test-client", client_secret="google-test-secret")
    await provider.start()
    problem = Dovecot.problem()
    if problem is not None:
        missing(problem)
    smtp = SmtpServer("tls", mail_ca, Users(), bearer_ok=provider.bearer_ok)
    smtp.start()
    root = Path(tempfile.mkdtemp(prefix="outreach-dovecot-oauth-"))  # readable by Dovecot's processes
    imap = Dovecot(root, mail_ca, Users(), introspection_url=f"{provider.base}/introspect")
    imap.start()
    changes: dict[str, Any] = {
        "google_client_id": provider.client_id,
        "google_client_secret": provider.client_secret,
        "google_auth_base": provider.base,
        "oauth_smtp": f"{HOST}:{smtp.port}:tls",
        "oauth_imap": f"{HOST}:{imap.tls_port}:tls",
    }
    try:
        async with served(runtime, **changes) as base:
            settings = runtime.settings.model_copy(update={"public_url": base, **changes})
            rt = Runtime(settings, engine=runtime.engine, ports=runtime.ports)
            yield Google(provider, smtp, imap, base, rt, mail_ca)
    finally:
        smtp.stop()
        imap.stop()
        shutil.rmtree(root, ignore_errors=True)
        await provider.stop()


API = "/api/v1"


async def connect_oauth(google: Google, ws: WorkspaceHandle, email: str) -> tuple[httpx.Response, str]:
    """Start, follow the provider's redirect by hand, open the callback: (callback page, callback URL)."""
    google.provider.next_email = email
    async with httpx.AsyncClient(timeout=30, follow_redirects=False) as client:
        started = await client.post(
            f"{google.base}{API}/mailboxes/oauth/start", headers=ws.headers, json={"provider": "google_oauth"}
        )
        assert started.status_code == 200, started.text
        url = started.json()["url"]
        authorize = await client.get(url)
        assert authorize.status_code == 302, authorize.text
        callback = authorize.headers["location"]
        return await client.get(callback), callback


async def oauth_mailbox(google: Google, ws: WorkspaceHandle, email: str) -> dict[str, Any]:
    """The mailbox of `email` as GET /mailboxes shows it."""
    async with httpx.AsyncClient(base_url=google.base, timeout=30) as client:
        listed = (await client.get(f"{API}/mailboxes", headers=ws.headers)).json()
    return next(m for m in listed["mailboxes"] if m["email"] == email)
