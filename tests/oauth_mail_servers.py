"""A local OAuth provider and an IMAP responder for Google and Microsoft mailboxes over OAuth (issue 32
item 3), on loopback.

- `OAuthProvider`: aiohttp. `GET /authorize` checks the client, the redirect URI and PKCE (S256) and
  redirects back with a code for `next_email`; `POST /token` takes the grants `authorization_code` (the
  code, the client secret and the PKCE verifier checked) and `refresh_token`, answering an ID token (not
  signed: it comes straight from the token endpoint), an access token living `access_ttl_s` and a refresh
  token. `refresh_answer` ("ok", "invalid_grant", "503") says how refreshes are answered. `bearer_ok(user,
  token)` is what the mail servers ask: the token is a live access token issued for `user`; a refresh
  ends the access tokens issued before it.
- `ImapXoauth2`: a minimal IMAP server over implicit TLS that takes only what the login test does
  (CAPABILITY, AUTHENTICATE XOAUTH2, NOOP, LOGOUT), checking the bearer with `OAuthProvider.bearer_ok`;
  every AUTHENTICATE it saw is in `logins`. It is not Dovecot: see docs/mailboxes.md "OAuth".
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from tests.mail_servers import HOST, MailCA, free_port


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
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    grants: list[str] = field(default_factory=list)  # grant types answered with tokens, in order
    refused: list[str] = field(default_factory=list)  # why token requests were refused
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

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/authorize", self._authorize)
        app.router.add_post("/token", self._token)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self.port = free_port()
        await web.TCPSite(self._runner, HOST, self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

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
            del answer["refresh_token"]  # Google keeps the refresh token
            return web.json_response(answer)
        return web.json_response({"error": "unsupported_grant_type"}, status=400)


class ImapXoauth2:
    """See the module docstring."""

    def __init__(self, ca: MailCA, provider: OAuthProvider) -> None:
        self.ca = ca
        self.provider = provider
        self.port = free_port()
        self.logins: list[tuple[str, bool]] = []  # (user, accepted)
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, HOST, self.port, ssl=self.ca.server_context())

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def send(line: str) -> None:
            writer.write(line.encode() + b"\r\n")

        send("* OK [CAPABILITY IMAP4rev1 AUTH=XOAUTH2 SASL-IR] test server ready")
        try:
            while line := await reader.readline():
                parts = line.decode().strip().split(" ")
                tag, command = parts[0], (parts[1].upper() if len(parts) > 1 else "")
                if command == "CAPABILITY":
                    send("* CAPABILITY IMAP4rev1 AUTH=XOAUTH2 SASL-IR")
                    send(f"{tag} OK CAPABILITY completed")
                elif command == "AUTHENTICATE" and len(parts) == 4 and parts[2].upper() == "XOAUTH2":
                    fields = base64.b64decode(parts[3]).decode().split("\x01")
                    user = fields[0].removeprefix("user=")
                    token = next(
                        (f.removeprefix("auth=Bearer ") for f in fields if f.startswith("auth=")), ""
                    )
                    accepted = self.provider.bearer_ok(user, token)
                    self.logins.append((user, accepted))
                    send(
                        f"{tag} OK AUTHENTICATE completed"
                        if accepted
                        else f"{tag} NO [AUTHENTICATIONFAILED] Invalid credentials"
                    )
                elif command == "NOOP":
                    send(f"{tag} OK NOOP completed")
                elif command == "LOGOUT":
                    send("* BYE logging out")
                    send(f"{tag} OK LOGOUT completed")
                    await writer.drain()
                    break
                else:
                    send(f"{tag} BAD not supported by this test server")
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
