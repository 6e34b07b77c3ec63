"""What one server request costs in Python calls: hops and modules of the runtime it enters.

``python -m bench.hops`` serves the echo tool of bench/servers/ours_stdio.py in
this process, warms each path up, then counts, with ``sys.setprofile``, the
Python calls made while ONE ``tools/call`` is answered whose code lives in
``runtime/mcpbind`` (calls into the standard library, msgspec or the
handler itself are not counted), and the distinct runtime modules they enter:

* ``stdio``: the server's :class:`~mcpbind._transports.stdio.StreamTransport` over a
  socket pair (a 2025-11-25 session after its handshake), from writing the
  request line to reading the response line;
* ``http``: the Streamable HTTP app driven in process through ASGI (as
  bench/asgi_bench.py does), a 2025-11-25 session's POST;
* ``http_modern``: the same for a 2026-07-28 request on its own.

The counts do not depend on the machine's speed, so they compare two versions
of the runtime exactly. Prints one table.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

from .asgi_bench import Driver, open_session
from .http_wire import INITIALIZE, INITIALIZED, _load, call_body, call_headers, make_app

WARM_UP = 20


class Hops:
    """Counts calls of functions defined under ``root`` while profiling."""

    def __init__(self, root: Path) -> None:
        self.root = str(root)
        self.calls = 0
        self.modules: Counter[str] = Counter()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        filename = frame.f_code.co_filename
        if filename.startswith(self.root):
            self.calls += 1
            self.modules[filename[len(self.root) + 1 :]] += 1

    def __enter__(self) -> Hops:
        sys.setprofile(self.profile)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)


def runtime_root() -> Path:
    import mcpbind

    return Path(mcpbind.__file__).parent


async def stdio_hops() -> Hops:
    from mcpbind._transports.stdio import StreamTransport

    server = _load("ours_stdio").server(False)
    ours, theirs = socket.socketpair()
    server_reader, server_writer = await asyncio.open_connection(sock=ours)
    reader, writer = await asyncio.open_connection(sock=theirs)
    serving = asyncio.get_running_loop().create_task(
        server.serve(StreamTransport(server_reader, server_writer))
    )

    async def call(data: bytes) -> bytes:
        writer.write(data + b"\n")
        await writer.drain()
        return await reader.readline()

    await call(INITIALIZE)
    writer.write(INITIALIZED + b"\n")
    for n in range(WARM_UP):
        await call(call_body("handshake", n + 1))
    body = call_body("handshake", 1000)
    with Hops(runtime_root()) as hops:
        answer = await call(body)
    assert b'"hello"' in answer, answer
    writer.close()
    await serving
    return hops


async def http_hops(wire: str) -> Hops:
    driver = Driver(make_app("ours", wire))
    async with driver.running():
        session_id = await open_session(driver) if wire == "handshake" else None
        headers = call_headers(wire, session_id)
        for n in range(WARM_UP):
            await driver.post(headers, call_body(wire, n + 1))
        body = call_body(wire, 1000)
        with Hops(runtime_root()) as hops:
            status, _, answer = await driver.post(headers, body)
        assert status == 200 and b"hello" in answer, (status, answer)
    return hops


async def main() -> None:
    rows = [
        ("stdio", await stdio_hops()),
        ("http", await http_hops("handshake")),
        ("http_modern", await http_hops("modern")),
    ]
    print(f"{'path':<12} {'calls':>6} {'modules':>8}  modules entered (calls)")
    for name, hops in rows:
        entered = ", ".join(f"{module}:{count}" for module, count in sorted(hops.modules.items()))
        print(f"{name:<12} {hops.calls:>6} {len(hops.modules):>8}  {entered}")


if __name__ == "__main__":
    asyncio.run(main())
