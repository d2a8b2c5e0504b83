"""Real HTTP servers on loopback for the billing, onboarding and writing tests (aiohttp, in the test's event
loop): an OpenAI-compatible Chat Completions endpoint with scripted answers, a website, and a server that
speaks the parts of Stripe's API the `stripe` provider uses (and sends Stripe-signed webhook events)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qsl

from aiohttp import web

from outreach_core.billing.rules import add_months

_ids = itertools.count(1)


@asynccontextmanager
async def running(app: web.Application) -> AsyncIterator[tuple[str, int]]:
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        await runner.cleanup()


# --- AI ----------------------------------------------------------------------------------------------------


@dataclass
class Slow:
    """An answer that comes after `seconds`."""

    seconds: float
    answer: Any


@dataclass
class FakeAi:
    """A Chat Completions endpoint: each request gets the next scripted answer (`script`), then `default`.
    An answer is a dict (sent as the assistant's JSON content), a str (sent as is), an int (an error status)
    or `Slow`. Requests and their Authorization headers are recorded, with the path they came to."""

    script: list[Any] = field(default_factory=list)
    default: Any = 500
    requests: list[dict[str, Any]] = field(default_factory=list)
    auth: list[str | None] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    refuse_keys: set[str] = field(default_factory=set)
    url: str = ""

    def reset(self, *script: Any, default: Any = 500) -> None:
        self.script, self.default = list(script), default
        self.requests.clear()
        self.auth.clear()
        self.paths.clear()

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(await request.json())
        header = request.headers.get("Authorization")
        self.auth.append(header)
        self.paths.append(request.path)
        if header and header.removeprefix("Bearer ") in self.refuse_keys:
            return web.json_response({"error": {"message": "Incorrect API key provided"}}, status=401)
        answer = self.script.pop(0) if self.script else self.default
        if isinstance(answer, Slow):
            await asyncio.sleep(answer.seconds)
            answer = answer.answer
        if isinstance(answer, int):
            return web.json_response({"error": {"message": "nope"}}, status=answer)
        content = answer if isinstance(answer, str) else json.dumps(answer)
        return web.json_response(
            {
                "id": f"chatcmpl-{next(_ids)}",
                "object": "chat.completion",
                "model": "test-model",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self.handle)
        app.router.add_post("/openai/chat/completions", self.handle)
        app.router.add_post("/google/chat/completions", self.handle)
        return app


# --- a website ---------------------------------------------------------------------------------------------

GOOD_PAGE = """<!doctype html><html><head><title>Acme Analytics | Dashboards for SaaS founders</title>
<meta name="description"
 content="Acme turns your Stripe data into board-ready SaaS dashboards in five minutes.">
<meta property="og:site_name" content="Acme Analytics"></head>
<body><nav><a href="/">Home</a> <a href="/pricing">Pricing</a></nav>
<h1>Board-ready SaaS metrics</h1>
<p>Acme connects to Stripe and builds the MRR, churn and cohort dashboards your investors ask for.</p>
<h2>Why founders use Acme</h2><p>No spreadsheets: metrics stay current. Used by 300 SaaS founders.</p>
<footer>Copyright Acme Analytics</footer></body></html>"""
NOINDEX_PAGE = GOOD_PAGE.replace("<head>", '<head><meta name="robots" content="noindex, nofollow">')
SCRIPT_PAGE = (
    "<!doctype html><html><head></head><body><div id=app></div><script>boot()</script></body></html>"
)


@dataclass
class Website:
    """A company website: `/good`, `/noindex`, `/script-only`, `/big` (5 MB, streamed without a length),
    `/big-declared` (5 MB with its Content-Length), `/image` (a PNG), `/slow` (answers after 30 s),
    `/to-good` (a redirect to /good), `/to-private` (a redirect to 127.0.0.2, a private address),
    `/to-named` (a redirect to a name the test DNS server resolves to 127.0.0.2)."""

    url: str = ""
    port: int = 0
    hits: list[str] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.hits.append(request.path)
        path = request.path
        if path == "/good":
            return web.Response(text=GOOD_PAGE, content_type="text/html")
        if path == "/noindex":
            return web.Response(text=NOINDEX_PAGE, content_type="text/html")
        if path == "/script-only":
            return web.Response(text=SCRIPT_PAGE, content_type="text/html")
        if path == "/image":
            return web.Response(body=b"\x89PNG\r\n\x1a\n" + b"\0" * 100, content_type="image/png")
        if path == "/slow":
            await asyncio.sleep(30)
            return web.Response(text=GOOD_PAGE, content_type="text/html")
        if path == "/to-good":
            raise web.HTTPFound("/good")
        if path == "/to-private":
            raise web.HTTPFound(f"http://127.0.0.2:{self.port}/good")
        if path == "/to-named":
            raise web.HTTPFound(f"http://inside.site.example.com:{self.port}/good")
        if path == "/big-declared":
            return web.Response(body=b"<html><body>" + b"x" * 5_000_000, content_type="text/html")
        if path == "/big":
            response = web.StreamResponse(headers={"Content-Type": "text/html"})
            response.enable_chunked_encoding()
            await response.prepare(request)
            chunk = b"<p>" + b"y" * 65_530 + b"</p>"
            try:
                for _ in range(80):  # about 5 MB
                    await response.write(chunk)
            except (ConnectionResetError, RuntimeError):
                pass  # the client stopped reading, as it should
            return response
        raise web.HTTPNotFound()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self.handle)
        return app


# --- Stripe ------------------------------------------------------------------------------------------------

API_KEY = "sk_test_outreach"
WEBHOOK_SECRET = "whsec_test_outreach"


def stripe_signature(payload: bytes, secret: str = WEBHOOK_SECRET, at: int | None = None) -> str:
    """The `Stripe-Signature` header Stripe sends: `t=<unix>,v1=<HMAC-SHA256 of "<t>.<payload>">`."""
    at = at or int(time.time())
    mac = hmac.new(secret.encode(), f"{at}.".encode() + payload, hashlib.sha256).hexdigest()
    return f"t={at},v1={mac}"


def _nested(form: list[tuple[str, str]]) -> dict[str, Any]:
    """Stripe's form encoding (`items[0][price]=...`) as nested dicts and lists."""
    out: dict[str, Any] = {}
    for key, value in form:
        parts = key.replace("]", "").split("[")
        node: Any = out
        for part, nxt in zip(parts, [*parts[1:], None], strict=True):
            if nxt is None:
                node[part] = value
            else:
                node = node.setdefault(part, {})
    return _lists(out)


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        if value and all(k.isdigit() for k in value):
            return [_lists(value[k]) for k in sorted(value, key=int)]
        return {k: _lists(v) for k, v in value.items()}
    return value


def _missing(what: str) -> web.Response:
    error = {"type": "invalid_request_error", "code": "resource_missing", "message": f"No such {what}"}
    return web.json_response({"error": error}, status=404)


def _period(interval: str) -> tuple[int, int]:
    """A billing period from now, in whole calendar months as Stripe counts them."""
    start = datetime.now(UTC).replace(microsecond=0)
    return int(start.timestamp()), int(add_months(start, 12 if interval == "year" else 1).timestamp())


@dataclass
class FakeStripe:
    """The parts of Stripe's API the provider uses: prices by lookup key, Checkout Sessions, the billing
    portal, customers by email, subscriptions (list, retrieve, update). Every call needs `API_KEY`.
    `complete_checkout` plays the customer paying: it creates the customer and the subscription and
    returns the `customer.subscription.created` event to deliver."""

    url: str = ""
    prices: dict[str, dict[str, Any]] = field(default_factory=dict)
    sessions: dict[str, dict[str, Any]] = field(default_factory=dict)
    customers: dict[str, dict[str, Any]] = field(default_factory=dict)
    subscriptions: dict[str, dict[str, Any]] = field(default_factory=dict)
    calls: list[tuple[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        for plan in ("starter", "growth", "pro", "scale", "agency"):
            for interval in ("month", "year"):
                self._price(f"outreach_{plan}_{interval}", interval)
        for interval in ("month", "year"):
            self._price(f"outreach_dedicated_ip_{interval}", interval)

    def _price(self, lookup_key: str, interval: str) -> None:
        pid = f"price_{next(_ids)}"
        self.prices[pid] = {
            "id": pid, "object": "price", "active": True, "lookup_key": lookup_key, "currency": "usd",
            "recurring": {"interval": interval}, "unit_amount": 100,
        }  # fmt: skip

    async def handle(self, request: web.Request) -> web.Response:
        self.calls.append((request.method, request.path))
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return web.json_response(
                {"error": {"type": "invalid_request_error", "message": "Invalid API Key provided"}},
                status=401,
            )
        form = _nested(parse_qsl(await request.text())) if request.method == "POST" else {}
        query = _nested(list(request.query.items()))
        path = request.path
        if path == "/v1/prices":
            keys = query.get("lookup_keys", [])
            found = [p for p in self.prices.values() if p["lookup_key"] in keys]
            return self._list(found, "/v1/prices")
        if path == "/v1/checkout/sessions":
            sid = f"cs_test_{next(_ids)}"
            self.sessions[sid] = {"id": sid, "object": "checkout.session", "url": f"https://checkout.stripe.test/{sid}",
                                  **form}  # fmt: skip
            return web.json_response(self.sessions[sid])
        if path == "/v1/billing_portal/sessions":
            if form.get("customer") not in self.customers:
                return _missing("customer")
            url = f"https://billing.stripe.test/p/{form['customer']}"
            return web.json_response(
                {"id": f"bps_{next(_ids)}", "object": "billing_portal.session", "url": url}
            )
        if path == "/v1/customers":
            found = [c for c in self.customers.values() if c["email"] == query.get("email")]
            return self._list(found, "/v1/customers")
        if path == "/v1/subscriptions":
            found = [s for s in self.subscriptions.values() if s["customer"] == query.get("customer")]
            return self._list(found, "/v1/subscriptions")
        if path.startswith("/v1/subscriptions/"):
            sub = self.subscriptions.get(path.rsplit("/", 1)[1])
            if sub is None:
                return _missing("subscription")
            if request.method == "POST":
                self._update(sub, form)
            return web.json_response(sub)
        return web.json_response(
            {"error": {"type": "invalid_request_error", "message": "unknown"}}, status=404
        )

    def _list(self, data: list[dict[str, Any]], url: str) -> web.Response:
        return web.json_response({"object": "list", "data": data, "has_more": False, "url": url})

    def _item(self, price_id: str, quantity: int) -> dict[str, Any]:
        start, end = _period(self.prices[price_id]["recurring"]["interval"])
        return {"id": f"si_{next(_ids)}", "object": "subscription_item", "price": self.prices[price_id],
                "quantity": quantity, "current_period_start": start, "current_period_end": end}  # fmt: skip

    def _update(self, sub: dict[str, Any], form: dict[str, Any]) -> None:
        items = sub["items"]["data"]
        for change in form.get("items", []):
            existing = next((i for i in items if i["id"] == change.get("id")), None)
            if existing is not None and change.get("deleted") == "true":
                items.remove(existing)
            elif existing is not None:
                if "price" in change:
                    existing["price"] = self.prices[change["price"]]
                if "quantity" in change:
                    existing["quantity"] = int(change["quantity"])
            else:
                items.append(self._item(change["price"], int(change.get("quantity", 1))))
        if "cancel_at_period_end" in form:
            sub["cancel_at_period_end"] = form["cancel_at_period_end"] == "true"

    def complete_checkout(self, session_id: str, email: str = "payer@example.com") -> dict[str, Any]:
        """The customer paid: a customer and an active subscription exist; the event to deliver."""
        session = self.sessions[session_id]
        customer_id = session.get("customer") or f"cus_{next(_ids)}"
        self.customers.setdefault(customer_id, {"id": customer_id, "object": "customer",
                                                "email": session.get("customer_email", email)})  # fmt: skip
        sub_id = f"sub_{next(_ids)}"
        items = [self._item(li["price"], int(li.get("quantity", 1))) for li in session["line_items"]]
        start, end = items[0]["current_period_start"], items[0]["current_period_end"]
        self.subscriptions[sub_id] = {
            "id": sub_id, "object": "subscription", "customer": customer_id, "status": "active",
            "cancel_at_period_end": False, "created": start, "current_period_start": start,
            "current_period_end": end,
            "metadata": session.get("subscription_data", {}).get("metadata", {}),
            "items": {"object": "list", "data": items},
        }  # fmt: skip
        return self.event("customer.subscription.created", self.subscriptions[sub_id])

    def event(self, kind: str, obj: dict[str, Any], created: int | None = None) -> dict[str, Any]:
        return {
            "id": f"evt_{next(_ids)}", "object": "event", "type": kind,
            "created": created or int(time.time()), "api_version": "2024-06-20", "livemode": False,
            "data": {"object": json.loads(json.dumps(obj))},
        }  # fmt: skip

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self.handle)
        return app
