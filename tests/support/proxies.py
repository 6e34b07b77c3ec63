"""Real reverse proxies for the tests: Debian's ``haproxy`` and ``nginx``, installed
with ``apt-get`` as root where they are missing (as redis-server is), run on free
loopback ports with a configuration given as text."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path


def proxy_binary(name: str) -> str:
    """The path of ``haproxy`` or ``nginx`` (the Debian package of that name)."""
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None and os.geteuid() == 0:
        subprocess.run(["apt-get", "update", "-qq"], check=True, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", name], check=True, capture_output=True)
        found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin")
    if found is None:
        raise RuntimeError(f"{name} is not installed: apt-get install {name} (Debian package)")
    return found


def nginx_arguments(config: Path) -> list[str]:
    """nginx's arguments for ``config`` with everything it writes kept in its folder."""
    folder = config.parent
    (folder / "logs").mkdir(exist_ok=True)
    return ["-c", str(config), "-p", f"{folder}/", "-e", str(folder / "error.log"),
            "-g", f"pid {folder / 'nginx.pid'};"]  # fmt: skip


def check(kind: str, config: Path) -> subprocess.CompletedProcess[str]:
    """The proxy's own check of ``config`` (``haproxy -c``, ``nginx -t``)."""
    binary = proxy_binary(kind)
    if kind == "haproxy":
        command = [binary, "-c", "-f", str(config)]
    else:
        command = [binary, "-t", *nginx_arguments(config)]
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


@contextlib.contextmanager
def running(kind: str, config: Path, port: int) -> Iterator[None]:
    """The proxy running ``config`` in the foreground until the block ends; up once
    ``port`` accepts connections."""
    binary = proxy_binary(kind)
    if kind == "haproxy":
        command = [binary, "-f", str(config), "-db"]
    else:
        arguments = nginx_arguments(config)
        arguments[-1] = f"daemon off; {arguments[-1]}"
        command = [binary, *arguments]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise RuntimeError(f"{kind} exited: {process.stderr.read().decode()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{kind} did not start")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
