"""A 2025-03-26 batch holding members that are no message: each member gets its
own answer, over every transport a batch can come by (stdio, Streamable HTTP,
the HTTP+SSE transport).

JSON-RPC 2.0, section 6 (Batch): the server answers "with an Array
containing the corresponding Response objects"; its example
``[1,2,3]`` gets one Invalid Request error with a null id per member, and
``[{"jsonrpc": "2.0", "method": "sum", ...}, {"foo": "boo"}, ...]`` gets the
sum's result beside the invalid member's error. Only a batch that is not an
array of at least one value gets "a single Response object". A member that
is an object of the wrong shape is answered the same way as one that is not
an object at all.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
from support.http_servers import lowlevel_server, run, serving
from support.rawstdio import RawServer

from mcpbind._core import jsonrpc
from mcpbind._transports.http.client.sse_parser import SSEParser
from mcpbind._transports.http.server.legacy_sse import LegacySSEApp
from mcpbind.http import http_app

RELIABILITY_SERVER = Path(__file__).resolve().parents[1] / "support" / "reliability_server.py"
VERSION = "2025-03-26"  # the last revision with batches
ACCEPT = "application/json, text/event-stream"


def ping(request_id: int) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


INVALID: dict[str, Any] = {"code": jsonrpc.INVALID_REQUEST}
# Each batch, and the (id, result or error code) of the answers it must get, in any order.
BATCHES: list[tuple[list[Any], list[tuple[Any, Any]]]] = [
    # The issue's own: a request and a number.
    ([ping(83), 5], [(83, {}), (None, INVALID)]),
    # Not an object, in several kinds, around two requests.
    (
        ["x", ping(84), None, [ping(99)], ping(85), True],
        [(84, {}), (85, {})] + [(None, INVALID)] * 4,
    ),
    # Objects that are no valid request: an invalid request each (under the id when it
    # can be read), not the batch's end.
    (
        [{"jsonrpc": "1.0", "id": 86, "method": "ping"}, ping(87), {"id": {}, "method": []}],
        [(86, INVALID), (87, {}), (None, INVALID)],
    ),
    # Nothing valid: one error per member.
    ([1, 2, 3], [(None, INVALID)] * 3),
]


def outcome(answer: dict[str, Any]) -> tuple[Any, Any]:
    """(id, result) of a result, (id, {"code": code}) of an error."""
    if "error" in answer:
        return answer.get("id"), {"code": answer["error"]["code"]}
    return answer["id"], answer["result"]


def ordered(outcomes: list[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    return sorted(outcomes, key=json.dumps)


def initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": VERSION,
            "capabilities": {},
            "clientInfo": {"name": "batches", "version": "0"},
        },
    }


def test_over_stdio_each_member_of_a_batch_is_answered() -> None:
    """A real stdio server process at 2025-03-26: every batch gets one answer
    per member that is a request or no message at all, and the session goes on."""

    async def main() -> None:
        server = await RawServer.start([sys.executable, str(RELIABILITY_SERVER), "stdio"])
        try:
            await server.initialize(VERSION)
            for batch, expected in BATCHES:
                await server.send(json.dumps(batch).encode())
                answers = [outcome(await server.receive()) for _ in expected]
                assert ordered(answers) == ordered(expected), batch
            assert (await server.request("after", "ping"))["result"] == {}
        finally:
            await server.close()

    run(main())


def test_over_streamable_http_each_member_of_a_batch_is_answered() -> None:
    """A 2025-03-26 session over Streamable HTTP: the same answers, in the
    POST's answer (a 400 with an array when no member is a message)."""

    async def main(url: str) -> None:
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        async with httpx.AsyncClient(timeout=30) as raw:
            opened = await raw.post(url, content=json.dumps(initialize()), headers=headers)
            assert opened.status_code == 200, opened.text
            headers["mcp-session-id"] = opened.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await raw.post(url, json=initialized, headers=headers)).status_code == 202
            for batch, expected in BATCHES:
                response = await raw.post(url, content=json.dumps(batch), headers=headers)
                if response.headers["content-type"].startswith("text/event-stream"):
                    events = SSEParser().feed(response.content)
                    answers = [json.loads(event.data) for event in events if event.data]
                else:
                    answers = response.json()
                assert ordered([outcome(a) for a in answers]) == ordered(expected), batch

    with serving(http_app(lowlevel_server())) as server:
        run(main(server.url()))


def test_over_http_and_sse_each_member_of_a_batch_is_answered() -> None:
    """The HTTP+SSE transport, at 2025-03-26: each POST is accepted (202) and
    every answer comes on the session's event stream."""

    async def main(server_url: Any) -> None:
        async with (
            httpx.AsyncClient(timeout=30) as raw,
            raw.stream("GET", server_url("/sse")) as stream,
        ):
            parser = SSEParser()
            chunks = stream.aiter_bytes()
            pending: list[Any] = []

            async def next_message() -> dict[str, Any]:
                while not pending:
                    pending.extend(e for e in parser.feed(await anext(chunks)))
                event = pending.pop(0)
                if event.event == "endpoint":
                    return {"endpoint": event.data}
                message: dict[str, Any] = json.loads(event.data)
                return message

            target = server_url((await next_message())["endpoint"])
            assert (await raw.post(target, json=initialize())).status_code == 202
            assert (await next_message())["result"]["protocolVersion"] == VERSION
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert (await raw.post(target, json=initialized)).status_code == 202
            for batch, expected in BATCHES:
                posted = await raw.post(target, content=json.dumps(batch))
                assert posted.status_code == 202, posted.text
                answers = [outcome(await next_message()) for _ in expected]
                assert ordered(answers) == ordered(expected), batch
            assert (await raw.post(target, json=ping(100))).status_code == 202
            assert await next_message() == {"jsonrpc": "2.0", "id": 100, "result": {}}

    with serving(LegacySSEApp(lowlevel_server())) as server:
        run(main(server.url))
