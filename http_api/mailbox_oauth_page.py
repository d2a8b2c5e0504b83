"""`GET /oauth/mailbox/callback?code&state`: where Google or Microsoft sends the browser back after a person
started connecting a mailbox with POST /mailboxes/oauth/start (issue 32 item 3, docs/mailboxes.md "OAuth").
No authentication: the single-use `state` (10 minutes) names the workspace and the person. Answers a short
HTML page saying what happened (saved, login test failed, refused, expired).
"""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from outreach_core.kernel.context import Principal, workspace_itself
from outreach_core.kernel.errors import NotFound, OutreachError
from outreach_core.kernel.runtime import Runtime
from outreach_core.mailboxes.oauth_connect import (
    exchange_code,
    save_oauth_mailbox,
    state_workspace,
    take_state,
)
from outreach_core.mailboxes.oauth_providers import CALLBACK_PATH

_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def mailbox_oauth_routes(runtime: Runtime) -> list[Route]:
    """The callback route, to mount at the root of the app."""

    async def callback(request: Request) -> Response:
        state = request.query_params.get("state", "")
        workspace_id = state_workspace(state)
        if workspace_id is None:
            return _page("Link not valid", "<p>This sign-in link is not valid. Start again.</p>", 400)
        try:
            taken = await runtime.execute(workspace_itself(workspace_id, "mailbox-oauth"), take_state, state)
        except NotFound:
            return _page(
                "Link not valid",
                "<p>This sign-in was used already or is older than 10 minutes. Start again.</p>",
                404,
            )
        error = request.query_params.get("error")
        code = request.query_params.get("code")
        if error or not code:
            reason = f" ({error})" if error else ""
            return _page(
                "Not connected", f"<p>The sign-in was not completed{html.escape(reason[:100])}.</p>", 400
            )
        done = await exchange_code(runtime.settings, runtime.ports, taken, code)
        if done.problem is not None or done.tokens is None or done.email is None:
            return _page("Not connected", f"<p>{html.escape(done.problem or 'nothing to save')}.</p>", 400)
        if not done.test.ok:
            failures = [
                f"SMTP: {done.test.smtp}" if done.test.smtp else "",
                f"IMAP: {done.test.imap}" if done.test.imap else "",
            ]
            text = "; ".join(f for f in failures if f)
            return _page(
                "Not connected",
                f"<p>{html.escape(done.email)} signed in, but the login test failed: "
                f"{html.escape(text)}.</p>",
                400,
            )
        person = Principal(
            user_id=taken.user_id,
            workspace_id=workspace_id,
            role="owner" if taken.role == "owner" else "admin" if taken.role == "admin" else "member",
            auth="session",
            credential_id="mailbox-oauth",
        )
        try:
            await runtime.execute(person, save_oauth_mailbox, taken.provider, done.email, done.tokens)
        except OutreachError as err:
            return _page("Not connected", f"<p>{html.escape(err.message)}</p>", err.status)
        return _page(
            "Mailbox connected",
            f"<p>{html.escape(done.email)} is connected and both logins (SMTP and IMAP) passed. "
            "You can close this page.</p>",
        )

    return [Route(CALLBACK_PATH, callback, methods=["GET"])]


def _page(title: str, body: str, status: int = 200) -> Response:
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n</head>\n<body>\n<main><h1>{html.escape(title)}</h1>\n{body}"
        "</main>\n</body>\n</html>\n"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)
