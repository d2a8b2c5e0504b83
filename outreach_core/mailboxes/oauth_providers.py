"""Google and Microsoft as OAuth mailbox providers (issue 32 item 3, docs/mailboxes.md "OAuth"): whether
each is configured, its endpoints, scopes and mail servers, and the address in its ID token (pure)."""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from outreach_core.kernel.ports import MailServer, OAuthApp
from outreach_core.kernel.settings import Settings, parse_mail_server

OAuthProvider = Literal["google_oauth", "microsoft"]
OAUTH_PROVIDERS: tuple[OAuthProvider, ...] = ("google_oauth", "microsoft")
CALLBACK_PATH = "/oauth/mailbox/callback"

_GOOGLE_SCOPES = "openid email https://mail.google.com/"
_MICROSOFT_SCOPES = (
    "openid email offline_access https://outlook.office.com/SMTP.Send "
    "https://outlook.office.com/IMAP.AccessAsUser.All"
)
_SERVERS: dict[OAuthProvider, tuple[tuple[str, int, Literal["tls", "starttls"]], ...]] = {
    "google_oauth": (("smtp.gmail.com", 465, "tls"), ("imap.gmail.com", 993, "tls")),
    "microsoft": (("smtp.office365.com", 587, "starttls"), ("outlook.office365.com", 993, "tls")),
}


def provider_config(settings: Settings, provider: OAuthProvider) -> OAuthApp | None:
    """The provider's client, endpoints and this server's callback URL, or None when the operator has not
    configured it (client id and secret). `OUTREACH_GOOGLE_AUTH_BASE` / `OUTREACH_MICROSOFT_AUTH_BASE`
    replace the endpoints with `<base>/authorize` and `<base>/token` (tests)."""
    if provider == "google_oauth":
        cid, secret, base = (
            settings.google_client_id,
            settings.google_client_secret,
            settings.google_auth_base,
        )
        authorize = "https://accounts.google.com/o/oauth2/v2/auth"
        token = "https://oauth2.googleapis.com/token"
        scope, extra = _GOOGLE_SCOPES, {"access_type": "offline", "prompt": "consent"}
    else:
        cid, secret = settings.microsoft_client_id, settings.microsoft_client_secret
        base = settings.microsoft_auth_base
        root = f"https://login.microsoftonline.com/{settings.microsoft_tenant}/oauth2/v2.0"
        authorize, token = f"{root}/authorize", f"{root}/token"
        scope, extra = _MICROSOFT_SCOPES, {"prompt": "select_account"}
    if not cid or not secret:
        return None
    if base:
        authorize, token = f"{base.rstrip('/')}/authorize", f"{base.rstrip('/')}/token"
    callback = f"{settings.public_url.rstrip('/')}{CALLBACK_PATH}"
    return OAuthApp(cid, secret, authorize, token, scope, callback, extra)


def microsoft_enabled(settings: Settings) -> bool:
    """Whether Microsoft 365 mailboxes can connect over OAuth on this server (`microsoftEnabled`)."""
    return provider_config(settings, "microsoft") is not None


def oauth_servers(settings: Settings, provider: OAuthProvider, email: str) -> tuple[MailServer, MailServer]:
    """The provider's SMTP and IMAP servers, logged in to with XOAUTH2 as `email`; `OUTREACH_OAUTH_SMTP` and
    `OUTREACH_OAUTH_IMAP` (host:port:security) replace them (tests)."""
    smtp, imap = _SERVERS[provider]
    smtp = parse_mail_server(settings.oauth_smtp) or smtp
    imap = parse_mail_server(settings.oauth_imap) or imap
    return (
        MailServer(*smtp, user=email, auth="xoauth2"),
        MailServer(*imap, user=email, auth="xoauth2"),
    )


def id_token_email(id_token: str, client_id: str, now_s: float) -> str | None:
    """The address in an ID token received directly from the provider's token endpoint, or None.

    The signature is not checked: OpenID Connect Core 1.0 section 3.1.3.7 (item 6) allows TLS server
    validation in place of the signature for an ID token received directly from the token endpoint over TLS,
    which is the only way this code receives one. The audience and expiry are still checked. Microsoft puts
    the address in `email` when the account has one, else the sign-in name in `preferred_username`."""
    claims = _claims(id_token)
    if claims is None:
        return None
    aud = claims.get("aud")
    if client_id not in (aud if isinstance(aud, list) else [aud]):
        return None
    exp = claims.get("exp")
    if not isinstance(exp, int | float) or exp < now_s - 300:
        return None
    if claims.get("email_verified") is False:
        return None
    email = claims.get("email") or claims.get("preferred_username")
    if not isinstance(email, str) or email.count("@") != 1 or len(email) > 320:
        return None
    return email.strip().lower()


def _claims(token: str) -> dict[str, Any] | None:
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (ValueError, UnicodeDecodeError):
        return None
    return payload if isinstance(payload, dict) else None
