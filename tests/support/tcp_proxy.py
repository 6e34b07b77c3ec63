"""A loopback TCP proxy whose connections a test can cut, to break HTTP
connections (an SSE stream mid-way) the way a network does."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class CuttableProxy:
    """Forwards 127.0.0.1:<port> to 127.0.0.1:<target>; :meth:`cut` aborts
    every connection open at that moment (new ones are served as usual)."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.connections = 0
        self.cuts = 0
        self._open: set[tuple[asyncio.StreamWriter, asyncio.StreamWriter]] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> CuttableProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def cut(self) -> int:
        """Abort every open connection (both sides, no FIN); how many there were."""
        pairs = list(self._open)
        for client, upstream in pairs:
            for writer in (client, upstream):
                writer.transport.abort()
        self._open.clear()
        self.cuts += 1
        return len(pairs)

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        self.cut()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.transport.abort()
            return
        pair = (writer, up_writer)
        self._open.add(pair)
        pumps = [
            asyncio.ensure_future(self._pump(reader, up_writer)),
            asyncio.ensure_future(self._pump(up_reader, writer)),
        ]
        for task in pumps:
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        await asyncio.gather(*pumps, return_exceptions=True)
        self._open.discard(pair)
        for side in (writer, up_writer):
            side.transport.abort()

    @staticmethod
    async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()


@contextlib.asynccontextmanager
async def cuttable_proxy(target_port: int) -> AsyncIterator[CuttableProxy]:
    proxy = await CuttableProxy(target_port).start()
    try:
        yield proxy
    finally:
        await proxy.close()
