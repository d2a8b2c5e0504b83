"""The domain core of the outreach service: every operation, once, with no door imported."""
