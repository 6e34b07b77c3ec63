"""Drive a stdio server process line by line, with bytes of our choosing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import IO, Any

from .transports import Message, parse

LATEST = "2025-11-25"


class RawServer:
    """A server process whose stdin and stdout the test reads and writes directly."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = process.stdout

    @classmethod
    async def start(
        cls, command: Sequence[str], stderr: IO[Any] | int | None = asyncio.subprocess.DEVNULL
    ) -> RawServer:
        process = await asyncio.create_subprocess_exec(
            *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr
        )
        return cls(process)

    async def send(self, message: bytes | Message) -> None:
        """Write one line: bytes as they are, a dict as JSON."""
        data = message if isinstance(message, bytes) else json.dumps(message).encode()
        self._stdin.write(data + b"\n")
        await self._stdin.drain()

    async def receive_line(self, timeout: float = 10.0) -> bytes:
        """The next raw line the server wrote ('' at end of stream)."""
        return await asyncio.wait_for(self._stdout.readline(), timeout)

    async def receive(self, timeout: float = 10.0) -> Message:
        line = await self.receive_line(timeout)
        assert line, "the server closed its stdout"
        return parse(line)

    async def response(self, request_id: Any, timeout: float = 10.0) -> Message:
        """The response to ``request_id``, skipping notifications sent before it."""
        while True:
            message = await self.receive(timeout)
            if "method" not in message:
                assert (
                    message.get("id") == request_id
                ), f"expected the response to {request_id!r}, got {message}"
                return message

    async def request(self, request_id: Any, method: str, params: Any = None) -> Message:
        message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        return await self.response(request_id)

    async def initialize(self, version: str = LATEST, request_id: Any = "init") -> Message:
        """The initialize handshake; the result of initialize."""
        answer = await self.request(
            request_id,
            "initialize",
            {
                "protocolVersion": version,
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        assert "result" in answer, answer
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        result: Message = answer["result"]
        return result

    async def close(self, timeout: float = 10.0) -> int:
        """Close stdin and wait for the process to end (killing it if it does not); its exit status."""
        if not self._stdin.is_closing():
            self._stdin.close()
        try:
            return await asyncio.wait_for(self.process.wait(), timeout)
        except asyncio.TimeoutError:
            self.process.kill()
            await self.process.wait()
            raise AssertionError(
                f"the server did not exit within {timeout} s of its stdin closing"
            ) from None
