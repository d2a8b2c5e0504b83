"""`ports.BillingProvider` for `OUTREACH_BILLING=stripe`, on the official `stripe` library (async calls).

Prices are found by their lookup keys, so nothing but the keys needs configuring here: in Stripe, give the
recurring prices the lookup keys `outreach_<plan>_<interval>` (`outreach_growth_month`,
`outreach_pro_year` ...) and `outreach_dedicated_ip_<interval>` for the dedicated IP add-on
(docs/billing.md). A subscription carries the workspace's id in its metadata; its plan is the lookup key
of its plan item, its add-ons the quantity of its add-on item.

Used: Checkout Sessions (subscription mode), the Customer Portal, Prices (by lookup key), Customers (by
email, for `sync_billing` before any webhook arrived), Subscriptions (list, retrieve, update), and webhook
signature verification (`stripe.Webhook.construct_event`). `OUTREACH_STRIPE_API_BASE` points the library at
another API host (the tests' local server speaking these parts of Stripe's API).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import stripe

from outreach_core.billing.rules import PLANS
from outreach_core.kernel.ports import BillingEvent, BillingProviderError, Subscription
from outreach_core.kernel.settings import Settings

PREFIX = "outreach_"
ADDON = "outreach_dedicated_ip_"
SUBSCRIPTION_EVENTS = (
    "customer.subscription.created",
    "customer.subscription.updated",
    "customer.subscription.deleted",
    "customer.subscription.paused",
    "customer.subscription.resumed",
)


def plan_lookup_key(plan: str, interval: str) -> str:
    return f"{PREFIX}{plan}_{interval}"


class StripeBilling:
    def __init__(
        self, api_key: str, webhook_secret: str | None, *, api_base: str | None = None, timeout_s: float = 20
    ) -> None:
        self._webhook_secret = webhook_secret
        self._http = stripe.HTTPXClient(timeout=timeout_s)
        self._client = stripe.StripeClient(
            api_key,
            base_addresses={"api": api_base} if api_base else None,
            http_client=self._http,
            max_network_retries=1,
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> StripeBilling | None:
        """The provider when `OUTREACH_BILLING=stripe` and a key is set; None otherwise."""
        if settings.billing != "stripe" or not settings.stripe_api_key:
            return None
        return cls(
            settings.stripe_api_key,
            settings.stripe_webhook_secret,
            api_base=settings.stripe_api_base,
            timeout_s=settings.stripe_timeout_s,
        )

    async def aclose(self) -> None:
        await self._http.close_async()  # type: ignore[no-untyped-call]

    # --- the port ----------------------------------------------------------------------------------------

    async def checkout(
        self,
        *,
        workspace_id: str,
        payer_id: str,
        email: str,
        customer_id: str | None,
        plan: str,
        interval: str,
        success_url: str,
        cancel_url: str,
    ) -> str:
        metadata = {"workspace_id": workspace_id, "payer_id": payer_id}
        params: dict[str, Any] = {
            "mode": "subscription",
            "line_items": [{"price": await self._price(plan_lookup_key(plan, interval)), "quantity": 1}],
            "success_url": success_url,
            "cancel_url": cancel_url,
            "client_reference_id": workspace_id,
            "metadata": metadata,
            "subscription_data": {"metadata": metadata},
        }
        if customer_id:
            params["customer"] = customer_id
        elif email:
            params["customer_email"] = email
        session = await self._call(self._client.v1.checkout.sessions.create_async(params=params))  # type: ignore[arg-type]
        url = session.to_dict().get("url")
        if not isinstance(url, str):
            raise BillingProviderError("Stripe returned no checkout page")
        return url

    async def change_plan(self, *, subscription_id: str, plan: str, interval: str) -> Subscription:
        current = await self._retrieve(subscription_id)
        item = next((i for i in _items(current) if _plan_of(i) is not None), None)
        price = await self._price(plan_lookup_key(plan, interval))
        items = [{"id": item["id"], "price": price}] if item else [{"price": price, "quantity": 1}]
        updated = await self._call(
            self._client.v1.subscriptions.update_async(
                subscription_id,
                params={"items": items, "proration_behavior": "create_prorations"},  # type: ignore[arg-type]
            )
        )
        return subscription_of(updated.to_dict())

    async def portal(self, *, customer_id: str, return_url: str) -> str:
        params = {"customer": customer_id, "return_url": return_url}
        session = await self._call(self._client.v1.billing_portal.sessions.create_async(params=params))  # type: ignore[arg-type]
        url = session.to_dict().get("url")
        if not isinstance(url, str):
            raise BillingProviderError("Stripe returned no portal page")
        return url

    async def find(self, *, workspace_id: str, customer_id: str | None, email: str) -> Subscription | None:
        customers = [customer_id] if customer_id else []
        if not customers and email:
            found = await self._call(
                self._client.v1.customers.list_async(params={"email": email, "limit": 10})
            )
            customers = [c["id"] for c in found.to_dict().get("data", [])]
        best: dict[str, Any] | None = None
        for customer in customers:
            page = await self._call(
                self._client.v1.subscriptions.list_async(
                    params={"customer": customer, "status": "all", "limit": 20}
                )
            )
            for sub in page.to_dict().get("data", []):
                mine = (sub.get("metadata") or {}).get("workspace_id") == workspace_id
                if (mine or customer_id) and (best is None or sub.get("created", 0) > best.get("created", 0)):
                    best = sub
        return subscription_of(best) if best is not None else None

    async def set_dedicated_ips(self, *, subscription_id: str, quantity: int, interval: str) -> Subscription:
        current = await self._retrieve(subscription_id)
        item = next((i for i in _items(current) if _lookup_key(i).startswith(ADDON)), None)
        if item is not None and quantity == 0:
            items: list[dict[str, Any]] = [{"id": item["id"], "deleted": True}]
        elif item is not None:
            items = [{"id": item["id"], "quantity": quantity}]
        elif quantity > 0:
            items = [{"price": await self._price(f"{ADDON}{interval}"), "quantity": quantity}]
        else:
            return subscription_of(current)
        updated = await self._call(
            self._client.v1.subscriptions.update_async(
                subscription_id,
                params={"items": items, "proration_behavior": "create_prorations"},  # type: ignore[arg-type]
            )
        )
        return subscription_of(updated.to_dict())

    def read_event(self, payload: bytes, signature: str | None) -> BillingEvent:
        if not self._webhook_secret:
            raise BillingProviderError("OUTREACH_STRIPE_WEBHOOK_SECRET is not set: events cannot be verified")
        try:
            event = stripe.Webhook.construct_event(payload, signature or "", self._webhook_secret)
        except (ValueError, stripe.SignatureVerificationError):
            raise BillingProviderError("the event's signature does not verify") from None
        data = event.to_dict()
        kind = str(data.get("type", ""))
        created = datetime.fromtimestamp(int(data.get("created", 0)), UTC)
        obj = (data.get("data") or {}).get("object") or {}
        sub = subscription_of(obj, event_at=created) if kind in SUBSCRIPTION_EVENTS else None
        return BillingEvent(id=str(data.get("id", "")), kind=kind, subscription=sub)

    # --- helpers -----------------------------------------------------------------------------------------

    async def _price(self, lookup_key: str) -> str:
        found = await self._call(
            self._client.v1.prices.list_async(
                params={"lookup_keys": [lookup_key], "active": True, "limit": 1}
            )
        )
        data = found.to_dict().get("data") or []
        if not data:
            raise BillingProviderError(f"Stripe has no active price with the lookup key {lookup_key}")
        return str(data[0]["id"])

    async def _retrieve(self, subscription_id: str) -> dict[str, Any]:
        sub = await self._call(self._client.v1.subscriptions.retrieve_async(subscription_id))
        return sub.to_dict()  # type: ignore[no-any-return]

    @staticmethod
    async def _call(pending: Any) -> Any:
        try:
            return await pending
        except stripe.AuthenticationError:
            raise BillingProviderError("Stripe refused the API key") from None
        except stripe.InvalidRequestError as exc:
            raise BillingProviderError(
                f"Stripe refused the request ({exc.code or 'invalid request'})"
            ) from None
        except stripe.APIConnectionError:
            raise BillingProviderError("Stripe did not answer") from None
        except stripe.StripeError as exc:
            raise BillingProviderError(f"Stripe failed ({type(exc).__name__})") from None


def _items(sub: dict[str, Any]) -> list[dict[str, Any]]:
    items = (sub.get("items") or {}).get("data") or []
    return [i for i in items if isinstance(i, dict)]


def _lookup_key(item: dict[str, Any]) -> str:
    return str((item.get("price") or {}).get("lookup_key") or "")


def _plan_of(item: dict[str, Any]) -> tuple[str, str] | None:
    key = _lookup_key(item)
    if not key.startswith(PREFIX) or key.startswith(ADDON):
        return None
    plan, _, interval = key[len(PREFIX) :].rpartition("_")
    return (plan, interval) if plan in PLANS and interval in ("month", "year") else None


def _time(value: Any) -> datetime | None:
    return datetime.fromtimestamp(int(value), UTC) if isinstance(value, int | float) and value else None


def subscription_of(obj: dict[str, Any], *, event_at: datetime | None = None) -> Subscription:
    """Our view of a Stripe subscription object (periods read from the subscription or, in newer API
    versions, from its items)."""
    items = _items(obj)
    plan_item = next((i for i in items if _plan_of(i) is not None), None)
    found = _plan_of(plan_item) if plan_item else None
    plan, interval = found if found is not None else (None, None)
    addons = sum(int(i.get("quantity") or 0) for i in items if _lookup_key(i).startswith(ADDON))
    source = plan_item or {}
    start = obj.get("current_period_start") or source.get("current_period_start")
    end = obj.get("current_period_end") or source.get("current_period_end")
    customer = obj.get("customer")
    metadata = obj.get("metadata") or {}
    return Subscription(
        customer_id=str(customer.get("id") if isinstance(customer, dict) else customer or ""),
        subscription_id=str(obj.get("id")) if obj.get("id") else None,
        workspace_id=metadata.get("workspace_id"),
        plan=plan,
        interval=interval,
        status=str(obj.get("status")) if obj.get("status") else None,
        period_start=_time(start),
        period_end=_time(end),
        cancel_at_period_end=bool(obj.get("cancel_at_period_end")),
        dedicated_ip_addons=addons,
        payer_id=metadata.get("payer_id"),
        event_at=event_at,
    )
