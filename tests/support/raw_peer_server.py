"""A stdio server written line by line, with no MCP library: it declares the
capabilities given as its first argument (JSON) and checks nothing the client sends.

Its tools, reached by ``tools/call``:

* ``probe`` sends the client the request given as the call's ``request`` argument
  (``{"method": ..., "params": ...}``) and answers with the client's response to it,
  as JSON text;
* ``seen`` answers with the methods of every message the client sent so far (and the
  ``task`` of each ``tools/call``), as JSON text.

    python tests/support/raw_peer_server.py '{"tools": {}}'
"""

from __future__ import annotations

import json
import sys
from typing import Any

# The answer to a task-augmented tools/call.
TASK_CREATED = {
    "task": {
        "taskId": "t-1",
        "status": "working",
        "createdAt": "2025-11-25T00:00:00Z",
        "lastUpdatedAt": "2025-11-25T00:00:00Z",
        "ttl": None,
    }
}


def write(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def text_result(request_id: Any, value: Any) -> None:
    write(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "result": {"content": [{"type": "text", "text": json.dumps(value)}]},
        }
    )


def main() -> None:
    capabilities = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {"tools": {}}
    seen: list[Any] = []
    waiting: dict[str, Any] = {}  # our request id -> the tools/call id to answer
    for line in sys.stdin:
        message = json.loads(line)
        method = message.get("method")
        if method is not None:
            params = message.get("params") or {}
            seen.append([method, params.get("task")] if method == "tools/call" else method)
        if method == "initialize":
            write(
                {
                    "jsonrpc": "2.0",
                    "id": message["id"],
                    "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": capabilities,
                        "serverInfo": {"name": "raw-peer", "version": "0"},
                    },
                }
            )
        elif method == "tools/call":
            name = message["params"]["name"]
            if name == "seen":
                text_result(message["id"], seen)
            elif name == "probe":
                request = message["params"]["arguments"]["request"]
                ours = f"probe-{message['id']}"
                waiting[ours] = message["id"]
                write({"jsonrpc": "2.0", "id": ours, **request})
            elif message["params"].get("task") is not None:
                write({"jsonrpc": "2.0", "id": message["id"], "result": TASK_CREATED})
            else:
                text_result(message["id"], "called")
        elif method is None and message.get("id") in waiting:
            text_result(waiting.pop(message["id"]), message)
        elif method is not None and "id" in message:
            write({"jsonrpc": "2.0", "id": message["id"], "result": {}})


if __name__ == "__main__":
    main()
