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


class StderrTail:
    """A pipe whose write end a server process gets as its stderr, read as it
    comes and kept only as its last line: what a server that failed to start
    said last (its missing key, its stack trace's last line) is the reason to
    report, while the rest of what it says is not wanted on our stderr.
    One pipe per server, kept across its restarts."""

    LIMIT = 500
    """Characters of the last line kept."""

    def __init__(self) -> None:
        self._read, self.fd = os.pipe()
        os.set_blocking(self._read, False)
        self._pending = b""
        self._last = ""
        self._watching = False

    def start(self) -> None:
        asyncio.get_running_loop().add_reader(self._read, self._drain)
        self._watching = True

    def last_line(self) -> str | None:
        """The last non-empty line the server wrote (a line not yet ended included)."""
        self._drain()  # what it wrote just before it exited may not have been read yet
        pending = self._pending.decode(errors="replace").strip()
        return (pending or self._last)[-self.LIMIT :] or None

    def forget(self) -> None:
        """Drop what was said so far (a new attempt's process starts)."""
        self._drain()
        self._pending, self._last = b"", ""

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self._read, 65536)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:  # every writer closed it: nothing more to read
                self._stop_watching()
                return
            *lines, self._pending = (self._pending + chunk).split(b"\n")
            for line in reversed(lines):
                text = line.decode(errors="replace").strip()
                if text:
                    self._last = text
                    break
            self._pending = self._pending[-self.LIMIT * 4 :]

    def _stop_watching(self) -> None:
        if self._watching:
            self._watching = False
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                asyncio.get_running_loop().remove_reader(self._read)

    def close(self) -> None:
        self._stop_watching()
        for fd in (self.fd, self._read):
            with contextlib.suppress(OSError):
                os.close(fd)
