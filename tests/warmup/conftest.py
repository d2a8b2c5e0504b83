"""Fixtures of the warmup tests: an empty pool before each test, and the delivery bridge on the STARTTLS
test SMTP server (removed afterwards: the servers are shared by the session)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from outreach_core.kernel.runtime import Runtime
from tests.mail_servers import MailServers
from tests.warmup.helpers import Bridge, clear_pool


@pytest.fixture(autouse=True)
async def empty_pool(runtime: Runtime) -> AsyncIterator[None]:
    await clear_pool(runtime)
    yield
    await clear_pool(runtime)


@pytest.fixture
def bridge(mail_servers: MailServers) -> Iterator[Bridge]:
    server = mail_servers.smtp["starttls"]
    found = Bridge(mail_servers)
    before, server.on_message = server.on_message, found
    rcpt_before = server.rcpt_reply
    yield found
    server.on_message = before
    server.rcpt_reply = rcpt_before
