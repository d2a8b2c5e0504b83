"""The error hierarchy. Every refusal the service makes is one of these, with a stable `code`.

Doors map `status` to the HTTP status and serialize `{"error": {"code", "message", "details"}}`; MCP tools
return the same object as an error result. Nothing outside this hierarchy ever reaches a caller: anything
else becomes `internal` with a reference id.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar


class OutreachError(Exception):
    """Base of every expected failure."""

    status: ClassVar[int] = 400
    code: ClassVar[str] = "bad_request"

    def __init__(self, message: str, details: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = details or {}

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, "details": self.details}}


class BadRequest(OutreachError):
    status = 400
    code = "bad_request"


class Unauthorized(OutreachError):
    status = 401
    code = "unauthorized"


class PlanRequired(OutreachError):
    status = 402
    code = "plan_required"

    def __init__(
        self, message: str = "This operation needs an active plan.", details: dict[str, Any] | None = None
    ):
        super().__init__(message, details)


class Forbidden(OutreachError):
    status = 403
    code = "forbidden"

    @classmethod
    def needs(cls, required: Sequence[str], role: str, message: str | None = None) -> Forbidden:
        """The refusal of a caller of role `role` where one of `required` is needed (`details.required`
        lists them, highest first)."""
        return cls(
            message or f"This needs the {' or '.join(required)} role; you are {role}.",
            {"required": list(required), "role": role},
        )


class NotFound(OutreachError):
    status = 404
    code = "not_found"

    def __init__(self, what: str, ident: str | None = None):
        super().__init__(f"{what} not found", {"id": ident} if ident is not None else {})

    def at(self, path: str) -> NotFound:
        """The same error, saying where in the body the id was given (`details.path`)."""
        self.details["path"] = path
        self.message += f" ({path}; leave the id out for a new one)" if path.endswith(".id") else f" ({path})"
        return self


class MethodNotAllowed(OutreachError):
    status = 405
    code = "method_not_allowed"


class Conflict(OutreachError):
    status = 409
    code = "conflict"


class InvalidState(OutreachError):
    status = 409
    code = "invalid_state"


class LaunchBlocked(InvalidState):
    """Launching while a required launch checklist item fails; `details.items` = the failing items."""

    code = "launch_blocked"


class DeliveryFailed(InvalidState):
    """The mailbox's SMTP server did not take an email sent at the caller's request (a thread reply);
    nothing was recorded."""

    code = "delivery_failed"


class BillingUnavailable(InvalidState):
    """The payment provider refused or did not answer (or Stripe billing is on but not configured);
    nothing was changed."""

    code = "billing_unavailable"


class AiUnavailable(InvalidState):
    """No AI to write with: the server has no AI endpoint and the workspace no AI key of its own."""

    code = "ai_unavailable"


class WebUnavailable(InvalidState):
    """This server cannot fetch websites."""

    code = "web_unavailable"


class OAuthProviderNotConfigured(InvalidState):
    """Google or Microsoft mailboxes over OAuth are not configured on this server (the operator sets the
    provider's client id and secret: docs/mailboxes.md "OAuth")."""

    code = "oauth_provider_not_configured"


class OAuthUnavailable(InvalidState):
    """The token endpoint of an OAuth mailbox's provider did not answer usably (5xx, timeout): nothing was
    tested or changed; try again later."""

    code = "oauth_unavailable"


class OfferProfileRequired(InvalidState):
    """Writing with AI needs a saved offer profile first."""

    code = "offer_profile_required"


class ConfirmationRequired(OutreachError):
    """An MCP tool that asks the person to confirm was called by a client that cannot ask."""

    status = 409
    code = "confirmation_required"


class Declined(OutreachError):
    """The person declined (or cancelled) the confirmation; nothing was changed."""

    status = 409
    code = "declined"


class PayloadTooLarge(OutreachError):
    status = 413
    code = "payload_too_large"


class InvalidInput(OutreachError):
    status = 422
    code = "invalid_input"

    @classmethod
    def field(cls, path: str, message: str) -> InvalidInput:
        return cls(message, {"fields": [{"path": path, "message": message}]})


class RateLimited(OutreachError):
    status = 429
    code = "rate_limited"

    def __init__(self, retry_after_s: int, message: str = "Too many requests; slow down."):
        super().__init__(message, {"retryAfter": retry_after_s})
        self.retry_after_s = retry_after_s


class QuotaExceeded(OutreachError):
    """A plan's limit is reached. `retry_after_s`, when the limit resets with time (a monthly allowance),
    becomes the `Retry-After` header; limits that only a change frees (contacts, mailbox slots) have none."""

    status = 429
    code = "quota_exceeded"

    def __init__(
        self, message: str, details: dict[str, Any] | None = None, *, retry_after_s: int | None = None
    ) -> None:
        super().__init__(message, details)
        self.retry_after_s = retry_after_s


class Internal(OutreachError):
    """Never raised for expected failures; doors build it from an unexpected exception."""

    status = 500
    code = "internal"

    def __init__(self, reference: str):
        super().__init__("Internal error. Quote the reference when reporting it.", {"reference": reference})


def invalid_input_from_pydantic(errors: list[Any], *, prefix: str = "") -> InvalidInput:
    """Turn pydantic's error list into `invalid_input` with dotted field paths (values are not echoed)."""
    fields = []
    for err in errors:
        loc = [str(p) for p in err.get("loc", ())]  # a field may be called `body` (a variant's, a reply's)
        path = ".".join(([prefix] if prefix else []) + loc) or "(root)"
        fields.append({"path": path, "message": str(err.get("msg", "invalid"))})
    summary = "; ".join(f"{f['path']}: {f['message']}" for f in fields[:5])
    return InvalidInput(f"Invalid input: {summary}", {"fields": fields})
