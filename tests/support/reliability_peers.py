"""tests/support/reliability_server.py as a child process: over stdio (the
parameters our client spawns it with) or over HTTP (a process that prints its
port; its ``/stats`` report RSS, sessions, streams and tasks)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import IO, Any

import httpx

from mcpbind._transports.stdio import StdioServerParameters

SUPPORT = Path(__file__).resolve().parent
RELIABILITY_SERVER = SUPPORT / "reliability_server.py"
START_TIMEOUT = 60.0


def stdio_server(
    *args: str,
    stderr: int | IO[Any] | None = asyncio.subprocess.DEVNULL,
    env: dict[str, str] | None = None,
) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=[str(RELIABILITY_SERVER), "stdio", *args],
        stderr=stderr,  # type: ignore[arg-type]
        env=env,
    )


class HttpServerProcess:
    """``reliability_server.py http`` in a child process of its own group,
    bound to 127.0.0.1 on an ephemeral port."""

    def __init__(self, *args: str, stderr: int | IO[Any] = subprocess.DEVNULL) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(RELIABILITY_SERVER), "http", *args],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()  # "PORT <n>" once listening
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"the reliability server did not start (said {line!r})")
        self.port = int(line.split()[1])

    @property
    def pid(self) -> int:
        return self.process.pid

    def url(self, path: str = "/mcp") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def stats(self) -> dict[str, Any]:
        async with httpx.AsyncClient(timeout=30) as client:
            response = await client.get(self.url("/stats"))
            response.raise_for_status()
            stats: dict[str, Any] = response.json()
            return stats

    def kill(self) -> None:
        """SIGKILL, as a crash or the OOM killer would."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> HttpServerProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
