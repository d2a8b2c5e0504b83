"""Fixtures for the inbox worker tests: the session database with the real IMAP adapter pointed at the test
Dovecot (trusting the test CA, loopback allowed), mailboxes on it, and an IMAP client for the other side."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from outreach_app.adapters import ImapInboxConnector
from outreach_app.adapters.oauth import AuthlibOAuthClient
from outreach_core.kernel.ports import Ports
from outreach_core.kernel.runtime import Runtime
from tests.inbox_worker.helpers import Recorder, Workers
from tests.mail_servers import MailServers


def inbox_runtime(runtime: Runtime, *, timeout_s: float = 5.0, **settings: Any) -> Runtime:
    """A runtime on the session database whose `ports.inbox` is the real adapter; `settings` override."""
    values = {"inbox_poll_s": 30.0, "inbox_timeout_s": timeout_s, "inbox_lease_s": 20.0, **settings}
    configured = runtime.settings.model_copy(update=values)
    connector = ImapInboxConnector(
        tls_ca_file=configured.tls_ca_file, timeout_s=timeout_s, allow_private=True
    )
    oauth = AuthlibOAuthClient.from_settings(configured)  # OAuth mailboxes' refreshes (issue 32)
    return Runtime(configured, engine=runtime.engine, ports=Ports(inbox=connector, oauth=oauth))


@pytest.fixture
def make_runtime(runtime: Runtime, mail_servers: MailServers) -> Callable[..., Runtime]:
    def make(**settings: Any) -> Runtime:
        return inbox_runtime(runtime, **settings)

    return make


@pytest.fixture
async def workers() -> AsyncIterator[Workers]:
    """Supervisors started by a test; every one still running is stopped at the end."""
    found = Workers()
    yield found
    await found.stop_all()


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()
