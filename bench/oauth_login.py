"""What a mailbox's login credential costs (`mailboxes/oauth_tokens.py:login_for`), per login: a password
mailbox (decrypt), an OAuth mailbox whose access token is still fresh (decrypt the token document, no
network), and an OAuth mailbox whose token is refreshed first (a real POST to a local token endpoint on
loopback, through the OAuth port's adapter: authlib's AsyncOAuth2Client). Prints the rate and the CPU µs per login of each path.

    .venv/bin/python bench/oauth_login.py [--n 2000] [--refreshes 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from outreach_app.adapters.oauth import AuthlibOAuthClient
from outreach_core.kernel.crypto import encrypt
from outreach_core.kernel.ports import MailServer
from outreach_core.kernel.settings import Settings
from outreach_core.mailboxes.oauth_tokens import Tokens, login_for, seal_tokens


async def _token(request: web.Request) -> web.Response:
    await request.post()
    return web.json_response({"access_token": "at-new", "token_type": "Bearer", "expires_in": 3600})


async def main(n: int, refreshes: int) -> None:
    app = web.Application()
    app.router.add_post("/token", _token)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    settings = Settings(
        database_url="sqlite+aiosqlite://",
        secret_key="bench-secret",
        google_client_id="bench",
        google_client_secret="bench-secret",
        google_auth_base=f"http://127.0.0.1:{port}",
    )
    oauth = AuthlibOAuthClient.from_settings(settings)
    server = MailServer("smtp.example", 465, "tls", "a@example.com")
    now = datetime.now(UTC)
    password = encrypt(settings, "a password")
    fresh = seal_tokens(settings, Tokens("google_oauth", "rt", "at", now.timestamp() + 3600))
    rows = [("password", n, lambda i: None), ("oauth, fresh token", n, lambda i: fresh)]
    print(f"{'path':<28}{'logins':>8}{'per s':>10}{'CPU µs/login':>14}")
    for name, count, sealed in rows:
        wall, cpu = time.perf_counter(), time.process_time()
        for i in range(count):
            await login_for(settings, oauth, now, f"mbx{i}", server, password, sealed(i))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"{name:<28}{count:>8}{count / wall:>10,.0f}{cpu / count * 1e6:>14,.1f}")
    # every login refreshes: a new mailbox id each time (nothing cached) with an expired token
    expired = seal_tokens(settings, Tokens("google_oauth", "rt", "at", now.timestamp() - 1))
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(refreshes):
        await login_for(settings, oauth, now, f"refresh{i}", server, password, expired)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    name = "oauth, refreshed first"
    print(f"{name:<28}{refreshes:>8}{refreshes / wall:>10,.0f}{cpu / refreshes * 1e6:>14,.1f}")
    await runner.cleanup()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--refreshes", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.refreshes))
