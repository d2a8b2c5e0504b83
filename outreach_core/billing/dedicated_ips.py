"""Dedicated sending IPs of a workspace: included in its plan, bought on top (add-ons), and in use.

`dedicated_ips_in_use` is the one place that counts the dedicated sending-IP proxies serving a workspace
(`outreach ip add --kind dedicated`; a free one is taken for a workspace when one of its mailboxes is routed,
`mailboxes/routes.py`); `min`, the add-ons that cannot be given up while their IPs are in use, follows.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from outreach_core.billing.rules import DEDICATED_IP_PRICE_USD, DEDICATED_IPS_MAX, in_force
from outreach_core.billing.schemas import DedicatedIps
from outreach_core.kernel.context import WorkspaceContext, unscoped
from outreach_core.kernel.db.tables import sending_ips
from outreach_core.kernel.errors import InvalidInput


async def dedicated_ips_in_use(ctx: WorkspaceContext) -> int:
    """Dedicated sending IPs serving the caller's workspace now."""
    ips = unscoped(sending_ips)
    query = ips.select(func.count()).where(
        sending_ips.c.kind == "dedicated", sending_ips.c.dedicated_to == ctx.workspace_id
    )
    return int((await ctx.conn.execute(query)).scalar_one())


async def dedicated_ips_status(ctx: WorkspaceContext, row: Any) -> DedicatedIps:
    """The `dedicatedIps` object of the caller's workspace (`row`: its billing columns)."""
    plan = in_force(row, ctx.now)
    included = plan.dedicated_ips_included if plan else 0
    in_use = await dedicated_ips_in_use(ctx)
    interval = "year" if row.plan_interval == "year" else "month"
    return DedicatedIps(
        included=included,
        addons=int(row.dedicated_ip_addons or 0),
        in_use=in_use,
        min=max(0, in_use - included),
        max=DEDICATED_IPS_MAX,
        price_usd=DEDICATED_IP_PRICE_USD[interval],
        interval=interval,
    )


def check_quantity(status: DedicatedIps, quantity: int) -> None:
    """Refuse with 422 (the bounds in details) a quantity outside `min`..`max`."""
    if not status.min <= quantity <= status.max:
        why = (
            f"{status.in_use} dedicated IPs are in use and the plan includes {status.included}"
            if quantity < status.min
            else f"at most {status.max} add-ons"
        )
        message = f"quantity must be between {status.min} and {status.max} ({why})"
        raise InvalidInput(
            f"Invalid input: quantity: {message}",
            {"fields": [{"path": "quantity", "message": message}], "min": status.min, "max": status.max},
        )
