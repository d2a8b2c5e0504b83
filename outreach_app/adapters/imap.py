"""`ports.InboxConnector`: the inbox worker's IMAP sessions, with aioimaplib (docs/inbox.md, "The inbox
worker").

- Connects like the login test (`mail_login.py`): the host resolved once and checked by `AddressGuard`,
  implicit TLS or STARTTLS as the mailbox says, certificates verified (system store plus
  `OUTREACH_TLS_CA_FILE`).
- Folders are opened with EXAMINE (read-only) and bodies fetched with `BODY.PEEK[]<0.N>`: nothing is ever
  marked read, and a message is fetched up to N bytes (`OUTREACH_INBOX_FETCH_MAX_BYTES`).
- Every step is bounded by the timeout, and a connection the server closes fails the step at once (not at
  the timeout). After any failure the session is unusable: the worker opens a new one.
- Failures are short fixed phrases (`ports.InboxError`), never an exception's or a server's text.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Sequence
from datetime import date
from typing import Any, TypeVar

import aioimaplib
import structlog

from outreach_app.adapters import imap_parse as parse
from outreach_app.adapters.mail_client import GuardedMailClient
from outreach_app.adapters.mail_login import imap_login, imap_starttls
from outreach_app.adapters.smtp import connection_problem
from outreach_app.outgoing import NotContacted, SocketIMAP4
from outreach_core.kernel.ports import (
    FetchedMessage,
    FolderStatus,
    InboxError,
    InboxFolder,
    MailServer,
)
from outreach_core.kernel.settings import Settings

_log = structlog.get_logger()
T = TypeVar("T")


class ImapInboxConnector(GuardedMailClient):
    """`ports.InboxConnector` over aioimaplib (see the module docstring)."""

    default_timeout_s = 30.0

    @classmethod
    def timeout_from(cls, settings: Settings) -> float:
        return settings.inbox_timeout_s

    async def connect(self, server: MailServer, password: str) -> ImapSession:
        where = f"{server.host}:{server.port}"
        client: SocketIMAP4 | None = None
        try:
            async with asyncio.timeout(self._timeout_s):
                sock = await self._guard.open_socket(server.host, server.port)
                client = SocketIMAP4(
                    sock,
                    server.host,
                    timeout=self._timeout_s,
                    ssl_context=self._tls if server.security == "tls" else None,
                )
                await client.wait_hello_from_server()
                if server.security == "starttls":
                    problem = await imap_starttls(client, self._tls, server.host, self._timeout_s)
                    if problem is not None:
                        raise InboxError(problem)
                response = await imap_login(client, server, password)
                if response.result != "OK":
                    raise InboxError(
                        "IMAP login failed: the server refused the user name or password", login=True
                    )
                await client.protocol.capability()
        except InboxError:
            _close(client)
            raise
        except NotContacted as exc:
            _close(client)
            raise InboxError(exc.reason) from None
        except TimeoutError:
            _close(client)
            raise InboxError(f"timed out after {self._timeout_s:g} s connecting to {where}") from None
        except Exception as exc:  # every failure becomes a fixed phrase
            _close(client)
            raise InboxError(connection_problem(exc, server)) from None
        return ImapSession(client, where, self._timeout_s)


def _close(client: SocketIMAP4 | None) -> None:
    transport = client.protocol.transport if client is not None and client.protocol is not None else None
    if transport is not None:
        transport.close()


class ImapSession:
    """`ports.InboxSession`: one logged-in connection (see the module docstring)."""

    def __init__(self, client: SocketIMAP4, where: str, timeout_s: float) -> None:
        self._client = client
        self._where = where
        self._timeout_s = timeout_s
        self._lost: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._broken = False
        self._new_mail = False  # an EXISTS seen in a response since the last search
        protocol = client.protocol
        protocol.conn_lost_cb = self._on_lost
        # aioimaplib runs FETCH, SEARCH and UID as asynchronous commands and drops an untagged EXISTS that
        # arrives during one (it files untagged lines only under a synchronous command or the asynchronous
        # command they name). The server reports new mail once: dropped, IDLE never hears of it and the
        # mail waits for the next poll (`OUTREACH_INBOX_POLL_S`). So every EXISTS outside a synchronous
        # command is noted here; those of synchronous commands are in their responses (`_command`).
        untagged = protocol._untagged_response

        def note_exists(line: bytes) -> Any:
            if (
                protocol.pending_sync_command is None
                and parse.exists_count([line.removeprefix(b"* ")]) is not None
            ):
                self._new_mail = True
            return untagged(line)

        protocol._untagged_response = note_exists
        if protocol.transport is not None and protocol.transport.is_closing():
            self._on_lost(None)

    def _on_lost(self, exc: Exception | None) -> None:
        if not self._lost.done():
            self._lost.set_result(None)

    @property
    def can_idle(self) -> bool:
        return "IDLE" in self._client.protocol.capabilities

    async def _run(self, step: str, work: Awaitable[T], timeout_s: float | None = None) -> T:
        """`work` bounded by the timeout and by the connection: fails at once when the server hangs up."""
        if self._broken or self._lost.done():
            _cancel(work)
            self._broken = True
            raise InboxError(f"the IMAP server at {self._where} closed the connection")
        task: asyncio.Future[T] = asyncio.ensure_future(work)
        waiting: set[asyncio.Future[Any]] = {task, self._lost}
        try:
            done, _ = await asyncio.wait(
                waiting, timeout=timeout_s or self._timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
        except BaseException:
            task.cancel()
            raise
        if task in done:
            try:
                return task.result()
            except InboxError:
                raise
            except Exception as exc:
                self._broken = True
                reason = f"the IMAP server at {self._where} answered unexpectedly ({step})"
                if isinstance(exc, OSError | EOFError):
                    reason = f"the IMAP connection to {self._where} failed ({step})"
                raise InboxError(reason) from exc
        task.cancel()
        self._broken = True
        if self._lost.done():
            raise InboxError(f"the IMAP server at {self._where} closed the connection ({step})")
        raise InboxError(f"timed out after {timeout_s or self._timeout_s:g} s at {self._where} ({step})")

    async def _command(self, step: str, work: Awaitable[Any], timeout_s: float | None = None) -> Any:
        response = await self._run(step, work, timeout_s)
        if response.result != "OK":
            self._broken = True
            raise InboxError(f"the IMAP server at {self._where} refused {step}")
        if step != "EXAMINE" and parse.exists_count(response.lines) is not None:
            self._new_mail = True
        return response

    async def folders(self) -> list[InboxFolder]:
        response = await self._command("LIST", self._client.list('""', '"*"'))
        listed = parse.list_folders(response.lines)
        found = [InboxFolder("INBOX", "inbox")]
        junk = parse.junk_folder(listed)
        if junk is not None and junk.upper() != "INBOX":
            found.append(InboxFolder(junk, "junk"))
        return found

    async def examine(self, folder: str) -> FolderStatus:
        # EXAMINE reports the folder afresh (UIDNEXT): what arrived before it is in its answer
        self._new_mail = False
        response = await self._command("EXAMINE", self._client.examine(parse.quote(folder)))
        self._client.protocol.state = aioimaplib.SELECTED  # aioimaplib only knows SELECT does this
        uidvalidity = parse.response_code(response.lines, b"UIDVALIDITY")
        if uidvalidity is None:
            self._broken = True
            raise InboxError(f"the IMAP server at {self._where} gave no UIDVALIDITY for {folder}")
        return FolderStatus(
            uidvalidity=uidvalidity,
            uidnext=parse.response_code(response.lines, b"UIDNEXT"),
            exists=parse.exists_count(response.lines) or 0,
        )

    async def uids_from(self, first_uid: int) -> list[int]:
        self._new_mail = False
        response = await self._command(
            "UID SEARCH", self._client.uid_search("UID", f"{max(first_uid, 1)}:*", charset=None)
        )
        # `n:*` also matches the highest UID when it is below n (RFC 3501): keep only what was asked for
        return [uid for uid in parse.search_uids(response.lines[:-1]) if uid >= first_uid]

    async def uids_since(self, day: date) -> list[int]:
        self._new_mail = False
        response = await self._command(
            "UID SEARCH", self._client.uid_search("SINCE", parse.search_date(day), charset=None)
        )
        return parse.search_uids(response.lines[:-1])

    async def fetch(self, uids: Sequence[int], max_bytes: int) -> list[FetchedMessage]:
        if not uids:
            return []
        items = f"(UID INTERNALDATE RFC822.SIZE BODY.PEEK[]<0.{max_bytes}>)"
        # a batch may be large: each message gets the timeout again on top of the first
        limit = self._timeout_s * (1 + len(uids) / 10)
        response = await self._command(
            "UID FETCH", self._client.protocol.fetch(parse.uid_set(uids), items, by_uid=True), limit
        )
        wanted = set(uids)
        found: dict[int, FetchedMessage] = {}
        for record in parse.fetch_records(response.lines[:-1]):
            uid = record.uid()
            if uid is None or uid not in wanted:
                continue  # an unsolicited FETCH (flags changed elsewhere) or a stray answer
            arrived_at, size = record.arrived_at(), record.size()
            if arrived_at is None or record.body is None:
                _log.warning(
                    "inbox_message_unreadable",
                    uid=uid,
                    server=self._where,
                    why="no INTERNALDATE" if arrived_at is None else "no body",
                )
                continue
            found[uid] = FetchedMessage(
                uid, arrived_at, size if size is not None else len(record.body), record.body
            )
        return [found[uid] for uid in sorted(found)]

    async def idle(self, seconds: float) -> bool:
        if self._new_mail:
            return True
        if not self.can_idle:
            raise InboxError(f"the IMAP server at {self._where} does not offer IDLE")
        queue = self._client.protocol.idle_queue
        while not queue.empty():
            queue.get_nowait()
        idle = await self._run("IDLE", self._client.idle_start(timeout=seconds + self._timeout_s))
        woke = False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            while (remaining := deadline - loop.time()) > 0:
                try:
                    push = await self._run("IDLE", queue.get(), remaining)
                except InboxError:
                    if self._lost.done():
                        raise
                    self._broken = False  # the wait simply ran out
                    break
                if push is aioimaplib.STOP_WAIT_SERVER_PUSH or push == aioimaplib.STOP_WAIT_SERVER_PUSH:
                    break
                if parse.exists_count(push) is not None or any(b"RECENT" in bytes(line) for line in push):
                    woke = True
                    break
        finally:
            if not self._lost.done():
                with contextlib.suppress(Exception):
                    self._client.idle_done()
        response = await self._run("IDLE", idle)
        if response.result != "OK":
            self._broken = True
            raise InboxError(f"the IMAP server at {self._where} refused IDLE")
        return woke

    async def close(self) -> None:
        if not self._broken and not self._lost.done():
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._client.logout(), min(self._timeout_s, 5.0))
        _close(self._client)
        for task in list(getattr(self._client, "tasks", ())) + list(self._client.protocol.tasks):
            task.cancel()


def _cancel(work: Awaitable[Any]) -> None:
    if asyncio.iscoroutine(work):
        work.close()
    elif isinstance(work, asyncio.Future):
        work.cancel()
