"""Analytics: a read model over the other domains (overview, campaign stats, analytics and breakdown with A/B
winners, charts and CSV exports), answered from the rollups of `outreach_core.kernel.rollups`
(docs/analytics.md)."""
