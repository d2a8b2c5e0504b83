"""Wire models of the sender's own endpoint: settling a send whose outcome was lost. (The send ledger as a
campaign lead's history, `Send`, is listed by the campaigns domain.)"""

from __future__ import annotations

from pydantic import Field

from outreach_core.campaigns.schemas import CampaignLead, Send
from outreach_core.kernel.wire import WireModel


class ResolveUnknownSendIn(WireModel):
    delivered: bool = Field(
        description="true: the email did arrive (found in the mailbox's Sent folder, or the lead confirmed "
        "it); the send becomes sent and the lead continues with the next step. false: it did not arrive; the "
        "same email is sent again in the lead's next window."
    )


class ResolvedSend(WireModel):
    send: Send
    lead: CampaignLead
