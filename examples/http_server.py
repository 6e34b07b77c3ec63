"""The example server of examples/stdio_server.py, served over Streamable HTTP.

``python examples/http_server.py [--port 8000] [--stateless] [--json]`` listens on
127.0.0.1 at /mcp (and the legacy HTTP+SSE endpoints /sse and /messages).
"""

from __future__ import annotations

import argparse

import uvicorn

from mcp_runtime.http import UVICORN_OPTIONS, http_app
from mcp_runtime.server import Server
from stdio_server import ExampleServer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json", action="store_true", help="answer POSTs with JSON instead of SSE")
    options = parser.parse_args()
    server = Server(ExampleServer(), name="mcp-codegen-example", version="0.1.0")
    app = http_app(server, stateless=options.stateless, json_response=options.json)
    # Bounded keep-alive, concurrency and request heads, and a short graceful
    # shutdown (open SSE streams would otherwise hold a SIGTERM'd uvicorn).
    uvicorn.run(app, host=options.host, port=options.port, log_level="warning", **UVICORN_OPTIONS)


if __name__ == "__main__":
    main()
