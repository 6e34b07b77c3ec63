"""The example app of examples/stdio_server.py, served over Streamable HTTP.

``python examples/http_server.py [--port 8000] [--stateless] [--json]`` listens on
127.0.0.1 at /mcp (and the legacy HTTP+SSE endpoints /sse and /messages).
"""

from __future__ import annotations

import argparse

from stdio_server import app


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--json", action="store_true", help="answer POSTs with JSON instead of SSE")
    options = parser.parse_args()
    app.run_http(
        options.host, options.port, stateless=options.stateless, json_response=options.json
    )


if __name__ == "__main__":
    main()
