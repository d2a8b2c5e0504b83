"""A SOCKS5 proxy on loopback for the sending-IP tests (RFC 1928, CONNECT, no authentication or
username/password): its outgoing connections leave from `source` (127.0.0.2 by default), so a server behind
it sees that address instead of 127.0.0.1, as a mail server sees a sending IP's address. `refuse` makes it
answer "connection refused" (reply 0x05) to every CONNECT; `connects` records the targets it was asked for."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import struct
from collections.abc import AsyncIterator


class SocksProxy:
    def __init__(
        self, source: str = "127.0.0.2", user: str | None = None, password: str | None = None
    ) -> None:
        self.source = source
        self.user = user
        self.password = password
        self.refuse = False
        self.connects: list[tuple[str, int]] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        auth = f"{self.user}:{self.password}@" if self.user else ""
        return f"socks5://{auth}127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        _version, count = await reader.readexactly(2)
        methods = await reader.readexactly(count)
        wanted = 0x02 if self.user else 0x00
        if wanted not in methods:
            writer.write(b"\x05\xff")
            return
        writer.write(bytes([5, wanted]))
        if self.user:
            _v, ulen = await reader.readexactly(2)
            user = (await reader.readexactly(ulen)).decode()
            (plen,) = await reader.readexactly(1)
            password = (await reader.readexactly(plen)).decode()
            good = (user, password) == (self.user, self.password)
            writer.write(b"\x01\x00" if good else b"\x01\x01")
            if not good:
                return
        _v, command, _rsv, kind = await reader.readexactly(4)
        if kind == 1:
            host = str(ipaddress.IPv4Address(await reader.readexactly(4)))
        elif kind == 4:
            host = str(ipaddress.IPv6Address(await reader.readexactly(16)))
        else:
            (length,) = await reader.readexactly(1)
            host = (await reader.readexactly(length)).decode()
        (port,) = struct.unpack("!H", await reader.readexactly(2))
        self.connects.append((host, port))
        if command != 1 or self.refuse:
            writer.write(b"\x05\x05\x00\x01" + bytes(4) + b"\x00\x00")
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, port, local_addr=(self.source, 0))
        except OSError:
            writer.write(b"\x05\x05\x00\x01" + bytes(4) + b"\x00\x00")
            return
        writer.write(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")
        await writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()


@contextlib.asynccontextmanager
async def socks_proxy(**options: str | None) -> AsyncIterator[SocksProxy]:
    proxy = SocksProxy(**options)  # type: ignore[arg-type]
    await proxy.start()
    try:
        yield proxy
    finally:
        await proxy.stop()
