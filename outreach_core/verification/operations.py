"""Lead verification: queueing leads (`verify_leads`). The worker's side is `pipeline.py`; see
`docs/verification.md` for statuses, reasons, the verifier API protocol and multi-worker safety.
"""

from __future__ import annotations

from outreach_core.billing.plan import require_active_plan
from outreach_core.kernel.context import WorkspaceContext, scoped
from outreach_core.kernel.db.tables import leads
from outreach_core.targets.schemas import TargetIn
from outreach_core.targets.selection import target_ids
from outreach_core.verification.rules import verifier_enabled
from outreach_core.verification.schemas import VerifyQueued


async def verify_leads(ctx: WorkspaceContext, body: TargetIn) -> VerifyQueued:
    """Queue the targeted leads for email verification; results arrive in the background.

    `target` picks the leads: exactly one of `{"ids": [...]}`, `{"listId": "..."}`,
    `{"filter": {<list_leads filters>}}` or `{"all": true}`. Each picked lead becomes `verifying` at once;
    a worker then checks the syntax, the domain's mail server (MX), disposable domains and role accounts
    (info@, sales@ ...), and, when `api` is true, asks the configured verifier API, which can also detect
    catch-all domains. Poll `list_leads` (filter `verify`) or `get_lead` for `verifyStatus` (valid, risky,
    invalid, catch_all, unknown) and `verifyReason`. Leads already verifying are queued again.

    Returns `queued` (leads now verifying) and `api` (false when only local checks run because no verifier
    API is configured). Needs an active plan.
    """
    await require_active_plan(ctx)
    api = verifier_enabled(ctx.settings.verifier_url)
    lead_table = scoped(ctx, leads)
    result = await ctx.conn.execute(
        lead_table.update()
        .where(leads.c.id.in_(target_ids(ctx, body.target)))
        .values(verify_status="verifying", verify_reason=None, verify_api=api)
    )
    return VerifyQueued(queued=max(result.rowcount, 0), api=api)
