from __future__ import annotations

from outreach_core.analytics.charts import analytics_chart, breakdown_chart, overview_chart, series_chart
from outreach_core.analytics.exports import export_campaign_leads, leads_csv, overview_csv
from outreach_core.analytics.operations import (
    get_analytics_overview,
    get_campaign_analytics,
    get_campaign_breakdown,
    get_campaign_stats,
)
from outreach_core.analytics.schemas import (
    Breakdown,
    BreakdownQuery,
    CampaignAnalytics,
    CampaignAnalyticsQuery,
    CampaignLeadExport,
    CampaignStats,
    Overview,
    OverviewQuery,
    StatsQuery,
)
from outreach_core.kernel.endpoint import Endpoint, FileRoute

OVERVIEW = Endpoint(
    "GET",
    "/analytics/overview",
    get_analytics_overview,
    Overview,
    query=OverviewQuery,
    read_only=True,
    image=overview_chart,
    tag="analytics",
)
STATS = Endpoint(
    "GET",
    "/campaigns/stats",
    get_campaign_stats,
    CampaignStats,
    query=StatsQuery,
    read_only=True,
    image=series_chart,
    tag="analytics",
)
LEADS_EXPORT = Endpoint(
    "GET",
    "/campaigns/{id}/leads.csv",
    export_campaign_leads,
    CampaignLeadExport,
    tool=False,
    read_only=True,
    tag="analytics",
)

ENDPOINTS = (
    OVERVIEW,
    STATS,
    Endpoint(
        "GET",
        "/campaigns/analytics",
        get_campaign_analytics,
        CampaignAnalytics,
        query=CampaignAnalyticsQuery,
        read_only=True,
        image=analytics_chart,
        tag="analytics",
    ),
    Endpoint(
        "GET",
        "/campaigns/{id}/breakdown",
        get_campaign_breakdown,
        Breakdown,
        query=BreakdownQuery,
        read_only=True,
        image=breakdown_chart,
        tag="analytics",
    ),
)

FILES = (
    FileRoute(
        "/analytics/overview.png",
        OVERVIEW,
        "image/png",
        lambda a: [overview_chart(a)],
        summary="The overview as a PNG chart (800 x 800): the day lines above the reply heatmap.",
    ),
    FileRoute(
        "/campaigns/stats.png",
        STATS,
        "image/png",
        lambda a: [series_chart(a)],
        summary="Campaign stats as a PNG line chart (800 x 400) of sent, replied, positive, bounced by day.",
    ),
    FileRoute(
        "/analytics/overview.csv",
        OVERVIEW,
        "text/csv; charset=utf-8",
        overview_csv,
        "overview.csv",
        summary="The overview's days as CSV: date, sent, replied, positive, bounced, opened.",
    ),
    FileRoute(
        "/campaigns/{id}/leads.csv",
        LEADS_EXPORT,
        "text/csv; charset=utf-8",
        leads_csv,
        "leads.csv",
        summary="A campaign's leads as CSV, with their status, emails sent and last send.",
    ),
)
