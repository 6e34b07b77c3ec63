"""SSE priming events (an event id and empty data) go only to the revisions that
define them: 2025-11-25 on. A handshake session of 2024-11-05, 2025-03-26 or
2025-06-18 over Streamable HTTP gets streams whose every event carries a message,
on its POSTs (answered at once or late) and on its GET stream; clients of those
revisions parse each event's data as JSON-RPC, and the official Python SDK 1.x
logs "Error parsing SSE message", with a traceback, for every empty one.

2025-11-25, basic/transports: "The server **SHOULD** immediately send an SSE
event consisting of an event ID and an empty `data` field in order to prime the
client to reconnect (using that event ID as `Last-Event-ID`)." No earlier
revision has this sentence; their events all carry JSON-RPC messages.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import ThreadedServer, lowlevel_module, run, serving
from support.old_sdk import old_sdk_python
from support.peers import SUPPORT
from typing_extensions import override

from mcpbind._server.server import Server
from mcpbind._transports.http.client.sse_parser import SSEEvent, SSEParser
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

ACCEPT = "application/json, text/event-stream"
PRIMED = "2025-11-25"  # the first revision that defines priming events
OLDER = ["2024-11-05", "2025-03-26", "2025-06-18"]
ANNOUNCE = mcp.Tool(name="announce", input_schema=mcp.ToolInputSchema(type="object"))


class Announcing(lowlevel_module().LowLevelServer):
    """The low-level test server, plus ``announce``: a change of its tools told
    to every session, on the sessions' GET streams."""

    server: Server

    @override
    async def list_tools(self, params: Any, ctx: RequestContext) -> mcp.ListToolsResult:
        listed: mcp.ListToolsResult = await super().list_tools(params, ctx)
        return mcp.ListToolsResult(tools=[*listed.tools, ANNOUNCE])

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResult:
        if params.name == "announce":
            await self.server.notify_list_changed("tools")
            return mcp.CallToolResult(content=[mcp.TextContent(text="announced")])
        result: mcp.CallToolResult = await super().call_tool(params, ctx)
        return result


@pytest.fixture(scope="module")
def served() -> Iterator[ThreadedServer]:
    handlers = Announcing()
    handlers.server = Server(
        handlers, name="priming", version="1", capabilities={"tools": {"listChanged": True}}
    )
    with serving(http_app(handlers.server)) as server:
        yield server


def events_of(response: httpx.Response) -> list[SSEEvent]:
    assert response.headers["content-type"].startswith("text/event-stream"), response.headers
    return SSEParser().feed(response.content)


async def a_session(
    raw: httpx.AsyncClient, url: str, version: str
) -> tuple[dict[str, str], list[SSEEvent]]:
    """A session at ``version``: its POST headers, and the events of its initialize answer."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    response = await raw.post(url, content=json.dumps(initialize), headers=headers)
    assert response.status_code == 200, response.text
    events = events_of(response)
    answer = json.loads(next(e.data for e in events if e.data))
    assert answer["result"]["protocolVersion"] == version
    headers["mcp-session-id"] = response.headers["mcp-session-id"]
    if version >= "2025-06-18":
        headers["mcp-protocol-version"] = version
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert (await raw.post(url, json=initialized, headers=headers)).status_code == 202
    return headers, events


def call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


@pytest.mark.parametrize("version", [*OLDER, PRIMED])
def test_priming_events_go_only_to_revisions_that_define_them(
    served: ThreadedServer, version: str
) -> None:
    """Every stream of a session (the initialize answer, a call answered at
    once, one with progress, one answered late, the GET stream) starts with
    a priming event at 2025-11-25 and has none before it."""
    url = served.url()

    async def main() -> None:
        streams: list[list[SSEEvent]] = []
        async with httpx.AsyncClient(timeout=30) as raw:
            headers, initialized = await a_session(raw, url, version)
            streams.append(initialized)
            for number, (name, arguments) in enumerate(
                [("echo", {"text": "hi"}), ("count", {"steps": 3}), ("sleep", {"seconds": 0.2})]
            ):
                posted = await raw.post(
                    url, json=call(number + 1, name, arguments), headers=headers
                )
                assert posted.status_code == 200, posted.text
                streams.append(events_of(posted))
            # The GET stream, until it carries the change announced after it opened.
            async with raw.stream("GET", url, headers=headers) as stream:
                assert stream.status_code == 200
                announced = asyncio.ensure_future(
                    raw.post(url, json=call(9, "announce", {}), headers=headers)
                )
                parser, got = SSEParser(), []
                chunks = stream.aiter_bytes()
                while not any("list_changed" in e.data for e in got):
                    got += parser.feed(await anext(chunks))
                streams.append(got)
                assert (await announced).status_code == 200
        for events in streams:
            primes = [e for e in events if not e.data]
            if version >= PRIMED:
                assert events[0] in primes and len(primes) == 1, events
            else:
                assert primes == [], events
            assert all(e.id for e in events), events  # still resumable from the first message

    run(main())


@pytest.mark.peers
def test_an_sdk_1x_client_parses_every_event() -> None:
    """The official Python SDK 1.20.0, a client of 2025-06-18: a session with
    calls answered at once, streamed and late, and the GET stream, logs no
    "Error parsing SSE message" (it did once per stream, with a traceback)."""
    python = old_sdk_python("1.20.0")
    handlers = Announcing()
    handlers.server = Server(
        handlers, name="priming", version="1", capabilities={"tools": {"listChanged": True}}
    )
    with serving(http_app(handlers.server)) as server:
        done = subprocess.run(
            [str(python), str(SUPPORT / "sdk1_client.py"), server.url()],
            capture_output=True,
            text=True,
            timeout=120,
            env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},  # its own mcp only
        )
    assert done.returncode == 0, done.stderr
    assert "Error parsing SSE message" not in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    got = json.loads(done.stdout)
    assert got["version"] == "2025-06-18"
    assert "announce" in got["tools"] and got["announced"] is True
    assert got["texts"] == ["hi", "counted to 3", "awake"]
