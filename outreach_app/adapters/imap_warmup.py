"""`ports.WarmupMail`: the receiving side of warmup over IMAP (docs/warmup.md).

One connection per look, made like the login test's (`mail_login.py`: a checked address, implicit TLS or
STARTTLS, certificates verified, the whole exchange bounded by `timeout_s`). In INBOX and then the junk
folder (SPECIAL-USE `\\Junk`, else the usual names): `UID SEARCH HEADER X-Outreach-Warmup "wu1-"`, the
header of each match fetched (`BODY.PEEK[HEADER.FIELDS (X-Outreach-Warmup)]`) and its token compared with
the ones asked for; the warmup emails asked for are flagged `\\Seen \\Flagged` (read, and important where the
server shows flagged mail as such), and those in junk are then moved to INBOX (`UID MOVE`, else `UID COPY`
and `\\Deleted` plus `EXPUNGE`). Messages that are not ours are never touched. Failures come back as short
fixed phrases (never an exception's text or the password).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Sequence
from typing import Any, Literal

import structlog

from outreach_app.adapters import imap_parse as parse
from outreach_app.adapters.mail_client import GuardedMailClient
from outreach_app.adapters.mail_login import imap_login, imap_starttls
from outreach_app.adapters.smtp import connection_problem
from outreach_app.outgoing import NotContacted, SocketIMAP4
from outreach_core.kernel.ports import MailServer, Tended
from outreach_core.kernel.settings import Settings
from outreach_core.warmup.rules import HEADER, TOKEN_PREFIX, header_token

_log = structlog.get_logger()


class _Refused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ImapWarmupTender(GuardedMailClient):
    """`ports.WarmupMail` over aioimaplib (see the module docstring)."""

    default_timeout_s = 30.0

    @classmethod
    def timeout_from(cls, settings: Settings) -> float:
        return max(settings.inbox_timeout_s, 20.0)

    async def tend(self, server: MailServer, password: str, tokens: Sequence[str]) -> Tended:
        wanted = {t.lower() for t in tokens}
        if not wanted:
            return Tended({})
        try:
            async with asyncio.timeout(self._timeout_s):
                return Tended(await self._tend(server, password, wanted))
        except _Refused as exc:
            return Tended({}, exc.reason)
        except NotContacted as exc:
            return Tended({}, exc.reason)
        except TimeoutError:
            return Tended({}, f"timed out after {self._timeout_s:g} s at {server.host}:{server.port}")
        except Exception as exc:  # every failure becomes a fixed phrase
            _log.info("warmup_tend_error", host=server.host, port=server.port, error=type(exc).__name__)
            return Tended({}, connection_problem(exc, server))

    async def _tend(
        self, server: MailServer, password: str, wanted: set[str]
    ) -> dict[str, Literal["inbox", "spam"]]:
        sock = await self._guard.open_socket(server.host, server.port)
        client = SocketIMAP4(
            sock,
            server.host,
            timeout=self._timeout_s,
            ssl_context=self._tls if server.security == "tls" else None,
        )
        try:
            await client.wait_hello_from_server()
            if server.security == "starttls":
                problem = await imap_starttls(client, self._tls, server.host, self._timeout_s)
                if problem is not None:
                    raise _Refused(problem)
            if (await imap_login(client, server, password)).result != "OK":
                raise _Refused("IMAP login failed: the server refused the user name or password")
            await client.protocol.capability()
            found: dict[str, Literal["inbox", "spam"]] = {}
            listed = await client.list('""', '"*"')
            junk = parse.junk_folder(parse.list_folders(listed.lines)) if listed.result == "OK" else None
            folders: list[tuple[str, Literal["inbox", "spam"]]] = [("INBOX", "inbox")]
            if junk is not None and junk.upper() != "INBOX":
                folders.append((junk, "spam"))
            for folder, role in folders:
                ours = await self._ours(client, folder, wanted - found.keys())
                if not ours:
                    continue
                uids = parse.uid_set(sorted(ours))
                await self._ok(client.uid("store", uids, "+FLAGS.SILENT", "(\\Seen \\Flagged)"), "STORE")
                if role == "spam":
                    await self._to_inbox(client, uids)
                found.update({token: role for token in ours.values()})
            with contextlib.suppress(Exception):
                await client.logout()
            return found
        finally:
            transport = client.protocol.transport if client.protocol is not None else None
            if transport is not None:
                transport.close()

    async def _ours(self, client: SocketIMAP4, folder: str, wanted: set[str]) -> dict[int, str]:
        """UID -> token of the warmup emails asked for in `folder` (selected read-write)."""
        if not wanted:
            return {}
        if (await client.select(parse.quote(folder))).result != "OK":
            return {}
        response = await client.uid_search("HEADER", HEADER, f'"{TOKEN_PREFIX}"', charset=None)
        if response.result != "OK":
            return {}
        uids = parse.search_uids(response.lines[:-1])
        if not uids:
            return {}
        fetched = await client.protocol.fetch(
            parse.uid_set(uids), f"(UID BODY.PEEK[HEADER.FIELDS ({HEADER})])", by_uid=True
        )
        ours: dict[int, str] = {}
        for record in parse.fetch_records(fetched.lines[:-1]):
            uid = record.uid()
            token = header_token((record.body or b"") + b"\r\n")
            if uid is not None and token in wanted:
                ours[uid] = token
        return ours

    async def _to_inbox(self, client: SocketIMAP4, uids: str) -> None:
        if "MOVE" in {c.upper() for c in client.protocol.capabilities}:
            await self._ok(client.protocol.move(uids, "INBOX", by_uid=True), "MOVE")
            return
        await self._ok(client.uid("copy", uids, "INBOX"), "COPY")
        await self._ok(client.uid("store", uids, "+FLAGS.SILENT", "(\\Deleted)"), "STORE")
        await self._ok(client.protocol.expunge(), "EXPUNGE")

    @staticmethod
    async def _ok(work: Awaitable[Any], step: str) -> None:
        response = await work
        if response.result != "OK":
            raise _Refused(f"the IMAP server refused {step}")
