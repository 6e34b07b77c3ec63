"""The default serving path (``run_http``: uvicorn) closes connections that
trickle their request head or body past a deadline, while other clients are
served (uvicorn with httptools or h11): 500 connections sending a header line now and then get 408 and are
closed, and so are 500 sending their body a byte at a time."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from support.everything_http import free_port
from support.peers import REPO, TESTS, run
from support.scaleout import modern_meta

HEAD_TIMEOUT = 1.0
BODY_TIMEOUT = 1.0
SLOW = 500  # connections


@pytest.fixture(scope="module", params=["uvicorn", "uvicorn-h11"])
def server(request: pytest.FixtureRequest) -> Iterator[int]:
    """The server under uvicorn with httptools, and with h11."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(
            [str(TESTS), *(str(REPO / part) for part in ("codegen", "generated", "runtime"))]
        ),
    }
    process = subprocess.Popen(
        [sys.executable, str(TESTS / "support" / "deadline_server.py"), str(port),
         str(HEAD_TIMEOUT), str(BODY_TIMEOUT), request.param],
        env=env, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        line = process.stderr.readline()  # "deadlines: serving MCP at ..." once it listens
        assert "serving MCP at" in line, line
        yield port
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
    server: int,
) -> None:
    async def scenario() -> None:
        head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n".encode()
        slow = [asyncio.ensure_future(trickle(server, head, b"x-slow: y\r\n")) for _ in range(SLOW)]
        await served(server)
        received = await asyncio.gather(*slow)
        assert all(got.startswith(b"HTTP/1.1 408 Request Timeout\r\n") for got in received)
        await served(server)

    run(scenario(), timeout=120)


def test_connections_trickling_their_request_body_are_closed_while_others_are_served(
    server: int,
) -> None:
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


def test_the_next_head_on_a_kept_alive_connection_has_a_deadline_too(server: int) -> None:
    async def scenario() -> None:
        first = f"GET /elsewhere HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n\r\n"
        second = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server}\r\n"
        received = await trickle(server, (first + second).encode(), b"x-slow: y\r\n")
        answers = received.split(b"HTTP/1.1 ")[1:]
        assert [answer[:3] for answer in answers] == [b"404", b"408"]

    run(scenario(), timeout=60)


def test_uvicorn_s_command_line_can_name_the_protocols_with_deadlines() -> None:
    from uvicorn.importer import import_from_string

    from mcp_runtime.http import deadlines

    for name in ("HttpToolsProtocol", "H11Protocol"):
        protocol = import_from_string(f"mcp_runtime.http.deadlines:{name}")
        assert protocol.head_timeout == deadlines.DEFAULT_HEAD_TIMEOUT
        assert protocol.body_timeout == deadlines.DEFAULT_BODY_TIMEOUT
    with pytest.raises(ValueError, match="unknown uvicorn HTTP protocol 'h3'"):
        deadlines.uvicorn_protocol("h3")
