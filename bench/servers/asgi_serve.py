"""Serve one benchmark application on loopback: ``python bench/servers/asgi_serve.py IMPL WIRE STACK PORT``.

IMPL: ours, sdk or echo (bench/http_wire.py); WIRE: handshake or modern;
STACK: uvicorn-h11 (asyncio, h11), uvicorn (uvloop, httptools) or granian.
Every application runs under the same ``mcpbind.serving.run_http``, so
the stack and the garbage collector settings (``gc.freeze()`` after start-up)
are the same for all.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench.http_wire import make_app  # noqa: E402
from mcpbind.serving import run_http  # noqa: E402


def main() -> None:
    impl, wire, stack, port = sys.argv[1:5]
    run_http(make_app(impl, wire), port=int(port), stack=stack)


if __name__ == "__main__":
    main()
