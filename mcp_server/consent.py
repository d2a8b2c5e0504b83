"""The OAuth consent page: a person connects an AI app by confirming with an API key of their workspace.

`/authorize` (the SDK's handler, via `OutreachOAuthProvider.authorize`) validates the request and sends the
browser here with the request signed (`?request=...`, valid ten minutes), so nothing in it can be altered
on the way. The page is plain server-rendered HTML: no JavaScript, every value escaped, framing refused.

- `GET /oauth/consent?request=...` shows the app's name and URI, what connecting means, an API key field
  and two buttons.
- `POST /oauth/consent` (form: `request`, `api_key`, `decision`): *deny* sends the browser back to the app
  with `error=access_denied`; *grant* with a valid key issues a single-use code and sends the browser back
  with `code` and `state`; an invalid key shows the form again (401). A tampered or expired request gets
  a 400 page and never a redirect, so the page cannot be used as an open redirector.

No password is stored anywhere: the key only proves who the person is and which workspace the app joins.
"""

from __future__ import annotations

import base64
import hashlib
import html
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

from mcp.server.auth.provider import construct_redirect_uri
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from mcp_server.toolsets import READONLY, toolset_names
from outreach_core.catalog import all_endpoints
from outreach_core.kernel.errors import InvalidInput, NotFound, Unauthorized
from outreach_core.kernel.runtime import Runtime
from outreach_core.kernel.settings import Settings
from outreach_core.kernel.signing import InvalidSignature, SignatureExpired, sign, verify
from outreach_core.oauth.server import get_client, issue_authorization_code

CONSENT_PATH = "/oauth/consent"
CONSENT_PURPOSE = "oauth-consent"
CONSENT_REQUEST_TTL = timedelta(minutes=10)
MAX_API_KEY_LENGTH = 200
_START_AGAIN = "Go back to the app and connect again."
_UNKNOWN_CLIENT = f"This app is not registered here any more. {_START_AGAIN}"


@dataclass(frozen=True)
class ConsentRequest:
    """An authorization request the SDK validated, carried (signed) through the consent page."""

    client_id: str
    redirect_uri: str
    redirect_uri_explicit: bool
    code_challenge: str
    state: str | None
    scopes: list[str]
    resource: str


def consent_url(settings: Settings, secret: str, request: ConsentRequest, now: datetime) -> str:
    """The consent page's URL for `request`, signed and valid for ten minutes from `now`."""
    token = sign(secret, CONSENT_PURPOSE, asdict(request), now + CONSENT_REQUEST_TTL)
    return f"{settings.public_url}{CONSENT_PATH}?{urlencode({'request': token})}"


def read_consent_request(secret: str | Sequence[str], token: str, now: datetime) -> ConsentRequest:
    """Verify and decode a signed consent request (raises `InvalidSignature` / `SignatureExpired`). `secret`
    may list the current key and earlier ones (`Settings.signing_keys`), so a rotation does not break a
    consent page already open."""
    payload = verify(secret, CONSENT_PURPOSE, token, now)
    try:
        return ConsentRequest(
            client_id=_str(payload["client_id"]),
            redirect_uri=_str(payload["redirect_uri"]),
            redirect_uri_explicit=bool(payload["redirect_uri_explicit"]),
            code_challenge=_str(payload["code_challenge"]),
            state=None if payload["state"] is None else _str(payload["state"]),
            scopes=[_str(s) for s in payload["scopes"]],
            resource=_str(payload["resource"]),
        )
    except (KeyError, TypeError) as exc:  # authentic but of another shape: a deploy changed the format
        raise InvalidSignature("The authorization request is malformed.") from exc


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError("expected a string")
    return value


# --- HTTP -------------------------------------------------------------------------------------------------

_STYLE = """
body{font:16px/1.5 system-ui,sans-serif;background:#f6f7f9;color:#1d2430;margin:0}
main{max-width:34rem;margin:3rem auto;background:#fff;border:1px solid #dde1e6;border-radius:8px;padding:2rem}
h1{font-size:1.4rem;margin:0 0 .25rem}
.uri{color:#5b6574;margin:0 0 1.25rem;word-break:break-all}
.error{background:#fdecec;border:1px solid #f3b8b8;color:#8a1c1c;padding:.75rem 1rem;border-radius:6px}
label{display:block;font-weight:600;margin:1.25rem 0 .35rem}
input[type=password]{width:100%;box-sizing:border-box;padding:.6rem;font:inherit;border:1px solid #b9c0ca;
border-radius:6px}
.buttons{display:flex;gap:.75rem;margin-top:1.25rem}
button{font:inherit;padding:.6rem 1.2rem;border-radius:6px;border:1px solid #b9c0ca;background:#fff;
cursor:pointer}
button.grant{background:#1f5fd1;border-color:#1f5fd1;color:#fff}
small{color:#5b6574}
"""
_STYLE_HASH = base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()
_SCHEME = re.compile(r"[a-z][a-z0-9+.-]*")
_HOST_PORT = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(:\d{1,5})?")


def consent_routes(runtime: Runtime) -> list[Route]:
    """The consent page's routes (`GET` and `POST /oauth/consent`), to mount at the root of the app."""
    keys = runtime.settings.signing_keys()

    async def consent(request: Request) -> Response:
        if request.method == "POST":
            return await _decide(runtime, keys, request)
        return await _show(runtime, keys, request)

    return [Route(CONSENT_PATH, consent, methods=["GET", "POST"])]


async def _show(runtime: Runtime, keys: list[str], request: Request) -> Response:
    token = request.query_params.get("request", "")
    try:
        consent_request = read_consent_request(keys, token, runtime.ports.clock.now())
    except InvalidSignature as exc:
        return _invalid_request_page(exc)
    client = await runtime.system_read(get_client, consent_request.client_id)
    if client is None:
        return _problem_page(400, _UNKNOWN_CLIENT)
    return _form_page(request, consent_request, token, client)


async def _decide(runtime: Runtime, keys: list[str], request: Request) -> Response:
    origin = request.headers.get("origin")
    if origin is not None and _normalized_origin(origin) != _normalized_origin(runtime.settings.public_url):
        # A browser posting from another site (OUTREACH_PUBLIC_URL must be the address people use).
        return _problem_page(403, f"This form can only be sent from the consent page itself. {_START_AGAIN}")
    form = await request.form()
    token, decision, api_key = (form.get(name) for name in ("request", "decision", "api_key"))
    if not isinstance(token, str):
        return _problem_page(400, f"The form is missing the authorization request. {_START_AGAIN}")
    try:
        consent_request = read_consent_request(keys, token, runtime.ports.clock.now())
    except InvalidSignature as exc:
        return _invalid_request_page(exc)
    if decision == "deny":
        return _redirect(
            consent_request,
            error="access_denied",
            error_description="The person declined to connect the app.",
            state=consent_request.state,
        )
    if decision != "grant":
        return _problem_page(400, "Choose Allow or Deny.")
    client = await runtime.system_read(get_client, consent_request.client_id)
    if client is None:
        return _problem_page(400, _UNKNOWN_CLIENT)
    key = api_key.strip() if isinstance(api_key, str) else ""
    if not key or len(key) > MAX_API_KEY_LENGTH:
        return _form_page(
            request, consent_request, token, client, status=401, error="Enter an API key of your workspace."
        )
    try:
        code = await runtime.system(
            issue_authorization_code,
            api_key=key,
            client_id=consent_request.client_id,
            redirect_uri=consent_request.redirect_uri,
            redirect_uri_explicit=consent_request.redirect_uri_explicit,
            code_challenge=consent_request.code_challenge,
            scopes=consent_request.scopes,
            resource=consent_request.resource,
        )
    except Unauthorized as exc:
        return _form_page(
            request,
            consent_request,
            token,
            client,
            status=401,
            error=f"That API key was not accepted: {exc.message} Check it and try again.",
        )
    except (InvalidInput, NotFound) as exc:
        return _problem_page(400, f"This authorization request cannot be completed: {exc.message}")
    return _redirect(consent_request, code=code, state=consent_request.state)


# --- rendering --------------------------------------------------------------------------------------------


def _form_page(
    request: Request,
    consent_request: ConsentRequest,
    token: str,
    client: dict[str, Any],
    *,
    status: int = 200,
    error: str | None = None,
) -> Response:
    name = str(client.get("client_name") or consent_request.client_id)
    uri = client.get("client_uri")
    back_to = _display_target(consent_request.redirect_uri)
    e = html.escape
    body = f"""
<h1>Connect “{e(name)}” to your workspace?</h1>
{f'<p class="uri">{e(str(uri))}</p>' if uri else '<p class="uri">This app gave no web address.</p>'}
{f'<p class="error" role="alert">{e(error)}</p>' if error else ""}
<p><strong>{e(name)}</strong> asks to use the outreach tools (MCP) on your behalf. It will act on the
workspace of the API key you enter, with your role in it: it can read and change what you can, such as
leads, campaigns, mailboxes and settings.</p>
{_scope_sentence(consent_request.scopes)}
<p>The key is checked once to confirm who you are. It is not stored with the connection and the app never
sees it. You can disconnect the app at any time under Connected apps; its access stops at once.</p>
<p><small>After you choose, you are sent back to {e(back_to)}.</small></p>
<form method="post" action="{e(request.url.path)}">
<input type="hidden" name="request" value="{e(token)}">
<label for="api_key">API key of your workspace</label>
<input id="api_key" name="api_key" type="password" autocomplete="off" spellcheck="false" required>
<div class="buttons">
<button class="grant" type="submit" name="decision" value="grant">Allow</button>
<button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
</div>
</form>"""
    return _html(f"Connect {name}", body, status, consent_request.redirect_uri)


def _scope_sentence(scopes: list[str]) -> str:
    """What the requested scopes limit the app to (MCP tool sets and read-only mode), or nothing."""
    known = toolset_names(all_endpoints())
    sets = [s for s in scopes if s in known]
    read_only = READONLY in scopes
    if not sets and not read_only:
        return ""
    reach = (
        f"only the tool sets <strong>{html.escape(', '.join(sets))}</strong>" if sets else "every tool set"
    )
    limit = ", and only tools that change nothing" if read_only else ""
    return f"<p>The app asked for {reach}{limit}: it can use no other tools.</p>"


def _invalid_request_page(exc: InvalidSignature) -> Response:
    if isinstance(exc, SignatureExpired):
        return _problem_page(400, f"This authorization request has expired. {_START_AGAIN}")
    return _problem_page(400, f"This authorization request is invalid. {_START_AGAIN}")


def _problem_page(status: int, message: str) -> Response:
    body = f'<h1>Cannot connect the app</h1>\n<p class="error">{html.escape(message)}</p>'
    return _html("Cannot connect the app", body, status, None)


def _html(title: str, body: str, status: int, redirect_uri: str | None) -> Response:
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="referrer" content="same-origin">\n'
        f"<title>{html.escape(title)}</title>\n<style>{_STYLE}</style>\n</head>\n<body>\n<main>{body}\n</main>\n"
        "</body>\n</html>\n"
    )
    return HTMLResponse(document, status_code=status, headers=_security_headers(redirect_uri))


def _redirect(consent_request: ConsentRequest, **params: str | None) -> Response:
    return RedirectResponse(
        construct_redirect_uri(consent_request.redirect_uri, **params),
        status_code=302,
        headers=_security_headers(consent_request.redirect_uri),
    )


def _security_headers(redirect_uri: str | None) -> dict[str, str]:
    """No framing (clickjacking), no caching, no referrer to other sites, only our own style; the form may
    post only to us, then be redirected only to the app's redirect URI (CSP checks form-action redirects)."""
    form_action = " ".join(["'self'", *_form_action_source(redirect_uri)])
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'sha256-{_STYLE_HASH}'; base-uri 'none'; "
            f"frame-ancestors 'none'; form-action {form_action}"
        ),
        "X-Frame-Options": "DENY",
        "Cache-Control": "no-store",
        "Pragma": "no-cache",
        "Referrer-Policy": "same-origin",
        "X-Content-Type-Options": "nosniff",
    }


def _form_action_source(redirect_uri: str | None) -> list[str]:
    """The CSP source matching the app's redirect URI: its origin, or its scheme for a native-app scheme.
    Anything that does not look like a plain origin is left out rather than put in a header."""
    if not redirect_uri:
        return []
    parts = urlsplit(redirect_uri)
    scheme = parts.scheme.lower()
    if not _SCHEME.fullmatch(scheme):
        return []
    if scheme not in ("http", "https"):
        return [f"{scheme}:"]
    host_port = parts.netloc.rpartition("@")[2].lower()
    return [f"{scheme}://{host_port}"] if _HOST_PORT.fullmatch(host_port) else []


def _normalized_origin(url: str) -> str | None:
    """`scheme://host[:port]` as browsers send it in `Origin` (default port left out); None if unparsable."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if not scheme or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    default_port = {"http": 80, "https": 443}.get(scheme)
    return f"{scheme}://{host}" + (f":{port}" if port is not None and port != default_port else "")


def _display_target(redirect_uri: str) -> str:
    parts = urlsplit(redirect_uri)
    return parts.netloc.rpartition("@")[2] if parts.netloc else f"{parts.scheme}:"
