from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.offer.operations import get_offer_profile, save_offer_profile
from outreach_core.offer.schemas import OfferProfile, StoredOfferProfile

ENDPOINTS = (
    Endpoint("GET", "/offer-profile", get_offer_profile, StoredOfferProfile, read_only=True, tag="offer"),
    Endpoint(
        "PUT",
        "/offer-profile",
        save_offer_profile,
        StoredOfferProfile,
        body=OfferProfile,
        idempotent=True,
        destructive=True,  # replaces the whole profile
        tag="offer",
    ),
)
