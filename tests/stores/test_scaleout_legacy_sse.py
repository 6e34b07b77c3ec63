"""The legacy HTTP+SSE transport (2024-11-05) on a deployment of several workers
sharing Redis: a session's POSTs may land on any worker; the worker holding its
stream takes each one before the POST is answered, and every response arrives on
the stream once. A session whose worker died is refused with a clear error, an
unknown one at once; a client's streams are counted on every worker."""

from __future__ import annotations

import json
import os
import signal
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import mcp as sdk
import pytest
from mcp.client.sse import sse_client
from support.peers import run
from support.redis_server import RedisServer
from support.scaleout import Workers, deployment, on_both_workers

from mcpbind._core import jsonrpc

pytestmark = pytest.mark.redis

LEGACY = "2024-11-05"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Workers]:
    with deployment() as (_, workers):
        yield workers


def origin(workers: Workers) -> str:
    return f"http://127.0.0.1:{workers.port}"


class LegacyStream:
    """A ``GET /sse`` held open on its own connection, read event by event."""

    def __init__(self, base: str, headers: dict[str, str] | None = None) -> None:
        self.client = httpx.Client(timeout=httpx.Timeout(30, read=20))
        request = self.client.build_request("GET", f"{base}/sse", headers=headers)
        self.response = self.client.send(request, stream=True)
        self.status = self.response.status_code
        self.worker = self.response.headers.get("x-worker", "")
        self.text = ""
        self.lines = self.response.iter_lines()
        self.endpoint = ""
        if self.status == 200:
            kind, data = self.event()
            assert kind == "endpoint", (kind, data)
            self.endpoint = base + data
        else:
            self.text = self.response.read().decode()

    def event(self) -> tuple[str, str]:
        kind, data = "message", []
        for line in self.lines:
            if line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and data:
                return kind, "\n".join(data)
        raise AssertionError("the stream ended")

    def message(self) -> Any:
        kind, data = self.event()
        assert kind == "message", (kind, data)
        return json.loads(data)

    def close(self) -> None:
        self.response.close()
        self.client.close()


def send(
    endpoint: str, message: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx.Response:
    """POST one message on a fresh connection (so that it may land on either worker)."""
    with httpx.Client(timeout=30) as client:
        return client.post(
            endpoint,
            content=json.dumps(message),
            headers={"content-type": "application/json", **(headers or {})},
        )


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params or {}}


def handshake(stream: LegacyStream) -> None:
    init = request(0, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                     "clientInfo": {"name": "legacy-scaleout", "version": "1"}})  # fmt: skip
    assert send(stream.endpoint, init).status_code == 202
    answer = stream.message()
    assert answer["id"] == 0 and answer["result"]["protocolVersion"] == LEGACY, answer
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert send(stream.endpoint, initialized).status_code == 202


def test_posts_landing_on_any_worker_are_answered_once_on_the_stream(cluster: Workers) -> None:
    """2024-11-05, Transports: "the client MUST send all subsequent messages as HTTP
    POST requests to the [endpoint]"; "server messages are sent as SSE message events"."""
    stream = LegacyStream(origin(cluster))
    try:
        assert stream.status == 200, stream.text
        handshake(stream)
        ran_on: set[str] = set()

        def call_pid(n: int) -> str:
            posted = send(
                stream.endpoint, request(n, "tools/call", {"name": "pid", "arguments": {}})
            )
            assert posted.status_code == 202, (posted.status_code, posted.text)
            answer = stream.message()  # the next message on the stream is this request's answer
            assert answer["id"] == n, answer
            ran_on.add(answer["result"]["content"][0]["text"])
            return posted.headers["x-worker"]

        landed = on_both_workers(call_pid)
        assert set(landed) >= {stream.worker}
        # Every request ran in the session, on the worker holding its stream.
        assert ran_on == {stream.worker}
        # Nothing came twice: the next message is the answer to the next request.
        last = len(landed) + 1
        assert send(stream.endpoint, request(last, "ping")).status_code == 202
        assert stream.message() == {"jsonrpc": "2.0", "id": last, "result": {}}
    finally:
        stream.close()


def test_a_handler_reads_the_headers_of_its_post_on_whichever_worker_it_landed(
    cluster: Workers,
) -> None:
    """A POST handed over to the worker holding the stream brings its headers:
    the handler's ``ctx.extra.headers`` are the POST's, not the stream's."""
    stream = LegacyStream(origin(cluster))
    try:
        assert stream.status == 200, stream.text
        handshake(stream)

        def call_header(n: int) -> str:
            call = request(n, "tools/call", {"name": "header", "arguments": {}})
            posted = send(stream.endpoint, call, {"x-probe": f"probe-{n}"})
            assert posted.status_code == 202, (posted.status_code, posted.text)
            answer = stream.message()
            assert answer["id"] == n, answer
            assert answer["result"]["content"][0]["text"] == f"probe-{n}", answer
            return posted.headers["x-worker"]

        assert len(set(on_both_workers(call_header))) == 2
    finally:
        stream.close()


def test_an_unknown_session_is_refused_on_every_worker_at_once(cluster: Workers) -> None:
    endpoint = f"{origin(cluster)}/messages?session_id={'0' * 32}"

    def refused(n: int) -> str:
        answer = send(endpoint, request(n, "ping"))
        assert answer.status_code == 404, (answer.status_code, answer.text)
        return answer.headers["x-worker"]

    on_both_workers(refused)


@pytest.fixture
def older_handlers() -> Iterator[Workers]:
    """Two workers serving handlers of 2025-11-25, the revision the SDK asks for."""
    redis = RedisServer()
    redis.start()
    workers = Workers(redis, handlers="2025-11-25")
    try:
        workers.start()
        yield workers
    finally:
        workers.stop()
        redis.close()


def test_the_official_sdk_sse_client_lists_and_calls_across_workers(
    older_handlers: Workers,
) -> None:
    landed: list[str] = []

    async def record(response: httpx2.Response) -> None:
        if response.request.method == "POST":
            landed.append(response.headers.get("x-worker", ""))

    def fresh_connections(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        # No keep-alive: each POST a new connection, which either worker may accept.
        return httpx2.AsyncClient(
            headers=headers,
            timeout=timeout or httpx2.Timeout(30, read=60),
            auth=auth,
            limits=httpx2.Limits(max_keepalive_connections=0),
            event_hooks={"response": [record]},
        )

    async def main() -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with (
                sse_client(
                    f"{origin(older_handlers)}/sse", httpx_client_factory=fresh_connections
                ) as (
                    read,
                    write,
                ),
                sdk.ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                assert "pid" in {tool.name for tool in listed.tools}
                calls = 0
                while len(set(landed)) < 2 or calls < 6:
                    assert calls < 400, f"every POST of {calls} landed on one worker"
                    result = await session.call_tool("pid", {})
                    assert not result.is_error, result
                    calls += 1

    run(main())


def test_a_session_whose_worker_died_gets_a_clear_error() -> None:
    redis = RedisServer()
    redis.start()
    workers = Workers(redis)
    try:
        workers.start()
        stream = LegacyStream(origin(workers))
        assert stream.status == 200, stream.text
        handshake(stream)
        os.kill(int(stream.worker), signal.SIGKILL)
        stream.close()

        def refused(n: int) -> str:
            try:
                answer = send(stream.endpoint, request(n, "ping"))
            except httpx.HTTPError:
                return ""  # uvicorn is starting a new worker
            assert answer.status_code == 503, (answer.status_code, answer.text)
            error = answer.json()
            assert error["id"] == n and error["error"]["code"] == jsonrpc.INTERNAL_ERROR, error
            assert "did not take the message" in error["error"]["message"], error
            return answer.headers["x-worker"]

        assert any(refused(n) for n in range(1, 50))
    finally:
        workers.stop()
        redis.close()


def test_a_clients_legacy_streams_are_counted_on_every_worker() -> None:
    """One client (a forwarded address) holds at most max_streams_per_client streams
    app-wide, whichever worker each landed on; another client is still served."""
    redis = RedisServer()
    redis.start()
    # Per client: 100 sessions, 2 streams, 100 requests; leases live 3 s.
    workers = Workers(redis, quotas="100,2,100,3", trusted_proxies="127.0.0.1")
    held: list[LegacyStream] = []
    try:
        workers.start()
        base = origin(workers)
        first = {"x-forwarded-for": "203.0.113.1"}
        held = [LegacyStream(base, first) for _ in range(2)]
        assert [stream.status for stream in held] == [200, 200]

        def refused(_: int) -> str:
            attempt = LegacyStream(base, first)
            attempt.close()
            assert attempt.status == 429 and "for this client" in attempt.text, attempt.text
            return attempt.worker

        on_both_workers(refused)
        other = LegacyStream(base, {"x-forwarded-for": "203.0.113.2"})
        held.append(other)
        assert other.status == 200, other.text
        handshake(other)
    finally:
        for stream in held:
            stream.close()
        workers.stop()
        redis.close()
