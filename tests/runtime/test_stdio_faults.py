"""Bad input and faults over a real stdio server process (tests/support/lowlevel_server.py):
every bad message gets its JSON-RPC error and the session goes on; a crashing
server fails the calls waiting on it at once; closing a client always ends the
server process."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from support.peers import (
    LAUNCHER,
    LOWLEVEL_SERVER,
    STUBBORN_SERVER,
    live_children,
    lowlevel_server,
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    run,
)
from support.rawstdio import RawServer

from mcpbind._client.client import Client, ClientSession, connect_stdio
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import ConnectionClosed, McpError
from mcpbind._transports.stdio import ProcessTransport, StdioServerParameters
from mcpbind_protocol import v2025_11_25 as mcp

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


def client() -> Client:
    return Client(name="fault-tests", version="0")


def process_of(session: ClientSession) -> asyncio.subprocess.Process:
    transport = cast(ProcessTransport, session.transport)
    return transport.process


async def ping_works(server: RawServer, request_id: Any) -> None:
    assert await server.request(request_id, "ping") == {
        "jsonrpc": "2.0",
        "id": request_id,
        "result": {},
    }


async def started(stderr: Any = asyncio.subprocess.DEVNULL) -> RawServer:
    server = await RawServer.start([sys.executable, str(LOWLEVEL_SERVER)], stderr=stderr)
    await server.initialize()
    return server


# ------------------------------------------------------------------ bad input


def test_malformed_json_gets_a_parse_error_and_the_session_goes_on() -> None:
    async def scenario() -> None:
        server = await started()
        for garbage in (
            b'{"jsonrpc":"2.0","id":',
            b"{not json}",
            b"\xff\xfe\x00",
            b'{"jsonrpc":"2.0"} trailing',
        ):
            await server.send(garbage)
            error = await server.receive()
            assert error["id"] is None, garbage
            assert error["error"]["code"] == jsonrpc.PARSE_ERROR, (garbage, error)
            await ping_works(server, f"after {garbage!r}")
        tools = await server.request(1, "tools/list")
        assert "echo" in [tool["name"] for tool in tools["result"]["tools"]]
        assert await server.close() == 0

    run(scenario())


def test_json_that_is_not_a_request_gets_invalid_request() -> None:
    async def scenario() -> None:
        server = await started()
        cases: list[tuple[bytes, Any]] = [
            (b"42", None),
            (b'"ping"', None),
            (b"null", None),
            (b"[]", None),
            (b"[1, 2]", None),
            (b'{"method": "ping", "id": 1}', 1),  # no "jsonrpc"
            (b'{"jsonrpc": "1.0", "method": "ping", "id": 2}', 2),
            (b'{"jsonrpc": "2.0"}', None),
            (b'{"jsonrpc": "2.0", "id": 3}', 3),  # neither method nor result nor error
            (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None),
            (b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}', None),
            (b'{"jsonrpc": "2.0", "id": 4, "method": 17}', None),
        ]
        for message, expected_id in cases:
            await server.send(message)
            error = await server.receive()
            assert error.get("error", {}).get("code") == jsonrpc.INVALID_REQUEST, (message, error)
            assert error["id"] == expected_id, (message, error)
            assert error["jsonrpc"] == "2.0"
        await ping_works(server, "still here")
        assert await server.close() == 0

    run(scenario())


def test_an_unknown_method_gets_method_not_found() -> None:
    async def scenario() -> None:
        server = await started()
        answer = await server.request(10, "tools/frobnicate", {})
        assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        assert "tools/frobnicate" in answer["error"]["message"]
        # A method of the revision the server does not implement: also -32601.
        answer = await server.request(11, "resources/subscribe", {"uri": "memo://readme"})
        assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        # Unknown notifications are ignored, not answered.
        await server.send({"jsonrpc": "2.0", "method": "notifications/frobnicated"})
        await ping_works(server, 12)
        assert await server.close() == 0

    run(scenario())


@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        ("tools/call", {"name": 5}, "$.name"),
        ("tools/call", {"name": "echo", "arguments": [1, 2]}, "$.arguments"),
        ("resources/read", {"uri": ["memo://readme"]}, "$.uri"),
        ("resources/read", {}, "`uri`"),
        ("prompts/get", {"name": "review", "arguments": {"code": 1}}, "$.arguments[...]"),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt"}, "argument": {"name": "a", "value": "b"}},
            "$.ref",
        ),
        (
            "completion/complete",
            {"ref": {"type": "ref/prompt", "name": "review"}, "argument": {"name": "a"}},
            "$.argument",
        ),
        ("logging/setLevel", {"level": "loud"}, "$.level"),
        ("tools/call", None, "params are required"),
    ],
)
def test_params_failing_the_generated_type_get_invalid_params_with_the_field_path(
    method: str, params: Any, path: str
) -> None:
    async def scenario() -> None:
        server = await started()
        answer = await server.request(20, method, params)
        assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, answer
        assert path in answer["error"]["message"], answer
        assert method in answer["error"]["message"]
        await ping_works(server, 21)
        assert await server.close() == 0

    run(scenario())


def test_a_handler_exception_is_an_internal_error_without_traceback_on_the_wire(
    tmp_path: Path,
) -> None:
    stderr_path = tmp_path / "stderr.txt"

    async def scenario() -> None:
        with stderr_path.open("wb") as stderr:
            server = await started(stderr)
            await server.send(
                {"jsonrpc": "2.0", "id": 30, "method": "tools/call", "params": {"name": "fail"}}
            )
            line = await server.receive_line()
            answer = await server.request(
                31, "tools/call", {"name": "echo", "arguments": {"text": "ok"}}
            )
            assert answer["result"]["content"] == [{"type": "text", "text": "ok"}]
            assert await server.close() == 0
        assert (
            line
            == b'{"jsonrpc":"2.0","id":30,"error":{"code":-32603,"message":"Internal error"}}\n'
        )

    run(scenario())
    # The details went to the server's stderr, where its operator can see them.
    log = stderr_path.read_text()
    assert "Traceback" in log and "RuntimeError: the fail tool failed" in log


def test_errors_reach_our_client_as_mcp_errors() -> None:
    async def scenario() -> None:
        async with connect_stdio(client(), lowlevel_server()) as session:
            server = mcp.ClientStub(session)
            with pytest.raises(McpError) as failed:
                await server.call_tool("fail")
            assert (
                failed.value.code == jsonrpc.INTERNAL_ERROR
                and failed.value.message == "Internal error"
            )
            with pytest.raises(McpError) as missing:
                await server.read_resource("memo://nothing")
            assert missing.value.code == jsonrpc.INVALID_PARAMS
            assert missing.value.data == {"uri": "memo://nothing"}
            assert (await server.call_tool("echo", arguments={"text": "still"})).content[
                0
            ].text == "still"

    run(scenario())


def test_stray_output_of_server_code_does_not_corrupt_the_message_stream() -> None:
    async def scenario() -> None:
        server = await RawServer.start([sys.executable, str(STUBBORN_SERVER), "ignore-eof"])
        await server.initialize()
        answer = await server.request(1, "tools/call", {"name": "scribble"})
        assert answer["result"]["content"] == [{"type": "text", "text": "scribbled"}]
        await ping_works(server, 2)
        server.process.kill()
        await server.process.wait()

    run(scenario())


# ------------------------------------------------------------------ the server dies


def test_a_server_that_crashes_mid_request_fails_every_pending_call_promptly() -> None:
    async def scenario() -> None:
        async with connect_stdio(client(), lowlevel_server()) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)
            sleeping = [
                asyncio.create_task(server.call_tool("sleep", arguments={"seconds": 60}))
                for _ in range(3)
            ]
            await server.ping()  # the sleeps have reached the server
            started_at = time.monotonic()
            with pytest.raises(ConnectionClosed):
                await server.call_tool("crash")
            outcomes = await asyncio.gather(*sleeping, return_exceptions=True)
            assert all(isinstance(o, ConnectionClosed) for o in outcomes), outcomes
            assert all(o.code == jsonrpc.CONNECTION_CLOSED and "closed" in o.message for o in outcomes)  # type: ignore[union-attr]
            assert time.monotonic() - started_at < 10
            assert session.is_closed
            with pytest.raises(ConnectionClosed):
                await server.ping()
            assert await asyncio.wait_for(process.wait(), 10) == 3
        assert not pid_alive(process.pid)

    run(scenario())


def test_a_server_killed_from_outside_fails_pending_calls() -> None:
    async def scenario() -> None:
        async with connect_stdio(client(), lowlevel_server()) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)
            sleeping = asyncio.create_task(server.call_tool("sleep", arguments={"seconds": 60}))
            await server.ping()
            process.kill()
            with pytest.raises(ConnectionClosed) as closed:
                await sleeping
            assert closed.value.code == jsonrpc.CONNECTION_CLOSED
            assert await process.wait() == -signal.SIGKILL
        assert not pid_alive(process.pid)

    run(scenario())


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    async def scenario() -> None:
        parameters = StdioServerParameters(command="/nonexistent/mcp-server")
        with pytest.raises(McpError) as error:
            async with connect_stdio(client(), parameters):
                pass
        assert error.value.code == jsonrpc.CONNECTION_CLOSED
        assert "/nonexistent/mcp-server" in error.value.message

    run(scenario())


def test_a_server_that_exits_before_answering_initialize_fails_the_connect() -> None:
    async def scenario() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=["-c", "import sys; sys.exit(5)"]
        )
        with pytest.raises(ConnectionClosed):
            async with connect_stdio(client(), parameters):
                pass

    run(scenario())


def test_a_server_that_never_answers_initialize_is_stopped_when_connect_gives_up() -> None:
    async def scenario() -> None:
        before = live_children()
        parameters = StdioServerParameters(
            command=sys.executable,
            args=["-c", "import time; time.sleep(600)"],
            terminate_timeout=0.5,
        )
        with pytest.raises(McpError) as timed_out:
            async with connect_stdio(
                Client(name="fault-tests", version="0", default_timeout=0.5), parameters
            ):
                pass
        assert timed_out.value.code == jsonrpc.REQUEST_TIMEOUT
        assert live_children() - before == set()

    run(scenario())


# ------------------------------------------------------------------ closing the client


def test_closing_the_client_closes_stdin_and_the_server_exits_by_itself() -> None:
    async def scenario() -> None:
        # A long grace period: were a signal needed, the exit status would say so.
        parameters = replace(lowlevel_server(), terminate_timeout=30)
        async with connect_stdio(client(), parameters) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)
            sleeping = asyncio.create_task(server.call_tool("sleep", arguments={"seconds": 60}))
            await server.ping()
        # Leaving the block ended the session: the pending call failed, and the
        # server saw end-of-input and exited cleanly, by itself.
        with pytest.raises(ConnectionClosed):
            await sleeping
        assert process.returncode == 0
        assert not pid_alive(process.pid)

    run(scenario())


@pytest.mark.parametrize(
    ("mode", "status"), [("ignore-eof", -signal.SIGTERM), ("ignore-term", -signal.SIGKILL)]
)
def test_closing_the_client_terminates_then_kills_a_server_that_stays(
    mode: str, status: int
) -> None:
    async def scenario() -> None:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=[str(STUBBORN_SERVER), mode],
            stderr=asyncio.subprocess.DEVNULL,
            terminate_timeout=0.5,
        )
        async with connect_stdio(client(), parameters) as session:
            process = process_of(session)
            assert session.server_info.name == "stubborn"
            await mcp.ClientStub(session).ping()
        assert process.returncode == status
        assert not pid_alive(process.pid)

    run(scenario())


def test_closing_the_client_ends_a_hung_server_that_no_longer_reads_its_stdin() -> None:
    async def scenario() -> None:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=[str(STUBBORN_SERVER), "ignore-eof"],
            stderr=asyncio.subprocess.DEVNULL,
            terminate_timeout=0.5,
        )
        async with connect_stdio(client(), parameters) as session:
            process = process_of(session)
            server = mcp.ClientStub(session)
            with pytest.raises(McpError) as hung:
                await server.call_tool("hang", timeout=0.5)
            assert hung.value.code == jsonrpc.REQUEST_TIMEOUT
            # More than the pipe holds: the write cannot complete, and the
            # call's timeout still applies while it waits.
            with pytest.raises(McpError) as stuck:
                await server.call_tool("echo", arguments={"text": "x" * 4_000_000}, timeout=0.5)
            assert stuck.value.code == jsonrpc.REQUEST_TIMEOUT
            started_at = time.monotonic()
        assert process.returncode == -signal.SIGTERM
        assert time.monotonic() - started_at < 5
        assert not pid_alive(process.pid)

    run(scenario(), timeout=30)


@pytest.mark.parametrize("mode", ["ignore-eof", "ignore-term"])
def test_closing_the_client_also_ends_a_server_started_through_a_launcher(mode: str) -> None:
    """Like ``npx server``: the server is a grandchild; stopping only the
    launcher would leave it running."""

    async def scenario() -> None:
        parameters = StdioServerParameters(
            command=sys.executable,
            args=[str(LAUNCHER), sys.executable, str(STUBBORN_SERVER), mode],
            stderr=asyncio.subprocess.DEVNULL,
            terminate_timeout=0.5,
        )
        async with connect_stdio(client(), parameters) as session:
            launcher = process_of(session)
            answer = await mcp.ClientStub(session).call_tool("pid")
            server_pid = int(answer.content[0].text)  # type: ignore[union-attr]
            assert server_pid != launcher.pid and pid_alive(server_pid)
        assert launcher.returncode is not None
        assert not pid_alive(launcher.pid)
        survived = pid_alive(server_pid)
        if survived:
            os.kill(server_pid, signal.SIGKILL)
        assert not survived, "the server outlived the client that started it"

    run(scenario())
