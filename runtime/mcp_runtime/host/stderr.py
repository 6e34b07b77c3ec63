"""Each stdio server's stderr on the host's, every line prefixed with the
server's name, so that several servers' messages can be told apart. One pipe
per server, kept across its restarts; its lines are read as they come."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from typing import BinaryIO


class PrefixedStderr:
    """A pipe whose write end a server process gets as its stderr."""

    def __init__(self, name: str, out: BinaryIO | None = None) -> None:
        self.prefix = f"[{name}] ".encode()
        self._out = out if out is not None else sys.stderr.buffer
        self._read, self.fd = os.pipe()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._copy())

    async def _copy(self) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        pipe = os.fdopen(self._read, "rb", buffering=0)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), pipe
        )
        try:
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError as ended:
                    line = ended.partial
                except asyncio.LimitOverrunError as long:
                    line = await reader.readexactly(long.consumed)
                if not line:
                    return
                self._out.write(self.prefix + line + (b"" if line.endswith(b"\n") else b"\n"))
                self._out.flush()
        finally:
            transport.close()

    async def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)  # the reader sees the end once no server holds the pipe either
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
