"""The scale-out tests' server under ``run_http`` (uvicorn, the default
serving path) with short connection deadlines, for the deadline tests:
``python deadline_server.py PORT HEAD_TIMEOUT BODY_TIMEOUT STACK``. The app answers
a body that is late by ``BODY_TIMEOUT`` with 408; the connection's own body
deadline is twice that."""

from __future__ import annotations

import sys

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind._server.server import Server
from mcpbind.http import HttpOptions
from mcpbind.serving import run_http
from support.scaleout_app import STATE_KEY, Tools


def main() -> None:
    port, head, body, stack = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
    tools = Tools(Tasks())
    server = Server(tools, name="deadlines", version="1", state_key=STATE_KEY)
    tools.server = server
    run_http(
        server,
        port=port,
        stack=stack,
        head_timeout=head,
        connection_body_timeout=2 * body,
        legacy_sse=False,
        options=HttpOptions(body_timeout=body),
    )


if __name__ == "__main__":
    main()
