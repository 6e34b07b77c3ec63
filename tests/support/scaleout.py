"""Our server as several uvicorn worker processes on one port, sharing a real
redis-server, and a raw HTTP client for it (httpx, not our client: the tests
look at the wire).

Requests land on whichever worker accepts the connection; each request here
uses a fresh connection so that they spread over the workers.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

import httpx

from support.everything_http import free_port
from support.peers import REPO, TESTS
from support.redis_server import RedisServer

_ids = itertools.count()
# The first revision whose streams start with a priming event (resumption tests resume from it).
HANDSHAKE = "2025-11-25"
MODERN = "2026-07-28"
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"


class RedisDeployment(Protocol):
    """What the workers need of a Redis the tests started: the URL they share."""

    @property
    def url(self) -> str: ...


class Workers:
    """``uvicorn --workers n`` serving support.scaleout_app on a free port."""

    def __init__(
        self,
        redis: RedisDeployment | None,
        workers: int = 2,
        store: str = "redis",
        quotas: str = "",
        trusted_proxies: str = "",
        handlers: str = "",
    ) -> None:
        """``quotas``: "sessions,streams,requests,lease ttl" per client;
        ``trusted_proxies``: comma-separated; ``handlers``: "2025-11-25" for
        handlers of that revision (see scaleout_app)."""
        self.trusted_proxies = trusted_proxies
        self.handlers = handlers
        self.redis = redis
        self.quotas = quotas
        self.workers = workers
        self.store = store
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="mcp-workers-", suffix=".log")  # noqa: SIM115

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def output(self) -> str:
        """What the workers wrote to stderr so far."""
        return Path(self.log.name).read_text(errors="replace")

    def start(self, timeout: float = 60.0) -> None:
        env = {
            **os.environ,
            # The tests' helpers, then the tree under test (not whatever is installed).
            "PYTHONPATH": os.pathsep.join(
                [str(TESTS), *(str(REPO / part) for part in ("codegen", "generated", "runtime"))]
            ),
            "MCP_TEST_STORE": self.store,
            "MCP_TEST_QUOTAS": self.quotas,
            "MCP_TEST_TRUSTED_PROXIES": self.trusted_proxies,
            "MCP_TEST_HANDLERS": self.handlers,
        }
        if self.redis is not None:
            env["MCP_TEST_REDIS_URL"] = self.redis.url
        command = [
            sys.executable, "-m", "uvicorn", "support.scaleout_app:app", "--factory",
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", str(self.workers),
            "--log-level", "warning", "--timeout-graceful-shutdown", "1",
        ]  # fmt: skip
        if self.trusted_proxies:
            # uvicorn believes X-Forwarded-For from 127.0.0.1 by itself: off, so
            # that the app's own trusted_proxies decide alone.
            command.append("--no-proxy-headers")
        self.process = subprocess.Popen(
            command, env=env, cwd=TESTS, start_new_session=True, stderr=self.log
        )
        deadline = time.monotonic() + timeout
        seen: set[int] = set()
        # Up once every worker has answered (the first one up takes everything until the others are).
        while time.monotonic() < deadline and len(seen) < self.workers:
            if self.process.poll() is not None:
                raise RuntimeError(f"uvicorn exited with {self.process.returncode}")
            try:
                seen.add(self.legacy_pid() if self.handlers else self.stateless_pid())
            except httpx.HTTPError:
                time.sleep(0.1)
        if len(seen) < self.workers:
            raise RuntimeError(f"only {len(seen)} of {self.workers} workers answered")

    def stateless_pid(self) -> int:
        result = modern_call(self.url, 1, "pid", {})
        return int(result["content"][0]["text"])

    def legacy_pid(self) -> int:
        """The worker answering a legacy POST (for an unknown session: 404, which names it)."""
        with httpx.Client(timeout=30) as client:
            answer = client.post(self.url.removesuffix("/mcp") + "/messages?session_id=none")
        return int(answer.headers["x-worker"])

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.process = None
            self.log.close()


class Worker:
    """One ``uvicorn`` worker on a port of its own, serving the app factory
    ``target``: requests go to the worker chosen (the app is the same on all)."""

    def __init__(self, redis: RedisServer, target: str) -> None:
        self.redis = redis
        self.target = target
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.log = tempfile.NamedTemporaryFile(prefix="mcp-worker-", suffix=".log")  # noqa: SIM115

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def output(self) -> str:
        return Path(self.log.name).read_text(errors="replace")

    def start(self, timeout: float = 60.0) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(TESTS), *(str(REPO / part) for part in ("codegen", "generated", "runtime"))]
            ),
            "MCP_TEST_REDIS_URL": self.redis.url,
        }
        command = [
            sys.executable, "-m", "uvicorn", self.target, "--factory", "--host", "127.0.0.1",
            "--port", str(self.port), "--log-level", "warning", "--timeout-graceful-shutdown", "1",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            command, env=env, cwd=TESTS, start_new_session=True, stderr=self.log
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"uvicorn exited with {self.process.returncode}: {self.output()}"
                )
            try:
                modern_request(self.url, 0, "tools/list", {})
                return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the worker did not answer")

    def stop(self) -> None:
        """SIGTERM: a graceful stop (listen streams get their result)."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
            self.process = None


@contextlib.contextmanager
def deployment(workers: int = 2, quotas: str = "") -> Iterator[tuple[RedisServer, Workers]]:
    redis = RedisServer()
    redis.start()
    cluster = Workers(redis, workers, quotas=quotas)
    try:
        cluster.start()
        yield redis, cluster
    finally:
        cluster.stop()
        redis.close()


# ---------------------------------------------------------------- raw client


def sse_events(body: str) -> list[tuple[str | None, Any]]:
    """(id, decoded data) of each SSE event with data; the priming event's data is None."""
    events: list[tuple[str | None, Any]] = []
    for block in body.split("\n\n"):
        event_id, data = None, []
        for line in block.split("\n"):
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if event_id is not None or data:
            text = "\n".join(data)
            events.append((event_id, json.loads(text) if text else None))
    return events


def post(
    url: str,
    message: dict[str, Any],
    session: str | None = None,
    version: str = HANDSHAKE,
    **extra: str,
) -> httpx.Response:
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        **extra,
    }
    if session is not None:
        headers["mcp-session-id"] = session
        headers["mcp-protocol-version"] = version
    with httpx.Client(timeout=30) as client:  # a fresh connection: any worker may take it
        return client.post(url, content=json.dumps(message), headers=headers)


def initialize(url: str, capabilities: dict[str, Any] | None = None) -> str:
    params = {
        "protocolVersion": HANDSHAKE,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "scaleout-test", "version": "1"},
    }
    answer = post(url, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    note = post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    assert note.status_code == 202, note.text
    return session


def result_of(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, (answer.status_code, answer.text)
    for _, data in (
        sse_events(answer.text)
        if answer.headers["content-type"].startswith("text/event-stream")
        else [(None, answer.json())]
    ):
        if isinstance(data, dict) and "id" in data and ("result" in data or "error" in data):
            return data
    raise AssertionError(f"no response in {answer.text!r}")


def call(url: str, session: str, request_id: int, tool: str, arguments: dict[str, Any]) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    return result_of(post(url, message, session))


def modern_meta(extensions: bool = False) -> dict[str, Any]:
    capabilities: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}} if extensions else {}
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "scaleout-test", "version": "1"},
    }


def modern_request(
    url: str,
    request_id: int,
    method: str,
    params: dict[str, Any],
    name: str | None = None,
    extensions: bool = False,
) -> Any:
    headers = {"mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    # Ids unique to this test process: the server refuses an id one of the
    # client's requests still holds, and a request's end is not its answer's.
    unique = f"{request_id}-{next(_ids)}"
    body = {
        "jsonrpc": "2.0",
        "id": unique,
        "method": method,
        "params": {**params, "_meta": modern_meta(extensions)},
    }
    answer = post(url, body, **headers)
    return answer


def modern_call(
    url: str, request_id: int, tool: str, arguments: dict[str, Any], extensions: bool = False
) -> Any:
    answer = modern_request(
        url, request_id, "tools/call", {"name": tool, "arguments": arguments}, tool, extensions
    )
    data = result_of(answer)
    assert "result" in data, data
    return data["result"]


class SseReader:
    """One SSE response read event by event (a streaming httpx request on its own connection)."""

    def __init__(
        self, method: str, url: str, headers: dict[str, str], body: dict[str, Any] | None = None
    ) -> None:
        self.client = httpx.Client(timeout=httpx.Timeout(30, read=20))
        content = None if body is None else json.dumps(body)
        self.response = self.client.send(
            self.client.build_request(method, url, headers=headers, content=content), stream=True
        )
        self.lines = self.response.iter_lines()
        self.last_id: str | None = None

    def next(self) -> tuple[str | None, Any]:
        """The next event with data (its id and decoded data); StopIteration at the end."""
        event_id, data = None, []
        for line in self.lines:
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
            elif line == "" and (data or event_id is not None):
                text = "\n".join(data)
                if event_id is not None:
                    self.last_id = event_id
                if text:
                    return event_id, json.loads(text)
                event_id, data = None, []
        raise StopIteration

    def rest(self) -> list[tuple[str | None, Any]]:
        """Every event up to the end of the stream; then closed."""
        events = []
        try:
            while True:
                events.append(self.next())
        except StopIteration:
            pass
        finally:
            self.close()
        return events

    def close(self) -> None:
        self.response.close()
        self.client.close()


def session_headers(session: str) -> dict[str, str]:
    return {"accept": "application/json, text/event-stream", "content-type": "application/json",
            "mcp-session-id": session, "mcp-protocol-version": HANDSHAKE}  # fmt: skip


def on_both_workers(request: Callable[[int], str], least: int = 6, most: int = 400) -> list[str]:
    """Call ``request(n)`` (which answers a worker's pid) until both workers
    have answered and at least ``least`` times; the pids, in order. Which worker
    accepts a connection is the kernel's choice: on a loaded machine one worker can win
    many accepts in a row, so the bound is generous."""
    pids: list[str] = []
    while len(set(pids)) < 2 or len(pids) < least:
        assert len(pids) < most, f"every request of {len(pids)} landed on one worker"
        pids.append(request(len(pids) + 1))
    return pids
