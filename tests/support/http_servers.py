"""HTTP servers for the HTTP transport tests, on 127.0.0.1 and an ephemeral port.

Our ASGI applications run under uvicorn in a background thread (so a test can
look at the app's state); the official SDK's servers run in a subprocess
(tests/support/sdk_http_server.py) that prints the port it bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import uvicorn

from mcpbind._server.server import Server

SUPPORT = Path(__file__).resolve().parent
REPO = SUPPORT.parents[1]
LOWLEVEL_SERVER = SUPPORT / "lowlevel_server.py"
SDK_HTTP_SERVER = SUPPORT / "sdk_http_server.py"
START_TIMEOUT = 60.0
TIMEOUT = 60.0

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T], timeout: float = TIMEOUT) -> T:
    """Run a test coroutine on a fresh event loop, failing (not hanging) after ``timeout``."""

    async def bounded() -> T:
        return await asyncio.wait_for(coroutine, timeout)

    return asyncio.run(bounded())


async def eventually(
    check: Callable[[], bool], timeout: float = 5.0, what: str = "condition"
) -> None:
    """Poll ``check`` until it holds; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


_examples: ModuleType | None = None


def lowlevel_module() -> ModuleType:
    """tests/support/lowlevel_server.py, imported once."""
    global _examples
    if _examples is None:
        spec = importlib.util.spec_from_file_location("lowlevel_server", LOWLEVEL_SERVER)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _examples = module
    return _examples


def lowlevel_server() -> Server:
    """The server of tests/support/lowlevel_server.py (a fresh Server)."""
    return Server(
        lowlevel_module().LowLevelServer(),
        name="mcp-codegen-example",
        version="0.1.0",
        instructions="An example server for the mcp-codegen runtime.",
    )


def _bind(port: int = 0) -> socket.socket:
    # proto IPPROTO_TCP, or asyncio leaves Nagle on for accepted connections (40 ms stalls)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    return sock


class Recorder:
    """Wraps an ASGI app: remembers every HTTP request (method, path,
    headers) and the server's event loop."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.loop = asyncio.get_running_loop()
        if scope["type"] == "http":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            self.requests.append((scope["method"], scope["path"], headers))
        await self.app(scope, receive, send)

    def matching(self, method: str, header: str | None = None) -> list[dict[str, str]]:
        return [
            h for m, _, h in list(self.requests) if m == method and (header is None or header in h)
        ]


class ThreadedServer:
    """An ASGI app served by uvicorn in a daemon thread."""

    def __init__(self, app: Any, port: int = 0, **options: Any) -> None:
        """``port``: 0 for an ephemeral one (a server restarted takes the port
        of the one it replaces); ``options``: more of uvicorn's settings, e.g.
        ``ssl_certfile``."""
        self.app = app
        self.recorder = Recorder(app)
        self._socket = _bind(port)
        self.port: int = self._socket.getsockname()[1]
        self.scheme = "https" if options.get("ssl_certfile") else "http"
        config = uvicorn.Config(
            self.recorder,
            log_level="warning",
            lifespan="auto",
            timeout_graceful_shutdown=1,
            **options,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self._socket]},
            name=f"uvicorn-{self.port}",
            daemon=True,
        )

    def url(self, path: str = "/mcp") -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}{path}"

    async def call(self, action: Callable[[], Awaitable[T]]) -> T:
        """Run ``action()`` on the server's event loop and wait for it."""
        assert self.recorder.loop is not None, "the server has not served a request yet"

        async def wrapper() -> T:
            return await action()

        return await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(wrapper(), self.recorder.loop)
        )

    def start(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(5)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(5)
        self._socket.close()


@contextlib.contextmanager
def serving(app: Any, port: int = 0, **options: Any) -> Iterator[ThreadedServer]:
    server = ThreadedServer(app, port, **options).start()
    try:
        yield server
    finally:
        server.stop()


class SubprocessServer:
    """tests/support/sdk_http_server.py (or another ``script`` that prints
    ``PORT <n>``) in a child process."""

    def __init__(self, *args: str, script: Path = SDK_HTTP_SERVER) -> None:
        env = {**os.environ, "PYTHONWARNINGS": "ignore"}
        self.process = subprocess.Popen(
            [sys.executable, str(script), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            text=True,
        )
        self.port = 0

    def wait_ready(self) -> SubprocessServer:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "PORT <n>" once listening
        if not line.startswith("PORT "):
            raise RuntimeError(f"the SDK server did not start (said {line!r})")
        self.port = int(line.split()[1])
        return self

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextlib.contextmanager
def sdk_serving(*modes: str) -> Iterator[dict[str, SubprocessServer]]:
    """SDK servers, one per mode (started side by side), by mode."""
    servers = {mode: SubprocessServer(mode) for mode in modes}
    try:
        for server in servers.values():
            server.wait_ready()
        yield servers
    finally:
        for server in servers.values():
            server.stop()
