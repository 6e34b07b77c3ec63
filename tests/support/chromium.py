"""Headless Chromium driven over the DevTools protocol, for the tests that look
at the documentation site the way a reader's browser lays it out.

Debian's ``chromium`` is used where it is on PATH; as root it is installed
(``apt-get install chromium``) where it is missing. No browser is downloaded:
the protocol is spoken over a websocket with aiohttp, a dependency of the
project already.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import aiohttp

STARTUP_TIMEOUT = 60.0
CALL_TIMEOUT = 60.0


def chromium_binary() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "chromium"], check=True, capture_output=True
        )
        found = shutil.which("chromium")
    if found is None:
        raise RuntimeError("chromium is not installed: apt-get install chromium (Debian package)")
    return found


class Chromium:
    """One headless browser with one page; ``async with Chromium() as page``."""

    def __init__(self) -> None:
        self.profile = Path(tempfile.mkdtemp(prefix="mcp-chromium-"))
        self.process: subprocess.Popen[bytes] | None = None
        self.http: aiohttp.ClientSession | None = None
        self.socket: aiohttp.ClientWebSocketResponse | None = None
        self.ids = itertools.count(1)
        self.replies: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self.events: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> Chromium:
        arguments = [
            chromium_binary(),
            "--headless",
            "--remote-debugging-port=0",
            f"--user-data-dir={self.profile}",
            "--disable-gpu",
            "--no-first-run",
            "--no-default-browser-check",
            "about:blank",
        ]
        if os.geteuid() == 0:
            arguments.insert(1, "--no-sandbox")  # Chromium refuses to run its sandbox as root
        self.process = subprocess.Popen(
            arguments, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        # Chromium writes the port it chose into the profile once it listens.
        port_file = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not (port_file.exists() and port_file.read_text().strip()):
            if self.process.poll() is not None or time.monotonic() > deadline:
                await self.__aexit__(None, None, None)
                raise RuntimeError("headless chromium did not start")
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        self.http = aiohttp.ClientSession()
        async with self.http.get(f"http://127.0.0.1:{port}/json/list") as answer:
            targets = await answer.json()
        page = next(target for target in targets if target["type"] == "page")
        self.socket = await self.http.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
        self.reader = asyncio.create_task(self._read())
        await self.call("Page.enable")
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.socket is not None:
            await self.socket.close()
        if self.http is not None:
            await self.http.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.profile, ignore_errors=True)

    async def _read(self) -> None:
        assert self.socket is not None
        async for message in self.socket:
            data = json.loads(message.data)
            if "id" in data:
                waiter = self.replies.pop(data["id"], None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(data)
            else:
                self.events.put_nowait(data)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; its result, or RuntimeError with the browser's error."""
        assert self.socket is not None
        number = next(self.ids)
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.replies[number] = waiter
        await self.socket.send_str(json.dumps({"id": number, "method": method, "params": params}))
        reply = await asyncio.wait_for(waiter, CALL_TIMEOUT)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def resize(self, width: int, height: int, mobile: bool) -> None:
        await self.call(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=mobile,
        )

    async def open(self, url: str) -> None:
        """Load ``url`` and wait for its load event."""
        while not self.events.empty():
            self.events.get_nowait()
        await self.call("Page.navigate", url=url)
        while True:
            event = await asyncio.wait_for(self.events.get(), CALL_TIMEOUT)
            if event.get("method") == "Page.loadEventFired":
                return

    async def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression (a promise is awaited)."""
        reply = await self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise RuntimeError(f"script failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))
