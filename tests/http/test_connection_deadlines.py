"""The serving paths of ``run_http`` close connections that trickle their request
head or body past a deadline, while other clients are served: under uvicorn (with
httptools or h11) 500 connections sending a header line now and then get 408 and
are closed, and so are 500 sending their body a byte at a time; under granian its
own head deadline closes the first (without an answer)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import httpx
import pytest
from support.everything_http import free_port
from support.peers import REPO, TESTS, run
from support.scaleout import modern_meta

HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
SLOW = 500  # connections


class Served:
    """The port of a deadline server and the stack serving it."""

    def __init__(self, port: int, stack: str) -> None:
        self.port = port
        self.stack = stack

    def timed_out(self, received: bytes) -> bool:
        """Whether ``received`` is what the stack sends for a head past its deadline
        (the connection then closed: a trickle returns only once it is)."""
        if self.stack == "granian":
            return received == b""  # granian closes the connection without an answer
        return received.startswith(b"HTTP/1.1 408 Request Timeout\r\n")


@pytest.fixture(scope="module", params=["uvicorn", "uvicorn-h11", "granian"])
def served_by(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The server under uvicorn with httptools, with h11, and under granian."""
    yield from serve(request.param)


@pytest.fixture(scope="module", params=["uvicorn", "uvicorn-h11"])
def served_by_uvicorn(request: pytest.FixtureRequest) -> Iterator[Served]:
    """The server under the stacks with a deadline for the body of each connection
    (under granian only the app's own 408 bounds a body)."""
    yield from serve(request.param)


def serve(stack: str) -> Iterator[Served]:
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(TESTS), *(str(REPO / part) for part in ("codegen", "generated", "runtime"))]
        ),
    }
    process = subprocess.Popen(
        [sys.executable, str(TESTS / "support" / "deadline_server.py"), str(port),
         str(HEAD_TIMEOUT), str(BODY_TIMEOUT), stack],
        env=env, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        # Up once it accepts connections (under uvicorn it also says so on stderr; granian does not).
        for _ in range(600):
            assert process.poll() is None, f"the deadline server exited with {process.returncode}"
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        yield Served(port, stack)
    finally:
        process.terminate()
        process.wait(15)


async def trickle(port: int, head: bytes, drip: bytes) -> bytes:
    """Open a connection, send ``head``, then ``drip`` every 0.3 s until the
    server closes the connection; what the server sent."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def drip_forever() -> None:
        writer.write(head)
        with contextlib.suppress(ConnectionError, OSError):
            while True:
                await writer.drain()
                await asyncio.sleep(0.3)
                writer.write(drip)

    dripping = asyncio.ensure_future(drip_forever())
    received = b""
    try:
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(65536):
                received += chunk
    finally:
        dripping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await dripping
        writer.close()
    return received


async def served(port: int) -> None:
    """A normal client's 2026-07-28 tools/call is answered."""
    body = {"jsonrpc": "2.0", "id": "n", "method": "tools/call",
            "params": {"name": "pid", "arguments": {}, "_meta": modern_meta()}}  # fmt: skip
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version":
               "2026-07-28", "mcp-method": "tools/call", "mcp-name": "pid"}  # fmt: skip
    async with httpx.AsyncClient(timeout=30) as client:
        answer = await client.post(f"http://127.0.0.1:{port}/mcp", json=body, headers=headers)
    assert answer.status_code == 200 and '"result"' in answer.text, answer.text


def test_connections_trickling_their_request_head_are_closed_while_others_are_served(
    served_by: Served,
) -> None:
    server = served_by.port

    async def scenario() -> None:
        head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n".encode()
        slow = [asyncio.ensure_future(trickle(server, head, b"x-slow: y\r\n")) for _ in range(SLOW)]
        await served(server)
        received = await asyncio.gather(*slow)
        assert all(served_by.timed_out(got) for got in received), {got[:40] for got in received}
        await served(server)

    run(scenario(), timeout=120)


def test_connections_trickling_their_request_body_are_closed_while_others_are_served(
    served_by_uvicorn: Served,
) -> None:
    server = served_by_uvicorn.port

    async def scenario() -> None:
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n"
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: pid\r\n"
            "content-length: 4096\r\n\r\n{"
        ).encode()
        slow = [asyncio.ensure_future(trickle(server, head, b" ")) for _ in range(SLOW)]
        await served(server)
        received = await asyncio.gather(*slow)
        # The app's 408 for the late body, then the connection closed.
        assert all(got.startswith(b"HTTP/1.1 408 ") for got in received), {
            got[:40] for got in received
        }
        await served(server)

    run(scenario(), timeout=120)


def test_the_next_head_on_a_kept_alive_connection_has_a_deadline_too(served_by: Served) -> None:
    server = served_by.port

    async def scenario() -> None:
        first = f"GET /elsewhere HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n\r\n"
        second = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n"
        received = await trickle(server, (first + second).encode(), b"x-slow: y\r\n")
        answers = received.split(b"HTTP/1.1 ")[1:]
        # The 404, then the stack's answer to the late head (granian: none, the connection closed).
        late = [] if served_by.stack == "granian" else [b"408"]
        assert [answer[:3] for answer in answers] == [b"404", *late]

    run(scenario(), timeout=60)


def test_uvicorn_s_command_line_can_name_the_protocols_with_deadlines() -> None:
    from uvicorn.importer import import_from_string

    from mcpbind._transports.http.server import deadlines

    for name in ("HttpToolsProtocol", "H11Protocol"):
        protocol = import_from_string(f"mcpbind._transports.http.server.deadlines:{name}")
        assert protocol.head_timeout == deadlines.DEFAULT_HEAD_TIMEOUT
        assert protocol.body_timeout == deadlines.DEFAULT_BODY_TIMEOUT
    with pytest.raises(ValueError, match="unknown uvicorn HTTP protocol 'h3'"):
        deadlines.uvicorn_protocol("h3")
