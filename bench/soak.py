"""Soak: our server as 2 and 4 uvicorn workers behind HAProxy (round robin,
no sticky sessions) on one redis-server, under a mixed load at many requests
in flight, while one worker is SIGKILLed and restarted and Redis is restarted.

Each worker is its own ``uvicorn`` process (support.scaleout_app, uvloop and
httptools) on its own port, so that one can be killed and started again on
the same port; HAProxy (the Debian package, installed with apt-get when
missing and run as root) spreads every request over them, a dead one taken
out by its health check. Redis is restarted gracefully (a snapshot written at
``SHUTDOWN``, loaded when it starts again), as an operator restarts it.

The load: ``requests`` requests at ``in_flight`` at once, of five kinds drawn
at random (aiohttp, one process):

* ``session``: ``tools/call count`` (two log messages, then the result) in one
  of 64 handshake sessions, answered over SSE; a stream cut by the worker's
  death is resumed with ``Last-Event-ID`` through the balancer;
* ``resume``: the same with four log messages, the stream closed by the
  client after its first event and resumed with ``Last-Event-ID``;
* ``modern``: a 2026-07-28 ``tools/call pid``;
* ``task``: a 2026-07-28 ``tools/call wait_job`` made a task, then
  ``tasks/get`` until it is completed;
* ``listen``: a 2026-07-28 ``subscriptions/listen`` until it is acknowledged.

Checked for each: answered exactly once, or ended with an error; never past
its timeout; no response, log message or task result twice. An error is
counted under its cause, and each cause under the way a client sees it end
(``ending``): a JSON-RPC error the server sent; an error our HTTP client
reports for a request the balancer could not hand to any worker, or whose
connection was cut with no way to resume it (a 2026-07-28 request, a session
request before its first event); or neither. Redis commands come from ``INFO commandstats`` (summed over
the restart), round trips from a counter in each worker (every command or
pipeline sent; support.scaleout_app ``trips``), connections per worker from
``CLIENT LIST`` (each worker names its Redis connections) and HAProxy's
statistics.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import itertools
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import aiohttp
import httpx

from . import processes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
_redis_server: Any = importlib.import_module("support.redis_server")
_scaleout: Any = importlib.import_module("support.scaleout")
_peers: Any = importlib.import_module("support.peers")
_everything: Any = importlib.import_module("support.everything_http")
RedisServer = _redis_server.RedisServer
free_port: Callable[[], int] = _everything.free_port
HANDSHAKE: str = _scaleout.HANDSHAKE
MODERN: str = _scaleout.MODERN
modern_meta: Callable[..., dict[str, Any]] = _scaleout.modern_meta

KINDS = {"session": 35, "resume": 10, "modern": 35, "task": 10, "listen": 10}
SESSIONS = 64
TIMEOUT = 30.0  # a request still unanswered after this long is hung
ACCEPT = "application/json, text/event-stream"


class HaproxyMissing(RuntimeError):
    pass


def find_haproxy() -> str:
    """HAProxy: on PATH (or /usr/sbin), else installed with apt-get as root."""
    for found in (shutil.which("haproxy"), "/usr/sbin/haproxy"):
        if found and os.access(found, os.X_OK):
            return found
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise HaproxyMissing("haproxy is missing: run `apt-get install -y haproxy` as root")
    print("installing haproxy with apt-get", file=sys.stderr, flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "haproxy"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise HaproxyMissing(f"`{' '.join(command)}` failed: {done.stderr.strip()[-300:]}")
    return "/usr/sbin/haproxy"


# ------------------------------------------------------------------ processes


class Backend:
    """One worker: ``uvicorn`` serving support.scaleout_app on a port of its own."""

    def __init__(self, index: int, redis_url: str, log: Path, quotas: str = "") -> None:
        """``quotas``: the per-client quotas (support.scaleout_app's MCP_TEST_QUOTAS; none
        when empty)."""
        self.quotas = quotas
        self.index = index
        self.name = f"w{index}"
        self.port = free_port()
        self.redis_url = redis_url
        self.log = log
        self.process: subprocess.Popen[bytes] | None = None
        self.trips_before = 0  # round trips counted by the worker's earlier lives

    def start(self, timeout: float = 60.0) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                [str(ROOT / "tests"), *(str(ROOT / p) for p in ("codegen", "generated", "runtime"))]
            ),
            "MCP_TEST_STORE": "redis",
            # Named, so that CLIENT LIST tells each worker's connections apart.
            "MCP_TEST_REDIS_URL": f"{self.redis_url}?client_name=soak-{self.name}",
            "MCP_TEST_COUNT_REDIS": "1",
            "MCP_TEST_QUOTAS": self.quotas,
        }
        command = [
            sys.executable, "-m", "uvicorn", "support.scaleout_app:app", "--factory",
            "--host", "127.0.0.1", "--port", str(self.port), "--loop", "uvloop",
            "--http", "httptools", "--log-level", "warning", "--backlog", "4096",
            "--timeout-graceful-shutdown", "1",
        ]  # fmt: skip
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, env=env, cwd=ROOT / "tests", stderr=log, start_new_session=True
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"worker {self.name} exited with {self.process.returncode}")
            with contextlib.suppress(httpx.HTTPError, AssertionError, KeyError):
                self.trips()
                return
            time.sleep(0.1)
        raise RuntimeError(f"worker {self.name} did not answer in {timeout:.0f} s")

    def trips(self) -> int:
        """Round trips to Redis this worker made since it started (a 2026-07-28 call: none)."""
        _ids = self.index * 1_000_000 + int(time.monotonic() * 1000) % 1_000_000
        answer = httpx.post(
            f"http://127.0.0.1:{self.port}/mcp",
            headers={"content-type": "application/json", "accept": ACCEPT,
                     "mcp-protocol-version": MODERN, "mcp-method": "tools/call",
                     "mcp-name": "trips"},  # fmt: skip
            content=json.dumps(
                {"jsonrpc": "2.0", "id": f"trips-{_ids}", "method": "tools/call",
                 "params": {"name": "trips", "arguments": {}, "_meta": modern_meta()}}  # fmt: skip
            ),
            timeout=10,
        )
        assert answer.status_code == 200, answer.text
        text = answer.text
        if answer.headers["content-type"].startswith("text/event-stream"):
            text = next(
                line[5:]
                for line in text.splitlines()
                if line.startswith("data:") and "result" in line
            )
        return int(json.loads(text)["result"]["content"][0]["text"].split()[1])

    def kill(self) -> None:
        """SIGKILL: no shutdown at all, as when a machine or a process dies."""
        assert self.process is not None
        self.trips_before += self.trips()
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait()
        self.process = None

    def stop(self) -> None:
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        self.process = None


class Balancer:
    """HAProxy in front of the workers: round robin per request, no stickiness."""

    def __init__(self, haproxy: str, backends: list[Backend], folder: Path) -> None:
        self.haproxy = haproxy
        self.port = free_port()
        self.socket = folder / "haproxy.sock"
        self.config = folder / "haproxy.cfg"
        servers = "\n".join(
            f"  server {b.name} 127.0.0.1:{b.port} check inter 500 fall 1 rise 2" for b in backends
        )
        # Only a connection that failed is tried on another worker (the
        # request was never sent): a request sent to a worker that died is
        # not sent again, since it may have run.
        self.config.write_text(f"""global
  maxconn 8192
  stats socket {self.socket} mode 600 level admin
defaults
  mode http
  timeout connect 2s
  timeout client 60s
  timeout server 60s
  timeout http-keep-alive 10s
  retries 3
  option redispatch
  retry-on conn-failure
frontend mcp
  bind 127.0.0.1:{self.port}
  default_backend workers
backend workers
  balance roundrobin
{servers}
""")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.haproxy, "-f", str(self.config), "-db"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5),
            ):
                return
            time.sleep(0.05)
        raise RuntimeError("haproxy did not start")

    def stats(self) -> dict[str, dict[str, int]]:
        """Per worker: connections now (scur), at most (smax), in all (stot), failed (eresp)."""
        with socket.socket(socket.AF_UNIX) as conn:
            conn.connect(str(self.socket))
            conn.sendall(b"show stat\n")
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
        lines = data.decode().splitlines()
        header = lines[0].lstrip("# ").split(",")
        found = {}
        for line in lines[1:]:
            row = dict(zip(header, line.split(",")))
            if row.get("pxname") == "workers" and row.get("svname", "").startswith("w"):
                found[row["svname"]] = {
                    key: int(row[key] or 0) for key in ("scur", "smax", "stot", "eresp", "econ")
                }
        return found

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def redis_commands(redis: Any) -> int:
    info = redis.command("INFO", "commandstats").decode()
    return sum(
        int(line.split("calls=")[1].split(",")[0])
        for line in info.splitlines()
        if line.startswith("cmdstat_")
    )


def redis_connections(redis: Any) -> dict[str, int]:
    """Connections to Redis now, by worker (each names its connections)."""
    listing = redis.command("CLIENT", "LIST").decode(errors="replace")
    counts: Counter[str] = Counter()
    for line in listing.splitlines():
        for field in line.split():
            if field.startswith("name=soak-"):
                counts[field[len("name=soak-") :]] += 1
    return dict(counts)


def restart_redis(redis: Any) -> float:
    """Restart Redis as an operator does (a snapshot at shutdown, loaded at start); seconds down."""
    redis.command("CONFIG", "SET", "save", "3600 1")
    started = time.monotonic()
    redis.stop()
    redis.start()
    return time.monotonic() - started


# ------------------------------------------------------------------ the load


class Cut(Exception):
    """The response ended before its answer (the connection closed)."""


# What aiohttp raises when the balancer closes a connection whose worker died.
CLOSED = (aiohttp.ClientPayloadError, aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)


class Load:
    def __init__(self, url: str, http: aiohttp.ClientSession) -> None:
        self.url = url
        self.http = http
        self.ids = itertools.count(1)
        self.sessions: list[str] = []
        self.seen: Counter[str] = Counter()  # responses by request id, across legs
        self.duplicates: list[str] = []

    def headers(self, session: str | None = None, **extra: str) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": ACCEPT, **extra}
        if session is not None:
            headers |= {"mcp-session-id": session, "mcp-protocol-version": HANDSHAKE}
        return headers

    def answered(self, request_id: str) -> None:
        self.seen[request_id] += 1
        if self.seen[request_id] == 2:
            self.duplicates.append(request_id)

    async def initialize(self) -> str:
        params = {"protocolVersion": HANDSHAKE, "capabilities": {},
                  "clientInfo": {"name": "soak", "version": "1"}}  # fmt: skip
        body = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}
        async with self.http.post(self.url, json=body, headers=self.headers()) as answer:
            await answer.read()
            if answer.status != 200:
                raise RuntimeError(f"initialize: HTTP {answer.status}")
            session = answer.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        async with self.http.post(self.url, json=note, headers=self.headers(session)) as answer:
            await answer.read()
        return session

    # -- one response, JSON or SSE

    async def events(self, answer: aiohttp.ClientResponse) -> AsyncIterator[tuple[str | None, Any]]:
        """(id, data) of each SSE event; Cut if the stream breaks."""
        event_id: str | None = None
        data: list[str] = []
        try:
            async for raw in answer.content:
                line = raw.decode().rstrip("\r\n")
                if line.startswith("id:"):
                    event_id = line[3:].strip()
                elif line.startswith("data:"):
                    data.append(line[5:].strip())
                elif line == "" and (data or event_id is not None):
                    text = "\n".join(data)
                    yield event_id, json.loads(text) if text else None
                    event_id, data = None, []
        except CLOSED as error:
            raise Cut(type(error).__name__) from None

    async def outcome(
        self, answer: aiohttp.ClientResponse, request_id: str, state: dict[str, Any]
    ) -> str | None:
        """Read one answer: the outcome if it ended the request, None if it
        ended without its response (state['last'] holds the last event id)."""
        if answer.status != 200:
            body = (await answer.read()).decode(errors="replace")
            with contextlib.suppress(ValueError):
                message = json.loads(body)
                if isinstance(message, dict) and "error" in message:
                    return f"JSON-RPC error {message['error']['code']} (HTTP {answer.status}): {message['error']['message'][:70]}"
            if answer.status == 502 and "<html>" in body:
                return "HTTP 502 from HAProxy (its worker died before answering)"
            if answer.status == 503 and "<html>" in body:
                return "HTTP 503 from HAProxy (no worker up)"
            return f"HTTP {answer.status}: {' '.join(body.split())[:70]}"
        if answer.content_type == "application/json":
            return self.settle(await answer.json(), request_id, state)
        found = None
        async for event_id, data in self.events(answer):
            if event_id is not None:
                state["last"] = event_id
            if not isinstance(data, dict):
                continue
            if data.get("method") == "notifications/message":
                n = data["params"]["data"]["n"]
                if n in state["logs"]:
                    self.duplicates.append(f"{request_id} log {n}")
                state["logs"].add(n)
            if data.get("id") == request_id:
                found = self.settle(data, request_id, state)
            if "stop_after_first" in state and event_id is not None and found is None:
                return None
        return found

    def settle(self, message: dict[str, Any], request_id: str, state: dict[str, Any]) -> str:
        self.answered(request_id)
        if "error" in message:
            return f"JSON-RPC error {message['error']['code']}: {message['error']['message'][:70]}"
        state["result"] = message["result"]
        return "answered"

    async def post(
        self, body: dict[str, Any], headers: dict[str, str], state: dict[str, Any]
    ) -> str | None:
        try:
            async with self.http.post(self.url, json=body, headers=headers) as answer:
                return await self.outcome(answer, str(body["id"]), state)
        except Cut as cut:
            state["cut"] = str(cut)
            return None
        except CLOSED as error:
            state["cut"] = type(error).__name__
            return None

    async def resume(self, session: str, request_id: str, state: dict[str, Any]) -> str:
        """GET the rest of a request's stream from its last event id, through the balancer."""
        for _ in range(5):
            if state.get("last") is None:
                break
            headers = self.headers(session, **{"last-event-id": state["last"]})
            try:
                async with self.http.get(self.url, headers=headers) as answer:
                    found = await self.outcome(answer, request_id, state)
                    if found is not None:
                        return found
                    state["cut"] = "the resumed stream ended without the response"
            except Cut as cut:
                state["cut"] = str(cut)
            except CLOSED as error:
                state["cut"] = type(error).__name__
        if state.get("last") is None:
            return "cut before any event: its worker died (nothing to resume from)"
        return f"cut: {state.get('cut')}"

    # -- the kinds of request

    async def session_call(self, logs: int, stop_after_first: bool) -> str:
        session = random.choice(self.sessions)
        request_id = f"s{next(self.ids)}"
        body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                "params": {"name": "count", "arguments": {"n": logs, "delay": 0.01}}}  # fmt: skip
        state: dict[str, Any] = {"logs": set(), "last": None}
        if stop_after_first:
            state["stop_after_first"] = True
        found = await self.post(body, self.headers(session), state)
        state.pop("stop_after_first", None)
        if found is None:
            found = await self.resume(session, request_id, state)
        if found == "answered" and state["logs"] != set(range(logs)):
            return f"wrong answer: log messages {sorted(state['logs'])}"
        if found.startswith("HTTP 404"):
            # The session is gone (it expired, or Redis lost it): a client opens another.
            with contextlib.suppress(ValueError):
                self.sessions[self.sessions.index(session)] = await self.initialize()
        return found

    async def modern(self, method: str, params: dict[str, Any], name: str | None,
                     extensions: bool = False) -> tuple[str, dict[str, Any]]:  # fmt: skip
        request_id = f"m{next(self.ids)}"
        extra = {"mcp-protocol-version": MODERN, "mcp-method": method}
        if name is not None:
            extra["mcp-name"] = name
        body = {"jsonrpc": "2.0", "id": request_id, "method": method,
                "params": {**params, "_meta": modern_meta(extensions)}}  # fmt: skip
        state: dict[str, Any] = {"logs": set(), "last": None}
        found = await self.post(body, self.headers(**extra), state)
        if found is None:  # a 2026-07-28 stream has no resumption: its worker died
            found = "cut: its worker died before answering (a 2026-07-28 request is not resumable)"
        return found, state

    async def stateless(self) -> str:
        found, state = await self.modern("tools/call", {"name": "pid", "arguments": {}}, "pid")
        return found

    async def task(self) -> str:
        found, state = await self.modern(
            "tools/call", {"name": "wait_job", "arguments": {"seconds": 0.05}}, "wait_job", True
        )
        if found != "answered":
            return found
        task_id = state["result"].get("taskId") or state["result"].get("task", {}).get("taskId")
        while True:
            await asyncio.sleep(0.05)
            found, state = await self.modern("tasks/get", {"taskId": task_id}, task_id, True)
            if found != "answered":
                return f"tasks/get: {found}"
            status = state["result"].get("status")
            if status == "completed":
                return "answered"
            if status == "failed":  # the task's error, as the tasks/get result carries it
                error = state["result"].get("error", {})
                return f"JSON-RPC error {error.get('code')} (the task failed): {error.get('message', '')[:70]}"
            if status == "cancelled":
                return "task cancelled"

    async def listen(self) -> str:
        request_id = f"l{next(self.ids)}"
        body = {"jsonrpc": "2.0", "id": request_id, "method": "subscriptions/listen",
                "params": {"notifications": {"toolsListChanged": True}, "_meta": modern_meta()}}  # fmt: skip
        headers = self.headers(**{"mcp-protocol-version": MODERN,
                                  "mcp-method": "subscriptions/listen"})  # fmt: skip
        try:
            async with self.http.post(self.url, json=body, headers=headers) as answer:
                if answer.status != 200:
                    return await self.outcome(answer, request_id, {}) or "no answer"
                async for _, data in self.events(answer):
                    if isinstance(data, dict) and data.get("method") == (
                        "notifications/subscriptions/acknowledged"
                    ):
                        self.answered(request_id)
                        return "answered"
                    if isinstance(data, dict) and "error" in data:
                        return self.settle(data, request_id, {})
                return "cut: the listen stream ended unacknowledged"
        except (Cut, *CLOSED):
            return "cut: its worker died before acknowledging"

    def request(self, kind: str) -> Coroutine[Any, Any, str]:
        if kind == "session":
            return self.session_call(2, False)
        if kind == "resume":
            return self.session_call(4, True)
        if kind == "modern":
            return self.stateless()
        if kind == "task":
            return self.task()
        return self.listen()


async def drive(
    url: str,
    requests: int,
    in_flight: int,
    chaos: Callable[[int], Coroutine[Any, Any, None]],
    background: set[asyncio.Task[None]],
    seed: int = 35,
) -> dict[str, Any]:
    """``requests`` requests at ``in_flight`` at once; ``chaos(done)`` is awaited after
    each, and the ``background`` tasks it starts before the end."""
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=5)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as http:
        load = Load(url, http)
        load.sessions = list(await asyncio.gather(*(load.initialize() for _ in range(SESSIONS))))
        draw = random.Random(seed)
        kinds = draw.choices(list(KINDS), weights=list(KINDS.values()), k=requests)
        outcomes: dict[str, Counter[str]] = {kind: Counter() for kind in KINDS}
        latencies: list[float] = []
        ends: list[float] = []  # when each request ended, from the start of the load
        windows: dict[str, list[float]] = {}
        queue = iter(kinds)
        done = [0]

        async def worker() -> None:
            for kind in queue:
                started = time.perf_counter()
                try:
                    found = await asyncio.wait_for(load.request(kind), TIMEOUT)
                except TimeoutError:
                    found = f"hung: no end within {TIMEOUT:.0f} s"
                except (aiohttp.ClientError, OSError) as error:
                    found = f"connection error: {type(error).__name__} {str(error)[:60]}"
                latencies.append(time.perf_counter() - started)
                ends.append(time.perf_counter() - begun)
                outcomes[kind][found] += 1
                if found != "answered":  # when each cause was seen, first and last
                    seen = windows.setdefault(found, [ends[-1], ends[-1]])
                    seen[1] = ends[-1]
                done[0] += 1
                await chaos(done[0])

        begun, begun_at = time.perf_counter(), time.monotonic()
        await asyncio.gather(*(worker() for _ in range(in_flight)))
        elapsed = time.perf_counter() - begun
        # A short run can end before the worker killed during it is back.
        await asyncio.gather(*background)
    latencies.sort()
    ends.sort()
    return {
        "elapsed_s": elapsed,
        "first_99_percent_s": percentile(ends, 0.99),
        "error_windows_s": windows,
        "begun_at": begun_at,
        "latencies": latencies,
        "outcomes": {kind: dict(found) for kind, found in outcomes.items()},
        "duplicates": load.duplicates,
    }


JSONRPC = "a JSON-RPC error the server sent"
TRANSPORT = "an error the client reports (transport)"
NEITHER = "neither answered nor an error"
ENDINGS = (JSONRPC, TRANSPORT, NEITHER)
# Causes whose request our HTTP client ends with an McpError raised to the
# caller, with a JSON-RPC code and what happened (the load reads the wire with
# aiohttp, to see each cause): the connection cut before the answer (-32000,
# or the stream resumed until the client gives up), and the balancer's own
# error page (-32603 naming the status). See
# tests/stores/test_scaleout_cut_requests_fail_in_the_client.py.
_TRANSPORT_CAUSES = ("cut", "HTTP 502 from HAProxy", "HTTP 503 from HAProxy", "connection error")


def ending(outcome: str) -> str:
    """How a request that was not answered ended, as a client sees it: with a
    JSON-RPC error the server sent, with an error our client reports for a
    connection cut or refused by the balancer, or neither (a hang, a wrong
    answer, a refusal the server should not have made)."""
    cause = outcome.removeprefix("tasks/get: ")
    if cause.startswith("JSON-RPC error"):
        return JSONRPC
    if cause.startswith(_TRANSPORT_CAUSES):
        return TRANSPORT
    return NEITHER


def logged_errors(log: Path) -> dict[str, int]:
    """The workers' tracebacks, by their last line (the exception), and warnings by text."""
    found: Counter[str] = Counter()
    in_traceback = False
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("Traceback"):
            in_traceback = True
        elif in_traceback and line and not line.startswith((" ", "\t")):
            if not line.startswith(("The above exception", "During handling")):
                found[f"traceback: {line[:120]}"] += 1
                in_traceback = False
        elif not in_traceback and ("WARNING" in line or "ERROR" in line):
            found[line[:120]] += 1
    return dict(found.most_common(12))


def percentile(values: list[float], share: float) -> float:
    return values[min(len(values) - 1, int(share * len(values)))]


def soak(
    workers: int, requests: int, in_flight: int, haproxy: str, chaos_of: str = "kill,redis"
) -> dict[str, Any]:
    """One run; ``chaos_of``: what happens during it ("kill", "redis", both, or "")."""
    folder = Path(tempfile.mkdtemp(prefix="mcp-soak-"))
    redis = RedisServer()
    backends = [Backend(n, redis.url, folder / "workers.log") for n in range(workers)]
    balancer = Balancer(haproxy, backends, folder)
    events: list[str] = []
    try:
        redis.start()
        for backend in backends:
            backend.start()
        balancer.start()
        steady = steady_state(balancer.url, backends, redis)
        commands_before = redis_commands(redis)
        trips_start = {b.name: b.trips() for b in backends}
        commands_lost = [0]
        peak: dict[str, int] = {}
        chaos_at = {"kill": requests * 3 // 10, "redis": requests * 6 // 10}
        chaos_at = {what: at for what, at in chaos_at.items() if what in chaos_of.split(",")}
        background: set[asyncio.Task[None]] = set()
        started = time.monotonic()

        def sample() -> None:
            try:
                connections = redis_connections(redis)
            except OSError:
                return  # Redis is restarting
            for name, count in connections.items():
                peak[name] = max(peak.get(name, 0), count)

        async def chaos(done: int) -> None:
            if done % 200 == 0:
                await asyncio.to_thread(sample)
            if done == chaos_at.get("kill"):
                task = asyncio.get_running_loop().create_task(kill_and_restart())
                background.add(task)
            if done == chaos_at.get("redis"):
                task = asyncio.get_running_loop().create_task(bounce_redis())
                background.add(task)

        async def kill_and_restart() -> None:
            victim = backends[0]
            await asyncio.to_thread(victim.kill)
            events.append(f"{time.monotonic() - started:.1f} s: worker {victim.name} SIGKILLed")
            await asyncio.sleep(2.0)
            await asyncio.to_thread(victim.start)
            events.append(f"{time.monotonic() - started:.1f} s: worker {victim.name} serving again")

        async def bounce_redis() -> None:
            commands_lost[0] = await asyncio.to_thread(redis_commands, redis)
            down = await asyncio.to_thread(restart_redis, redis)
            events.append(
                f"{time.monotonic() - started:.1f} s: Redis restarted ({down:.2f} s down)"
            )

        result = asyncio.run(drive(balancer.url, requests, in_flight, chaos, background))
        commands = commands_lost[0] - commands_before + redis_commands(redis) - 1
        trips = sum(b.trips_before + b.trips() for b in backends) - sum(trips_start.values())
        latencies = result.pop("latencies")
        outcomes = result["outcomes"]
        total = sum(sum(found.values()) for found in outcomes.values())
        errors: Counter[str] = Counter()
        for found in outcomes.values():
            for outcome, count in found.items():
                if outcome != "answered":
                    errors[outcome] += count
        hung = sum(count for outcome, count in errors.items() if outcome.startswith("hung"))
        ended: dict[str, dict[str, int]] = {way: {} for way in ENDINGS}
        for outcome, count in errors.most_common():
            ended[ending(outcome)][outcome] = count
        return {
            "workers": workers,
            "requests": total,
            "in_flight": in_flight,
            "elapsed_s": result["elapsed_s"],
            # Over the whole run, up to the last request's end (a hung one included),
            # and up to the end of the first 99% (the throughput without the tail).
            "rps": total / result["elapsed_s"],
            "rps_first_99_percent": 0.99 * total / result["first_99_percent_s"],
            "p50_ms": percentile(latencies, 0.50) * 1e3,
            "p99_ms": percentile(latencies, 0.99) * 1e3,
            "answered": total - sum(errors.values()),
            "errors": dict(errors.most_common()),
            # Every error under the way its request ended (see ending()), cause by cause.
            "ended": ended,
            "by_kind": outcomes,
            "hung": hung,
            "jsonrpc_errors": sum(ended[JSONRPC].values()),
            "transport_errors": sum(ended[TRANSPORT].values()),
            "neither_answered_nor_error": sum(ended[NEITHER].values()),
            "duplicates": result["duplicates"],
            "redis_commands_per_request": commands / total,
            "redis_round_trips_per_request": trips / total,
            "redis_connections_peak": peak,
            "redis_connections_end": redis_connections(redis),
            "http_connections": balancer.stats(),
            "events": events,
            "worker_logs": logged_errors(folder / "workers.log"),
            # On the clock of the events: seconds from the start of the run.
            "error_windows_s": {
                cause: [round(at + result["begun_at"] - started, 1) for at in window]
                for cause, window in result["error_windows_s"].items()
            },
            "steady_state": steady,
        }
    finally:
        # Each one stopped even if stopping another failed (an ExitStack goes on).
        with contextlib.ExitStack() as stack:
            stack.callback(shutil.rmtree, folder, ignore_errors=True)
            stack.callback(redis.close)
            for backend in backends:
                stack.callback(backend.stop)
            stack.callback(balancer.stop)


def steady_state(url: str, backends: list[Backend], redis: Any, calls: int = 200) -> dict[str, Any]:
    """Redis commands and round trips of one session request once every
    worker knows the session (sequential, nothing else running): answered at
    once (``pid``, the answer sent whole), and answered after its stream's
    priming event (``sleep``, 5 ms: the stream is made known to the store first)."""
    headers = {"content-type": "application/json", "accept": ACCEPT}
    with httpx.Client(timeout=30) as client:
        params = {"protocolVersion": HANDSHAKE, "capabilities": {},
                  "clientInfo": {"name": "soak", "version": "1"}}  # fmt: skip
        answer = client.post(url, headers=headers,
                             json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})  # fmt: skip
        session = answer.headers["mcp-session-id"]
        headers |= {"mcp-session-id": session, "mcp-protocol-version": HANDSHAKE}
        client.post(
            url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"}
        )

        def call(n: int, tool: str, arguments: dict[str, Any]) -> None:
            body = {"jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": tool, "arguments": arguments}}  # fmt: skip
            answer = client.post(url, headers=headers, json=body)
            assert answer.status_code == 200 and '"result"' in answer.text, answer.text

        for n in range(1, 4 * len(backends) + 1):  # every worker makes its copy of the session
            call(n, "pid", {})
        time.sleep(0.5)  # the warm-up's writes settle
        found: dict[str, Any] = {"calls": calls}
        for key, tool, arguments in (("", "pid", {}), ("slow_", "sleep", {"seconds": 0.005})):
            commands = redis_commands(redis)
            trips = sum(b.trips() for b in backends)
            first = 1000 + len(found) * calls
            for n in range(first, first + calls):
                call(n, tool, arguments)
            time.sleep(0.5)
            trips = sum(b.trips() for b in backends) - trips
            commands = redis_commands(redis) - commands - 1
            found[f"{key}redis_commands_per_request"] = commands / calls
            found[f"{key}redis_round_trips_per_request"] = trips / calls
    return found


def run(
    requests: int,
    in_flight: int,
    worker_counts: tuple[int, ...] = (2, 4),
    chaos: str = "kill,redis",
) -> dict[str, Any]:
    haproxy = find_haproxy()
    version = subprocess.run([haproxy, "-v"], capture_output=True, text=True).stdout.split("\n")[0]
    result: dict[str, Any] = {
        f"{n}w": soak(n, requests, in_flight, haproxy, chaos) for n in worker_counts
    }
    result["settings"] = {
        "requests": requests,
        "in_flight": in_flight,
        "mix": KINDS,
        "balancer": version.strip(),
        "timeout_s": TIMEOUT,
        "chaos": chaos,
    }
    return result


def main() -> None:
    with processes.owned():
        _main()


def _main() -> None:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m bench.soak", description=__doc__)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--in-flight", type=int, default=512)
    parser.add_argument("--workers", default="2,4", help="worker counts, comma-separated")
    parser.add_argument(
        "--chaos", default="kill,redis", help='during the run: "kill", "redis", both, or ""'
    )
    options = parser.parse_args()
    counts = tuple(int(n) for n in options.workers.split(","))
    print(json.dumps(run(options.requests, options.in_flight, counts, options.chaos), indent=2))


if __name__ == "__main__":
    main()
