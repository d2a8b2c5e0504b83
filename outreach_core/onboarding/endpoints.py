from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.kernel.wire import Ok
from outreach_core.onboarding.operations import create_workspace, draft_offer, save_onboarding
from outreach_core.onboarding.prepare import prepare_draft_offer
from outreach_core.onboarding.schemas import (
    CreatedWorkspace,
    CreateWorkspaceIn,
    DraftOfferIn,
    OfferDraft,
    SaveOnboardingIn,
)

ENDPOINTS = (
    Endpoint(
        "POST",
        "/onboarding/createWorkspace",
        create_workspace,
        CreatedWorkspace,
        body=CreateWorkspaceIn,
        tag="onboarding",
    ),
    Endpoint(
        "POST",
        "/onboarding/save",
        save_onboarding,
        Ok,
        body=SaveOnboardingIn,
        idempotent=True,
        role="admin",
        tag="onboarding",
        destructive=True,
    ),
    Endpoint(
        "POST",
        "/onboarding/draftOffer",
        draft_offer,
        OfferDraft,
        body=DraftOfferIn,
        prepare=prepare_draft_offer,
        open_world=True,
        tag="onboarding",
    ),
)
