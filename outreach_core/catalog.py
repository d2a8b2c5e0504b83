"""The catalogue of public operations: every domain's endpoints, one entry per route and MCP tool.

The doors build their routes and tools from `all_endpoints()`, the OpenAPI document is generated from it,
and the parity test calls every tool and its route. It sits above every domain and nothing in the core
imports it; what an entry is (`Endpoint`) is defined in `outreach_core.kernel.endpoint`.
"""

from __future__ import annotations

from outreach_core.ai.endpoints import ENDPOINTS as ai
from outreach_core.analytics.endpoints import ENDPOINTS as analytics
from outreach_core.analytics.endpoints import FILES as analytics_files
from outreach_core.api_keys.endpoints import ENDPOINTS as api_keys
from outreach_core.billing.endpoints import ENDPOINTS as billing
from outreach_core.campaigns.endpoints import ENDPOINTS as campaigns
from outreach_core.deliverability.endpoints import ENDPOINTS as deliverability
from outreach_core.imports.endpoints import ENDPOINTS as imports
from outreach_core.inbox.endpoints import ENDPOINTS as inbox
from outreach_core.kernel.endpoint import AnyEndpoint, FileRoute
from outreach_core.labels.endpoints import ENDPOINTS as labels
from outreach_core.leads.endpoints import ENDPOINTS as leads
from outreach_core.link_domain.endpoints import ENDPOINTS as link_domain
from outreach_core.lists.endpoints import ENDPOINTS as lists
from outreach_core.mailboxes.endpoints import ENDPOINTS as mailboxes
from outreach_core.oauth.endpoints import ENDPOINTS as oauth
from outreach_core.offer.endpoints import ENDPOINTS as offer
from outreach_core.onboarding.endpoints import ENDPOINTS as onboarding
from outreach_core.sending.endpoints import ENDPOINTS as sending
from outreach_core.suppressions.endpoints import ENDPOINTS as suppressions
from outreach_core.verification.endpoints import ENDPOINTS as verification
from outreach_core.webhooks.endpoints import ENDPOINTS as webhooks
from outreach_core.workspace.endpoints import ENDPOINTS as workspace
from outreach_core.writing.endpoints import ENDPOINTS as writing


def all_endpoints() -> list[AnyEndpoint]:
    """Every endpoint of every domain, in a stable order (routes are matched in this order: a fixed path
    such as `/leads/imports` comes before `/leads/{id}`)."""
    return [
        *workspace,
        *ai,
        *billing,
        *onboarding,
        *offer,
        *api_keys,
        *oauth,
        *imports,
        *leads,
        *verification,
        *lists,
        *labels,
        *suppressions,
        *writing,
        *analytics,  # before campaigns: `/campaigns/stats` is no `/campaigns/{id}`
        *campaigns,
        *sending,
        *mailboxes,
        *deliverability,
        *link_domain,
        *inbox,
        *webhooks,
    ]


def all_files() -> list[FileRoute]:
    """Every file route (PNG charts, CSV exports) the REST door serves from an endpoint's answer."""
    return [*analytics_files]
