"""Reload on change for ``mcpx dev``: the server runs as a child process,
started again when a Python file under its directory changes.

Over stdio, mcpx stands between the client and the server so that the client
keeps its process: it remembers the client's ``initialize`` request and
``notifications/initialized``, sends them to each new server (answering
nothing back), answers the requests the old server left unanswered with an
error, and tells the client that its lists changed. Over HTTP, the child is
simply restarted on the same port; a client whose session is unknown to the
new server opens another (the specification's answer to HTTP 404).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

POLL_INTERVAL = 0.3
"""Seconds between two looks at the sources' modification times."""
STOP_GRACE = 3.0
"""Seconds a server has to exit after its stdin closes, before it is killed."""
RESTARTED = -32000
"""The error code of a request the old server never answered."""
REPLAY_ID = "mcpx-dev-initialize"
MAX_LINE = 64 * 1024 * 1024
"""The longest message relayed either way (asyncio's default, 64 KiB, is less than
an App's HTML with its scripts inlined)."""
CHANGED = (
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
)


def _say(message: str) -> None:
    sys.stderr.write(f"mcpx dev: {message}\n")
    sys.stderr.flush()


def _snapshot(sources: Path) -> dict[Path, float]:
    return {path: path.stat().st_mtime for path in _python_files(sources)}


def _python_files(sources: Path) -> Iterator[Path]:
    for path in sources.rglob("*.py"):
        if not any(part.startswith(".") or part == "__pycache__" for part in path.parts):
            with contextlib.suppress(OSError):
                if path.is_file():
                    yield path


async def _changed(sources: Path) -> list[Path]:
    """Wait until a Python file under ``sources`` is added, removed or modified."""
    before = await asyncio.to_thread(_snapshot, sources)
    while True:
        await asyncio.sleep(POLL_INTERVAL)
        after = await asyncio.to_thread(_snapshot, sources)
        if after != before:
            return sorted(p for p in after.keys() | before.keys() if after.get(p) != before.get(p))


async def _stop(process: asyncio.subprocess.Process) -> None:
    if process.returncode is not None:
        return
    if process.stdin is not None:
        process.stdin.close()
    try:
        await asyncio.wait_for(process.wait(), STOP_GRACE)
    except TimeoutError:
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), STOP_GRACE)
        except TimeoutError:
            process.kill()
            await process.wait()


def restart_http(child: Sequence[str], sources: Path) -> int:
    """Run ``child`` (an HTTP server) and start it again at each change."""

    async def loop() -> int:
        while True:
            process = await asyncio.create_subprocess_exec(*child, stdin=asyncio.subprocess.PIPE)
            changed = await _changed(sources)
            _say(f"{_names(changed)} changed: restarting")
            await _stop(process)

    try:
        return asyncio.run(loop())
    except KeyboardInterrupt:
        return 130


def proxy_stdio(child: Sequence[str], sources: Path) -> int:
    """Stand between this process's stdio (the client) and ``child``'s."""
    try:
        return asyncio.run(_Proxy(child, sources).run())
    except KeyboardInterrupt:
        return 130


class _Proxy:
    def __init__(self, child: Sequence[str], sources: Path) -> None:
        self.child = list(child)
        self.sources = sources
        self.process: asyncio.subprocess.Process | None = None
        self.initialize: dict[str, Any] | None = None
        self.initialized: bytes | None = None
        self.pending: dict[str, Any] = {}  # the client's requests in flight, by JSON id
        self.replayed: asyncio.Future[bool] | None = None  # True: the new server initialized
        self.ready = asyncio.Event()
        self.probing = False  # the REPLAY_ID request is a ping, not the client's initialize

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=MAX_LINE)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        await self._start()
        watcher = loop.create_task(self._watch())
        try:
            while line := await reader.readline():
                await self._from_client(line)
        finally:
            watcher.cancel()
            if self.process is not None:
                await _stop(self.process)
        return 0

    async def _start(self, probe: bool = False) -> bool:
        """Start the server (initialized as the client initialized the last one);
        whether it started: it answered that initialize (or, with ``probe`` and
        nothing to replay, a ping) and has not exited."""
        self.ready.clear()
        process = await asyncio.create_subprocess_exec(
            *self.child,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            limit=MAX_LINE,
        )
        self.process = process
        asyncio.get_running_loop().create_task(self._from_server(process))
        started = True
        if self.initialize is not None:  # the client initialized the old server: so is this one
            self.replayed = asyncio.get_running_loop().create_future()
            self._send({**self.initialize, "id": REPLAY_ID})
            started = await self.replayed
            if started and self.initialized is not None:
                self._write_server(self.initialized)
        elif probe:
            # A client without a handshake (2026-07-28) left nothing to replay: any answer
            # to a ping, even "method not found", says the new server runs.
            self.replayed = asyncio.get_running_loop().create_future()
            self.probing = True
            self._send({"jsonrpc": "2.0", "id": REPLAY_ID, "method": "ping"})
            started = await self.replayed
            self.probing = False
        self.ready.set()
        return started and process.returncode is None

    async def _watch(self) -> None:
        while True:
            changed = await _changed(self.sources)
            _say(f"{_names(changed)} changed: reloading")
            self.ready.clear()  # the client's messages wait for the new server
            old, self.process = self.process, None
            if old is not None:
                await _stop(old)
            for request_id in list(self.pending):
                self._answer_error(self.pending.pop(request_id))
            if not await self._start(probe=True):
                # The client keeps its session; its requests get errors until the next change.
                _say("reload failed: the new server did not start; waiting for a change")
                continue
            for method in CHANGED:
                self._write_client({"jsonrpc": "2.0", "method": method})
            _say("reloaded")

    async def _from_client(self, line: bytes) -> None:
        message = _decode(line)
        if isinstance(message, dict):
            method = message.get("method")
            if method == "initialize":
                self.initialize = message
            elif method == "notifications/initialized":
                self.initialized = line
            if "id" in message and method is not None:
                self.pending[json.dumps(message["id"])] = message["id"]
        await self.ready.wait()
        process = self.process
        if process is None or process.returncode is not None:
            if isinstance(message, dict) and "id" in message and "method" in message:
                self.pending.pop(json.dumps(message["id"]), None)
                self._answer_error(message["id"], "the server is not running (mcpx dev)")
            return
        self._write_server(line)

    async def _from_server(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            message = _decode(line)
            if isinstance(message, dict) and "method" not in message and "id" in message:
                if message["id"] == REPLAY_ID:
                    if self.replayed is not None and not self.replayed.done():
                        self.replayed.set_result(self.probing or "error" not in message)
                    continue
                self.pending.pop(json.dumps(message["id"]), None)
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()
        code = await process.wait()
        if process is self.process:
            _say(f"the server exited with status {code}; waiting for a change")
            if self.replayed is not None and not self.replayed.done():
                self.replayed.set_result(False)
            for request_id in list(self.pending):
                self._answer_error(self.pending.pop(request_id), "the server exited (mcpx dev)")

    def _send(self, message: dict[str, Any]) -> None:
        self._write_server(json.dumps(message).encode() + b"\n")

    def _write_server(self, line: bytes) -> None:
        process = self.process
        if process is not None and process.stdin is not None and process.returncode is None:
            with contextlib.suppress(ConnectionError):
                process.stdin.write(line if line.endswith(b"\n") else line + b"\n")

    def _write_client(self, message: dict[str, Any]) -> None:
        sys.stdout.buffer.write(json.dumps(message).encode() + b"\n")
        sys.stdout.buffer.flush()

    def _answer_error(self, request_id: Any, why: str = "the server restarted (mcpx dev)") -> None:
        error = {"code": RESTARTED, "message": why}
        self._write_client({"jsonrpc": "2.0", "id": request_id, "error": error})


def _decode(line: bytes) -> Any:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _names(paths: list[Path]) -> str:
    return ", ".join(path.name for path in paths[:3]) + (" ..." if len(paths) > 3 else "")
