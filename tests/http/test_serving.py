"""mcpbind.serving: our app served by granian and by uvicorn's fast stack
(uvloop, httptools) on loopback, a tools/call round-tripped by our client at
2026-07-28 and in a handshake session; the heap frozen once the app started."""

from __future__ import annotations

import contextlib
import gc
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.asgi import request
from support.http_servers import lowlevel_server, run

from mcpbind._client.client import Client
from mcpbind._transports.http.client.streamable import connect_streamable_http
from mcpbind.serving import FreezeAfterStartup, run_http, uvicorn_options
from mcpbind_protocol import v2025_11_25 as legacy
from mcpbind_protocol import v2026_07_28 as mcp

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stateless_server.py"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def example_under(stack: str) -> Iterator[str]:
    """examples/stateless_server.py served by ``stack`` in a child process; its URL."""
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--http", "--port", str(port), "--stack", stack],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(
                    f"the server exited: {process.stderr.read() if process.stderr else ''}"
                )
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            # uvicorn raises the signal again once it has shut down gracefully.
            assert process.wait(10) in (0, -signal.SIGTERM), "the server did not stop on SIGTERM"
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            if process.stderr is not None:
                process.stderr.close()


async def echo_both_wires(url: str) -> None:
    async with connect_streamable_http(Client(name="t", version="1"), url) as session:
        assert session.protocol_version == "2026-07-28"
        result = await mcp.ClientStub(session).call_tool("echo", arguments={"text": "stateless"})
        assert (
            isinstance(result.content[0], mcp.TextContent) and result.content[0].text == "stateless"
        )
    client = Client(name="t", version="1", protocol_version="2025-11-25")
    async with connect_streamable_http(client, url) as session:
        assert session.protocol_version == "2025-11-25"
        answer = await legacy.ClientStub(session).call_tool("echo", arguments={"text": "session"})
        assert (
            isinstance(answer.content[0], legacy.TextContent)
            and answer.content[0].text == "session"
        )


@pytest.mark.parametrize("stack", ["granian", "uvicorn", "uvicorn-h11"])
def test_tools_call_round_trips_under_each_stack(stack: str) -> None:
    with example_under(stack) as url:
        run(echo_both_wires(url))


def test_the_fast_stack_is_installed_and_chosen() -> None:
    # The http extra brings both; run_http then asks uvicorn for them.
    assert uvicorn_options() == {"loop": "uvloop", "http": "httptools"}
    assert uvicorn_options("uvicorn-h11") == {"loop": "asyncio", "http": "h11"}


def test_an_unknown_stack_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="unknown server stack 'gunicorn'"):
        run_http(lowlevel_server(), stack="gunicorn")


def test_the_heap_is_frozen_once_the_app_has_started() -> None:
    from mcpbind.http import http_app

    app = FreezeAfterStartup(http_app(lowlevel_server()))
    sent: list[dict[str, Any]] = []
    frozen: list[int] = []  # objects frozen as each lifespan message goes out

    async def lifespan() -> None:
        inbox = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]

        async def receive() -> dict[str, Any]:
            return inbox.pop(0)

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)
            frozen.append(gc.get_freeze_count())

        assert gc.get_freeze_count() == 0
        await app({"type": "lifespan"}, receive, send)
        # Requests go through the wrapper unchanged.
        response = await request(app, "GET", "/elsewhere")
        assert response.status == 404

    gc.unfreeze()
    try:
        run(lifespan())
    finally:
        gc.unfreeze()
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    # Nothing frozen before the app had started, everything after.
    assert frozen[0] == 0 and frozen[1] > 10_000


def test_stdio_takes_uvloop_only_between_pipes(tmp_path: Path) -> None:
    # uvloop's pipe transports abort the process on a regular file: those go to asyncio.
    probe = [
        sys.executable,
        "-c",
        "from mcpbind.serving import stdio_streams_are_pipes as p; print(p())",
    ]
    piped = subprocess.run(probe, stdin=subprocess.PIPE, capture_output=True, text=True, timeout=30)
    assert piped.stdout.strip() == "True", piped.stderr
    into_file = tmp_path / "out.txt"
    with into_file.open("w") as out:
        subprocess.run(probe, stdin=subprocess.PIPE, stdout=out, timeout=30, check=True)
    assert into_file.read_text().strip() == "False"


def test_a_stdio_server_answers_into_a_regular_file(tmp_path: Path) -> None:
    meta = '{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
    discover = (
        f'{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{"_meta":{meta}}}}}\n'
    )
    into_file = tmp_path / "out.jsonl"
    with into_file.open("wb") as out:
        subprocess.run([sys.executable, str(EXAMPLE)], input=discover.encode(), stdout=out,
                       stderr=subprocess.DEVNULL, timeout=30, check=True)  # fmt: skip
    assert '"supportedVersions":["2026-07-28"]' in into_file.read_text()
