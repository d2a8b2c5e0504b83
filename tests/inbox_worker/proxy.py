"""A TCP proxy on loopback that cuts connections: the first `cuts` connections are closed after the server
has sent `cut_after` bytes to the client (an IMAP server dropping the connection mid-fetch). `block()` cuts
every open connection and closes new ones at once until `unblock()` (a server gone for a while)."""

from __future__ import annotations

import asyncio
import contextlib

from tests.conftest import free_port


class CuttingProxy:
    def __init__(self, target_host: str, target_port: int, *, cut_after: int, cuts: int = 1) -> None:
        self.target = (target_host, target_port)
        self.cut_after = cut_after
        self.cuts_left = cuts
        self.connections = 0
        self.cut = 0
        self.port = free_port()
        self._server: asyncio.Server | None = None
        self.blocked = False
        self._live: set[asyncio.StreamWriter] = set()

    def block(self) -> None:
        self.blocked = True
        for writer in self._live:
            writer.close()

    def unblock(self) -> None:
        self.blocked = False

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        if self.blocked:
            client_w.close()
            return
        self.connections += 1
        self._live.add(client_w)
        limit = None
        if self.cuts_left > 0:
            self.cuts_left -= 1
            limit = self.cut_after
        server_r, server_w = await asyncio.open_connection(*self.target)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter, budget: int | None) -> None:
            sent = 0
            try:
                while data := await r.read(16384):
                    if budget is not None and sent + len(data) > budget:
                        w.write(data[: budget - sent])
                        self.cut += 1
                        return
                    w.write(data)
                    sent += len(data)
                    await w.drain()
            except (ConnectionError, OSError):
                return

        up = asyncio.create_task(pipe(client_r, server_w, None))
        down = asyncio.create_task(pipe(server_r, client_w, limit))
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        for task in (up, down):
            task.cancel()
        self._live.discard(client_w)
        for writer in (client_w, server_w):
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()
