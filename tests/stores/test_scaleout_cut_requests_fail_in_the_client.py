"""Requests cut by a worker's death, as our HTTP client sees them behind a real
load balancer (HAProxy, round robin, as in the soak run of the bench): each
call ends with an McpError that has a JSON-RPC code and says what happened,
never a hang and never a raw aiohttp exception, and the client goes on.

* calls in flight (2026-07-28, or of a handshake session with no event yet)
  when their worker dies: HAProxy closes the connection it had used before
  without an answer (McpError -32000, "failed: Server disconnected") and
  answers 502 on a fresh one (McpError -32603 naming the status, the
  balancer's page as words);
* a session call whose worker dies after its priming event: the client
  resumes the stream on the restarted worker and gets the JSON-RPC error
  the survivor writes for a dead worker's request.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.peers import run
from support.redis_server import RedisServer

from bench import soak
from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import CONNECTION_CLOSED, INTERNAL_ERROR, McpError
from mcpbind._transports.http.client.streamable import StreamableHTTPClientTransport
from mcpbind_protocol import v2025_06_18 as handshake
from mcpbind_protocol import v2026_07_28 as modern

pytestmark = [pytest.mark.redis, pytest.mark.peers]


class Deployment:
    """One worker (support.scaleout_app under uvicorn) behind HAProxy, on one redis-server."""

    def __init__(self, redis: RedisServer, worker: soak.Backend, balancer: soak.Balancer) -> None:
        self.redis = redis
        self.worker = worker
        self.balancer = balancer

    def stat(self) -> dict[str, str]:
        """HAProxy's statistics of the worker (its row of ``show stat``)."""
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(self.balancer.socket))
            conn.sendall(b"show stat\n")
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        lines = data.decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        rows = (dict(zip(header, line.split(","), strict=False)) for line in lines[1:])
        return next(row for row in rows if row.get("svname") == self.worker.name)

    def busy(self, requests: int = 1) -> bool:
        """Whether HAProxy has ``requests`` requests open on the worker."""
        return int(self.stat()["scur"] or 0) >= requests

    def answered(self) -> int:
        """Answers of the worker's whose head (status 2xx) HAProxy passed on so far."""
        return int(self.stat()["hrsp_2xx"] or 0)

    def stream_known(self) -> bool:
        """Whether a request stream was made known to Redis (what it answers)."""
        return b":about" in self.redis.command("KEYS", "*:about")

    def freeze(self) -> None:
        """SIGSTOP the worker: connections to it are still accepted (by the
        kernel), and nothing it was sent is read."""
        assert self.worker.process is not None
        os.kill(self.worker.process.pid, signal.SIGSTOP)

    def kill(self) -> None:
        """SIGKILL the worker, as when its machine dies."""
        process = self.worker.process
        assert process is not None
        os.kill(process.pid, signal.SIGKILL)
        process.wait()
        self.worker.process = None

    def back(self) -> None:
        """The worker serving again, and HAProxy sending it requests again."""
        self.worker.start()
        while not self.stat()["status"].startswith("UP"):
            time.sleep(0.1)


@pytest.fixture
def deployment() -> Iterator[Deployment]:
    folder = Path(tempfile.mkdtemp(prefix="mcp-cut-"))
    redis = RedisServer()
    redis.start()
    worker = soak.Backend(0, redis.url, folder / "worker.log")
    balancer = soak.Balancer(soak.find_haproxy(), [worker], folder)
    try:
        worker.start()
        balancer.start()
        yield Deployment(redis, worker, balancer)
    finally:
        balancer.stop()
        worker.stop()
        redis.close()
        shutil.rmtree(folder, ignore_errors=True)


async def until(condition: Callable[[], bool], what: str) -> None:
    for _ in range(600):
        if await asyncio.to_thread(condition):
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


def client_of(version: str) -> Client:
    return Client(name="cut-test", version="0", protocol_version=version)


def transport(deployment: Deployment) -> StreamableHTTPClientTransport:
    # Resumed often enough to outlast the worker's restart behind the balancer.
    return StreamableHTTPClientTransport(deployment.balancer.url, listen=False, max_reconnects=60)


def outcomes(deployment: Deployment, calls: list[asyncio.Future[Any]]) -> list[McpError]:
    """The errors ``calls`` ended with, the one sent on a connection HAProxy
    had used before first (it closes that one without an answer), then the
    one on a fresh connection (answered 502 with HAProxy's page)."""
    errors: list[McpError] = []
    for call in calls:
        assert call.done()
        error = call.exception()
        assert isinstance(error, McpError), repr(error)
        errors.append(error)
    errors.sort(key=lambda error: error.code, reverse=True)
    url = deployment.balancer.url
    cut, refused = errors
    assert (
        cut.code == CONNECTION_CLOSED and cut.message == f"POST {url} failed: Server disconnected"
    )
    assert refused.code == INTERNAL_ERROR and refused.data == {"httpStatus": 502}
    assert refused.message == (
        f"POST {url}: HTTP 502 Bad Gateway: 502 Bad Gateway The server returned an invalid"
        " or incomplete response."  # the balancer's page as words
    )
    return errors


def test_2026_07_28_calls_whose_worker_dies_fail_with_a_clear_error(
    deployment: Deployment,
) -> None:
    """Two calls in flight when their worker dies: one on the connection the
    client already had (HAProxy closes it), one on a new connection (HAProxy
    answers 502); each ends with an McpError, and the client goes on."""

    async def main() -> None:
        session = await client_of("2026-07-28").connect(transport(deployment))
        try:
            stub = modern.ClientStub(session)
            calls = [
                asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 600}))
                for _ in range(2)
            ]
            await until(lambda: deployment.busy(2), "the calls reached the worker")
            await asyncio.to_thread(deployment.kill)
            await asyncio.wait(calls)
            outcomes(deployment, calls)
            await asyncio.to_thread(deployment.back)
            assert (await stub.call_tool("pid", arguments={})).content
        finally:
            await session.close()

    run(main(), timeout=120)


def test_session_calls_whose_worker_dies_before_their_first_event_fail_with_a_clear_error(
    deployment: Deployment,
) -> None:
    """The same for calls of a handshake session that have no event yet (so
    nothing to resume from): the worker is stopped (SIGSTOP) before it reads
    them (its priming event goes out as soon as it does, with no write to
    Redis to wait for)."""

    async def main() -> None:
        session = await client_of("2025-11-25").connect(transport(deployment))
        try:
            stub = handshake.ClientStub(session)
            await asyncio.to_thread(deployment.freeze)
            calls = [
                asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 600}))
                for _ in range(2)
            ]
            await until(lambda: deployment.busy(2), "the calls reached the worker")
            await asyncio.to_thread(deployment.kill)
            await asyncio.wait(calls)
            outcomes(deployment, calls)
        finally:
            await session.close()

    run(main(), timeout=120)


def test_a_session_call_whose_worker_dies_after_its_priming_event_gets_the_json_rpc_error(
    deployment: Deployment,
) -> None:
    """2025-11-25: "If the client wishes to resume after a disconnection
    [...], it SHOULD issue an HTTP GET to the MCP endpoint, and include the
    Last-Event-ID header": our client does, through the balancer, and gets
    the error the restarted worker writes for the dead worker's request."""

    async def main() -> None:
        session = await client_of("2025-11-25").connect(transport(deployment))
        try:
            stub = handshake.ClientStub(session)
            before = await asyncio.to_thread(deployment.answered)
            call = asyncio.ensure_future(stub.call_tool("sleep", arguments={"seconds": 600}))
            await until(deployment.stream_known, "the stream was made known to Redis")
            # The head of the answer goes out with its priming event.
            await until(lambda: deployment.answered() > before, "its priming event went out")
            await asyncio.to_thread(deployment.kill)
            await asyncio.to_thread(deployment.back)
            with pytest.raises(McpError) as failed:
                await call
            error = failed.value
            assert error.code == INTERNAL_ERROR
            assert error.message == (
                "the server worker running this request stopped before answering it;"
                " send the request again"
            )
            assert (await stub.call_tool("pid", arguments={})).content  # the client goes on
        finally:
            await session.close()

    run(main(), timeout=120)
