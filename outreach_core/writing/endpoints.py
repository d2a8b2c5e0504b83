from __future__ import annotations

from outreach_core.kernel.endpoint import Endpoint
from outreach_core.writing.operations import write_sequence
from outreach_core.writing.prepare import prepare_write_sequence
from outreach_core.writing.schemas import WriteIn, WriteResult

ENDPOINTS = (
    Endpoint(
        "POST",
        "/campaigns/{id}/write",
        write_sequence,
        WriteResult,
        body=WriteIn,
        prepare=prepare_write_sequence,
        open_world=True,
        tag="campaigns",
    ),
)
