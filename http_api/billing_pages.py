"""Billing pages outside the API: the `local` provider's checkout and portal pages, the page payment
providers send people back to, and the Stripe webhook (docs/billing.md).

- `GET /billing/local/checkout/{token}` shows the plan a checkout link is for; `POST` (its button) records
  it. `GET /billing/local/portal/{token}` shows the plan with a form to change it, cancel it at the end of
  the period or keep it renewing; `POST` does that. A GET never changes anything. A forged, altered or
  expired link gets a 404 page.
- `GET /billing/done` is where Stripe's checkout and portal send the person back.
- `POST /billing/stripe/webhook` takes Stripe's events, verified with its signature (`Stripe-Signature`);
  a bad signature gets 400 and changes nothing.
"""

from __future__ import annotations

import html
from urllib.parse import parse_qs

import structlog
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from outreach_core.billing.local import (
    CHECKOUT_PATH,
    PORTAL_PATH,
    LocalBillingPage,
    PortalAction,
    confirm_local_plan,
    describe_local_billing,
    local_portal_action,
    read_link,
)
from outreach_core.billing.prepare import DONE_PATH
from outreach_core.billing.rules import PLANS, Interval
from outreach_core.billing.schemas import BillingSummary
from outreach_core.billing.subscription import apply_billing_event
from outreach_core.kernel.errors import NotFound, OutreachError
from outreach_core.kernel.ports import BillingProviderError
from outreach_core.kernel.runtime import Runtime

WEBHOOK_PATH = "/billing/stripe/webhook"
MAX_FORM_BYTES = 4096
_log = structlog.get_logger(__name__)
_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"
    ),
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
}


def billing_routes(runtime: Runtime) -> list[Route]:
    """The routes above, to mount at the root of the app."""

    async def checkout(request: Request) -> Response:
        now = runtime.ports.clock.now()
        try:
            link = read_link(runtime.settings, "checkout", request.path_params["token"], now)
            assert link.plan is not None
            plan = PLANS[link.plan]
            if request.method == "POST":
                done = await runtime.execute(link.principal, confirm_local_plan, link.plan, link.interval)
                return _page("Plan recorded", _recorded(done))
            state = await runtime.read(link.principal, describe_local_billing)
        except NotFound:
            return _page("Link not valid", "<p>This billing link is not valid or has expired.</p>", 404)
        except OutreachError as err:
            return _page("Not recorded", f"<p>{html.escape(err.message)}</p>", err.status)
        price = f"${plan.price(link.interval):,} a {link.interval}"
        return _page(
            "Confirm the plan",
            f"<p>Workspace: <strong>{html.escape(state.workspace_name)}</strong></p>"
            f"<p>Plan: <strong>{plan.name}</strong>, billed every {link.interval} ({price}; this server "
            "takes no payment: its billing is local).</p>"
            f"{_current(state)}"
            '<form method="post"><button type="submit">Record this plan</button></form>',
        )

    async def portal(request: Request) -> Response:
        now = runtime.ports.clock.now()
        try:
            link = read_link(runtime.settings, "portal", request.path_params["token"], now)
            if request.method == "POST":
                form = await _form(request)
                action: PortalAction
                if form.get("action") == "change":
                    action = "change"
                elif form.get("action") in ("cancel", "resume"):
                    action = "cancel" if form.get("action") == "cancel" else "resume"
                else:
                    return _page("Not recorded", "<p>Choose change, cancel or resume.</p>", 422)
                interval: Interval = "year" if form.get("interval") == "year" else "month"
                done = await runtime.execute(
                    link.principal, local_portal_action, action, form.get("plan") or None, interval
                )
                return _page("Billing updated", _recorded(done))
            state = await runtime.read(link.principal, describe_local_billing)
        except NotFound:
            return _page("Link not valid", "<p>This billing link is not valid or has expired.</p>", 404)
        except OutreachError as err:
            return _page("Not recorded", f"<p>{html.escape(err.message)}</p>", err.status)
        options = "".join(f'<option value="{p.id}">{p.name}</option>' for p in PLANS.values())
        cancel = (
            '<button type="submit" name="action" value="resume">Keep renewing</button>'
            if state.cancel_at_period_end
            else '<button type="submit" name="action" value="cancel">Cancel at the end of the period</button>'
        )
        return _page(
            "Billing",
            f"<p>Workspace: <strong>{html.escape(state.workspace_name)}</strong></p>{_current(state)}"
            f'<form method="post"><label>Plan <select name="plan">{options}</select></label> '
            '<label>Billed every <select name="interval"><option value="month">month</option>'
            '<option value="year">year</option></select></label> '
            '<button type="submit" name="action" value="change">Change plan</button></form>'
            f'<form method="post">{cancel}</form>',
        )

    async def done(request: Request) -> Response:
        canceled = request.query_params.get("outcome") == "canceled"
        return _page(
            "Checkout left" if canceled else "Thank you",
            "<p>Nothing was changed.</p>"
            if canceled
            else "<p>Your billing is updated; it shows in GET /api/v1/billing within a minute. You can close "
            "this page.</p>",
        )

    async def stripe_webhook(request: Request) -> Response:
        provider = runtime.ports.billing
        if runtime.settings.billing != "stripe" or provider is None:
            return JSONResponse({"error": {"code": "not_found", "message": "route not found"}}, 404)
        payload = await request.body()
        try:
            event = provider.read_event(payload, request.headers.get("stripe-signature"))
        except BillingProviderError as exc:
            _log.warning("billing_webhook_refused", reason=exc.reason)
            return JSONResponse({"error": {"code": "invalid_signature", "message": exc.reason}}, 400)
        applied = await runtime.system(apply_billing_event, event)
        return JSONResponse({"received": True, "applied": applied})

    return [
        Route(CHECKOUT_PATH + "{token}", checkout, methods=["GET", "POST"]),
        Route(PORTAL_PATH + "{token}", portal, methods=["GET", "POST"]),
        Route(DONE_PATH, done, methods=["GET"]),
        Route(WEBHOOK_PATH, stripe_webhook, methods=["POST"]),
    ]


async def _form(request: Request) -> dict[str, str]:
    raw = (await request.body())[:MAX_FORM_BYTES].decode("utf-8", "replace")
    return {k: v[0] for k, v in parse_qs(raw).items() if v}


def _current(state: LocalBillingPage) -> str:
    if state.plan_name is None:
        return "<p>The workspace has no plan yet.</p>"
    ends = f"; ends {state.renews_at:%Y-%m-%d}" if state.cancel_at_period_end and state.renews_at else ""
    renews = f"; renews {state.renews_at:%Y-%m-%d}" if state.renews_at and not ends else ""
    return f"<p>Now: {state.plan_name}, every {state.interval}, {state.status}{renews}{ends}.</p>"


def _recorded(done: BillingSummary) -> str:
    ends = " It ends at the end of the period." if done.cancel_at_period_end else ""
    return (
        f"<p>The workspace is on the {html.escape(done.plan_name or 'no')} plan, billed every "
        f"{done.interval}.{ends} You can close this page.</p>"
    )


def _page(title: str, body: str, status: int = 200) -> Response:
    document = (
        '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n</head>\n<body>\n<main><h1>{html.escape(title)}</h1>\n{body}"
        "</main>\n</body>\n</html>\n"
    )
    return HTMLResponse(document, status_code=status, headers=_HEADERS)
