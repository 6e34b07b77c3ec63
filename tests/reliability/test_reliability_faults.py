"""Faults: a server killed mid-request, an SSE stream cut and resumed, a slow
handler hit by a timeout, messages over the size limits, and clients that
never read what the server sends them.

Servers are tests/support/reliability_server.py (the example server's tools
plus gate, slow, numbered and flood), in this process (over the in-memory
transport, or under uvicorn in a thread) or as a child process (stdio, or
HTTP under uvicorn). Everything is on loopback and bounded in time; the
figures (time to fail, events, memory) go to build/reliability/figures.json.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import httpx
import pytest
from support.figures import hwm_kib, record, rss_kib
from support.http_servers import eventually, serving
from support.peers import (
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)
from support.reliability_peers import RELIABILITY_SERVER, HttpServerProcess, stdio_server
from support.reliability_server import ReliabilityServer, reliability_server
from support.tcp_proxy import cuttable_proxy
from support.transports import memory_pair

from mcpbind._client.client import Client, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._server.server import ServerSession
from mcpbind._transports.http.client.streamable import connect_sse, connect_streamable_http
from mcpbind._transports.stdio import ProcessTransport
from mcpbind.http import HttpOptions, http_app
from mcpbind_protocol import v2025_11_25 as mcp

MIB = 1024 * 1024
pytestmark = pytest.mark.usefixtures("no_leaked_processes")


def client(name: str = "faults") -> Client:
    return Client(name=name, version="0")


def text_of(result: mcp.CallToolResult) -> str:
    content = result.content[0]
    assert isinstance(content, mcp.TextContent)
    return content.text


@pytest.fixture
def stderr_file() -> Iterator[Any]:
    with tempfile.TemporaryFile() as handle:
        yield handle


def read_back(handle: Any) -> str:
    handle.seek(0)
    return handle.read().decode("utf-8", "replace")


# ------------------------------------------------------------------ a server killed mid-request


def test_a_stdio_server_killed_mid_request_fails_every_pending_call_at_once() -> None:
    async def scenario() -> dict[str, Any]:
        async with connect_stdio(client(), stdio_server()) as session:
            stub = mcp.ClientStub(session)
            process = cast(ProcessTransport, session.transport).process
            calls = [
                asyncio.ensure_future(
                    stub.call_tool("slow", arguments={"seconds": 60, "token": f"t{i}"})
                )
                for i in range(20)
            ]
            # stdio is ordered: once this is answered, the 20 calls are running.
            assert (
                text_of(await stub.call_tool("echo", arguments={"text": "behind them"}))
                == "behind them"
            )
            started = time.monotonic()
            os.killpg(process.pid, signal.SIGKILL)
            outcomes = await asyncio.wait_for(asyncio.gather(*calls, return_exceptions=True), 10)
            failed_after = time.monotonic() - started
            assert all(isinstance(o, ConnectionClosed) for o in outcomes), outcomes
            assert all(
                "the server process was killed by signal 9" in str(o) for o in outcomes
            ), outcomes[0]
            with pytest.raises(ConnectionClosed):
                await stub.call_tool("echo", arguments={"text": "too late"})
        assert process.returncode == -signal.SIGKILL
        return {
            "pending_calls": len(calls),
            "all_failed_within_s": round(failed_after, 3),
            "error": str(outcomes[0]),
        }

    record("faults.stdio_server_killed", run(scenario()))


def test_an_http_server_killed_mid_request_fails_every_pending_call() -> None:
    """The calls' streams drop; each tries to resume (every 100 ms, the
    server's retry) and gives up after five refused attempts with a clear
    error. Nothing hangs; the server process is gone."""
    with HttpServerProcess("--retry-ms", "100") as server:

        async def scenario() -> dict[str, Any]:
            async with connect_streamable_http(client(), server.url()) as session:
                stub = mcp.ClientStub(session)
                calls = [
                    asyncio.ensure_future(
                        stub.call_tool("slow", arguments={"seconds": 60, "token": f"t{i}"})
                    )
                    for i in range(10)
                ]
                deadline = time.monotonic() + 20
                while (await server.stats())["in_flight"] < len(calls):
                    assert time.monotonic() < deadline, "the calls did not start"
                    await asyncio.sleep(0.05)
                # A POST's stream sends its first event (the id a resumption
                # names) a pass of the event loop after its handler starts: by
                # the server's next answer, every stream has sent it.
                await server.stats()
                started = time.monotonic()
                server.kill()
                outcomes = await asyncio.wait_for(
                    asyncio.gather(*calls, return_exceptions=True), 30
                )
                failed_after = time.monotonic() - started
                for outcome in outcomes:
                    assert (
                        isinstance(outcome, McpError) and outcome.code == jsonrpc.CONNECTION_CLOSED
                    ), outcome
                    assert "gave up resuming the response stream" in outcome.message, outcome
                    assert "(last: Cannot connect to host 127.0.0.1" in outcome.message, outcome
            return {
                "pending_calls": len(calls),
                "all_failed_within_s": round(failed_after, 3),
                "error": outcomes[0].message,
            }

        figures = run(scenario())
        assert server.process.returncode == -signal.SIGKILL
    record("faults.http_server_killed", figures)


# ------------------------------------------------------------------ an SSE stream cut and resumed


def test_a_cut_sse_stream_is_resumed_with_last_event_id_and_loses_nothing() -> None:
    """The client's connection is cut (a TCP proxy aborts it) three times
    while the server sends 60 numbered progress notifications and then the
    result; the client resumes with Last-Event-ID each time. Every number
    arrives exactly once, in order, and so does the result."""
    count, cut_at = 60, (10, 25, 40)
    with serving(http_app(reliability_server(), options=HttpOptions(retry_ms=100))) as server:

        async def scenario() -> dict[str, Any]:
            async with cuttable_proxy(server.port) as proxy:
                async with connect_streamable_http(client(), proxy.url()) as session:
                    stub = mcp.ClientStub(session)
                    received: list[float] = []

                    def on_progress(
                        progress: float, total: float | None, message: str | None
                    ) -> None:
                        received.append(progress)
                        assert message == f"#{int(progress)}"
                        if int(progress) in cut_at:
                            proxy.cut()

                    result = await stub.call_tool(
                        "numbered",
                        arguments={"count": count, "pause": 0.03},
                        on_progress=on_progress,
                        timeout=60,
                    )
                    assert text_of(result) == f"numbered {count}"
                    assert received == list(range(1, count + 1)), received
                    # Resumptions of the call's stream (the GET stream, cut too, resumes as well).
                    (http_session,) = server.app.streamable.sessions.values()
                    standalone = http_session.transport.standalone.id
                    resumed = [
                        h["last-event-id"] for h in server.recorder.matching("GET", "last-event-id")
                    ]
                    of_the_call = [r for r in resumed if not r.startswith(f"{standalone}:")]
                    assert len(of_the_call) >= len(cut_at), resumed
                    return {
                        "notifications": count,
                        "received_exactly_once_in_order": len(received),
                        "cuts": proxy.cuts,
                        "resumptions_of_the_call_stream": len(of_the_call),
                        "resumptions_of_the_get_stream": len(resumed) - len(of_the_call),
                    }

        record("faults.sse_cut_and_resumed", run(scenario()))


# ------------------------------------------------------------------ timeouts cancel the handler


def test_a_timed_out_call_cancels_its_handler_in_memory() -> None:
    async def scenario() -> None:
        handlers = ReliabilityServer()
        ours, theirs = memory_pair("client", "server")
        server = ServerSession(reliability_server(handlers), theirs)
        server.start()
        session = await client().connect(ours)
        try:
            stub = mcp.ClientStub(session)
            with pytest.raises(McpError) as raised:
                await stub.call_tool(
                    "slow", arguments={"seconds": 30, "token": "late"}, timeout=0.3
                )
            assert (
                raised.value.code == jsonrpc.REQUEST_TIMEOUT
                and "timed out after 0.3 s" in raised.value.message
            )
            await eventually(
                lambda: handlers.cancelled == ["late"], what="the handler to see CancelledError"
            )
            assert not server._in_flight and "late" not in handlers.finished
            assert text_of(await stub.call_tool("echo", arguments={"text": "goes on"})) == "goes on"
        finally:
            await session.close()
            await server.close()

    run(scenario())


def test_a_timed_out_call_cancels_its_handler_over_stdio(tmp_path: Path) -> None:
    log = tmp_path / "cancelled.log"

    async def scenario() -> float:
        async with connect_stdio(
            client(), stdio_server(env={"RELIABILITY_CANCEL_LOG": str(log)})
        ) as session:
            stub = mcp.ClientStub(session)
            started = time.monotonic()
            with pytest.raises(McpError) as raised:
                await stub.call_tool(
                    "slow", arguments={"seconds": 30, "token": "late"}, timeout=0.3
                )
            assert raised.value.code == jsonrpc.REQUEST_TIMEOUT
            await eventually(
                lambda: log.exists() and log.read_text() == "cancelled late\n",
                timeout=10,
                what="the cancellation",
            )
            observed = time.monotonic() - started
            assert text_of(await stub.call_tool("echo", arguments={"text": "goes on"})) == "goes on"
            return observed

    record(
        "faults.timeout_cancels_stdio_handler",
        {"timeout_s": 0.3, "handler_cancelled_within_s": round(run(scenario()), 3)},
    )


def test_a_timed_out_call_cancels_its_handler_over_http() -> None:
    handlers = ReliabilityServer()
    with serving(http_app(reliability_server(handlers))) as server:

        async def scenario() -> None:
            async with connect_streamable_http(client(), server.url()) as session:
                stub = mcp.ClientStub(session)
                with pytest.raises(McpError) as raised:
                    await stub.call_tool(
                        "slow", arguments={"seconds": 30, "token": "late"}, timeout=0.3
                    )
                assert raised.value.code == jsonrpc.REQUEST_TIMEOUT
                await eventually(
                    lambda: handlers.cancelled == ["late"],
                    timeout=10,
                    what="the handler to see CancelledError",
                )
                assert (
                    text_of(await stub.call_tool("echo", arguments={"text": "goes on"}))
                    == "goes on"
                )

        run(scenario())


# ------------------------------------------------------------------ over the size limits


def test_a_stdio_message_over_max_message_size_is_refused_and_the_session_goes_on() -> None:
    """Server limit 64 KiB: a 100 KB request is answered with -32600 at once.
    Client limit 16 KiB: a 20 KB response fails its call at once. Neither
    waits for a timeout, and the session goes on."""

    async def scenario() -> dict[str, Any]:
        parameters = stdio_server("--max-message-size", str(64 * 1024))
        async with connect_stdio(client(), parameters, max_message_size=16 * 1024) as session:
            stub = mcp.ClientStub(session)
            started = time.monotonic()
            with pytest.raises(McpError) as too_big_request:
                await stub.call_tool("echo", arguments={"text": "x" * 100_000}, timeout=20)
            assert too_big_request.value.code == jsonrpc.INVALID_REQUEST
            assert (
                "message larger than 65536 bytes (max_message_size)"
                in too_big_request.value.message
            )
            with pytest.raises(McpError) as too_big_response:
                await stub.call_tool("echo", arguments={"text": "y" * 20_000}, timeout=20)
            assert (
                "message larger than 16384 bytes (max_message_size)"
                in too_big_response.value.message
            )
            refused_within = time.monotonic() - started
            assert text_of(await stub.call_tool("echo", arguments={"text": "small"})) == "small"
            return {
                "request_refused": too_big_request.value.message,
                "response_refused": too_big_response.value.message,
                "both_within_s": round(refused_within, 3),
            }

    record("faults.stdio_over_max_message_size", run(scenario()))


def test_an_http_body_over_max_body_size_is_413_and_the_session_goes_on() -> None:
    with serving(
        http_app(reliability_server(), options=HttpOptions(max_body_size=64 * 1024))
    ) as server:

        async def scenario() -> dict[str, Any]:
            figures: dict[str, Any] = {}
            for name, connect, url in (
                ("streamable_http", connect_streamable_http, server.url()),
                ("legacy_sse", connect_sse, server.url("/sse")),
            ):
                async with connect(client(), url) as session:  # type: ignore[operator]
                    stub = mcp.ClientStub(session)
                    with pytest.raises(McpError) as raised:
                        await stub.call_tool("echo", arguments={"text": "x" * 100_000}, timeout=20)
                    assert raised.value.data == {"httpStatus": 413}, raised.value
                    assert "Request body larger than 65536 bytes" in raised.value.message
                    assert (
                        text_of(await stub.call_tool("echo", arguments={"text": "small"}))
                        == "small"
                    )
                    figures[name] = raised.value.message
            return figures

        record("faults.http_over_max_body_size", run(scenario()))


# ------------------------------------------------------------------ clients that never read


def test_a_stdio_peer_that_never_reads_is_dropped_before_the_server_grows_without_bound(
    stderr_file: Any,
) -> None:
    """A peer keeps sending 32 KB echo requests and never reads stdout. The
    answers pile up in the server's write buffer until max_buffered (4 MiB
    here); then the server drops the connection with a logged error and ends.
    Without the bound, the same requests grew the server by 300 MB."""
    limit = 4 * MIB

    async def scenario() -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            str(RELIABILITY_SERVER),
            "stdio",
            "--max-buffered",
            str(limit),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr_file,
        )
        assert process.stdin is not None and process.stdout is not None
        try:
            init = {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "never-reads", "version": "0"},
                },
            }
            process.stdin.write(json.dumps(init).encode() + b"\n")
            assert b'"result"' in await asyncio.wait_for(process.stdout.readline(), 30)
            await asyncio.sleep(0.2)
            baseline = rss_kib(process.pid)
            peak, sent, requests = baseline, 0, 0
            line_of = (
                lambda i: json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "tools/call",
                        "params": {"name": "echo", "arguments": {"text": "z" * 32768}},
                    }
                ).encode()
                + b"\n"
            )
            for i in range(1, 3001):  # at most 96 MB
                try:
                    process.stdin.write(line_of(i))
                    await asyncio.wait_for(process.stdin.drain(), 10)
                except (ConnectionError, asyncio.TimeoutError):
                    break  # the server has gone
                sent, requests = sent + 32768, i
                if i % 16 == 0:
                    try:
                        peak = max(peak, hwm_kib(process.pid))
                    except (OSError, RuntimeError):
                        break  # the process has gone
            # Only now read: what the server wrote before it dropped us, to its end
            # (asyncio's wait() also waits for the pipes to close).
            await asyncio.wait_for(process.stdout.read(), 30)
            status = await asyncio.wait_for(process.wait(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
        assert status == 0
        assert "dropping the connection: the peer is not reading" in read_back(stderr_file)
        growth = (peak - baseline) / 1024
        assert growth < 64, f"the server grew by {growth:.0f} MiB"
        return {
            "max_buffered_mib": limit // MIB,
            "requests_sent_before_drop": requests,
            "request_bytes_sent_mib": round(sent / MIB, 1),
            "server_rss_baseline_mib": round(baseline / 1024, 1),
            "server_peak_rss_growth_mib": round(growth, 1),
            "server_exit_status": status,
        }

    record("faults.stdio_peer_never_reads", run(scenario()))


def _raw_http(
    port: int, method: str, path: str, headers: dict[str, str], body: bytes = b""
) -> bytes:
    lines = [
        f"{method} {path} HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    if body or method == "POST":
        lines.append(f"content-length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


async def _never_reading_connection(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sock = writer.get_extra_info("socket")
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return reader, writer


def test_a_streamable_http_client_that_never_reads_its_stream_is_dropped(stderr_file: Any) -> None:
    """A POST asks for 96 MB of progress notifications (the flood tool) and
    its client never reads the SSE answer. The stream keeps at most
    max_stream_buffer (16 MiB, the default) for replay and drops the
    connection that lets more wait; the server's RSS stays bounded, and the
    session serves the next request."""
    flood = {"count": 3000, "size": 32768}
    with HttpServerProcess(stderr=stderr_file) as server:

        async def scenario() -> dict[str, Any]:
            headers = {
                "accept": "application/json, text/event-stream",
                "content-type": "application/json",
            }
            async with httpx.AsyncClient(timeout=30) as http:
                init = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "never-reads", "version": "0"},
                    },
                }
                answered = await http.post(server.url(), json=init, headers=headers)
                session_id = answered.headers["mcp-session-id"]
                headers = {
                    **headers,
                    "mcp-session-id": session_id,
                    "mcp-protocol-version": "2025-11-25",
                }
                await http.post(
                    server.url(),
                    json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                    headers=headers,
                )
                baseline = await server.stats()
                call = {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {
                        "name": "flood",
                        "arguments": flood,
                        "_meta": {"progressToken": "p"},
                    },
                }
                _, writer = await _never_reading_connection(server.port)
                writer.write(
                    _raw_http(server.port, "POST", "/mcp", headers, json.dumps(call).encode())
                )
                await writer.drain()
                deadline = time.monotonic() + 60
                while True:  # until the handler has sent everything
                    stats = await server.stats()
                    if stats[
                        "in_flight"
                    ] == 0 and "dropping the connection of SSE stream" in read_back(stderr_file):
                        break
                    assert time.monotonic() < deadline, stats
                    await asyncio.sleep(0.2)
                peak = hwm_kib(server.pid)
                growth = (stats["rss_kib"] - baseline["rss_kib"]) / 1024
                assert growth < 48, f"the server holds {growth:.0f} MiB more"
                ping = await http.post(
                    server.url(),
                    json={"jsonrpc": "2.0", "id": 3, "method": "ping"},
                    headers=headers,
                )
                assert ping.status_code == 200 and b'"result":{}' in ping.content
                writer.transport.abort()
            return {
                "flood_mib": round(flood["count"] * flood["size"] / MIB, 1),
                "max_stream_buffer_mib": 16,
                "server_rss_growth_held_mib": round(growth, 1),
                "server_peak_rss_growth_mib": round((peak - baseline["rss_kib"]) / 1024, 1),
            }

        record("faults.streamable_http_client_never_reads", run(scenario()))


def test_a_legacy_sse_client_that_never_reads_its_stream_loses_its_session(
    stderr_file: Any,
) -> None:
    """A legacy client opens GET /sse, reads the endpoint event and nothing
    more, then POSTs 1 MB echo requests. Once more than max_stream_buffer
    waits for its stream the session ends (logged), the POSTs get 404, and
    the server's memory stays bounded."""
    with HttpServerProcess(stderr=stderr_file) as server:

        async def scenario() -> dict[str, Any]:
            reader, writer = await _never_reading_connection(server.port)
            writer.write(_raw_http(server.port, "GET", "/sse", {"accept": "text/event-stream"}))
            head = await asyncio.wait_for(
                reader.readuntil(b"\n\n"), 30
            )  # headers, then the endpoint event
            endpoint = head.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
            baseline = await server.stats()
            statuses: list[int] = []
            async with httpx.AsyncClient(timeout=30) as http:
                message = lambda i: {
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "tools/call",
                    "params": {"name": "echo", "arguments": {"text": "q" * MIB}},
                }
                init = {
                    "jsonrpc": "2.0",
                    "id": 0,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2024-11-05",
                        "capabilities": {},
                        "clientInfo": {"name": "never-reads", "version": "0"},
                    },
                }
                assert (await http.post(server.url(endpoint), json=init)).status_code == 202
                for i in range(1, 81):  # at most 80 MB
                    statuses.append(
                        (await http.post(server.url(endpoint), json=message(i))).status_code
                    )
                    if statuses[-1] == 404:
                        break
                stats = await server.stats()
            writer.transport.abort()
            assert statuses[-1] == 404, statuses
            assert "ending a legacy SSE session: the client does not read its stream" in read_back(
                stderr_file
            )
            growth = (stats["rss_kib"] - baseline["rss_kib"]) / 1024
            assert growth < 48, f"the server holds {growth:.0f} MiB more"
            return {
                "posts_accepted_before_the_session_ended": statuses.count(202),
                "server_rss_growth_held_mib": round(growth, 1),
                "server_peak_rss_growth_mib": round(
                    (hwm_kib(server.pid) - baseline["rss_kib"]) / 1024, 1
                ),
            }

        record("faults.legacy_sse_client_never_reads", run(scenario()))
