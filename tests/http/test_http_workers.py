"""Stateless servers scale across workers: each 2026-07-28 request is served by
whichever process takes it. Here, three ASGI applications with servers of their
own stand for three workers behind a load balancer; the rounds of one
multi round-trip request land on different ones."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from support.asgi import Response, request
from support.peers import run
from typing_extensions import override

from mcpbind._core import jsonrpc
from mcpbind._server.server import Server
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

KEY = b"shared by the workers of one deployment"
META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
}
SCHEMA = mcp.ElicitRequestFormParamsRequestedSchema(
    type="object", properties={"name": mcp.StringSchema(type="string")}
)


class Greeter(mcp.ServerHandlers):
    """Keeps nothing between requests: what it needs next time is in requestState."""

    def __init__(self, worker: str) -> None:
        self.worker = worker

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResultResponseResult:
        answers = params.input_responses if isinstance(params.input_responses, dict) else {}
        answer = answers.get("name")
        if not isinstance(answer, mcp.ElicitResult):
            form = mcp.ElicitRequestFormParams(message="Name?", requested_schema=SCHEMA)
            return mcp.InputRequiredResult(
                input_requests={"name": mcp.ElicitRequest(params=form)},
                request_state=f"asked by {self.worker}",
            )
        text = f"Hello {answer.content}; {params.request_state}, answered by {self.worker}"
        return mcp.CallToolResult(content=[mcp.TextContent(text=text)])


def worker(name: str, key: bytes = KEY) -> Any:
    return http_app(
        Server(Greeter(name), name="greeter", version="1", state_key=key), legacy_sse=False
    )


async def post(app: Any, request_id: int, params: dict[str, Any]) -> Response:
    body = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {**params, "_meta": META},
    }
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": params["name"],
    }
    return await request(app, "POST", "/mcp", headers=headers, body=json.dumps(body).encode())


def test_the_rounds_of_one_request_may_land_on_different_workers() -> None:
    async def scenario() -> None:
        first, second, stranger = (
            worker("worker 1"),
            worker("worker 2"),
            worker("worker 3", key=b"another deployment, another key!"),
        )
        asked = await post(first, 1, {"name": "greet"})
        assert asked.status == 200 and "mcp-session-id" not in asked.headers
        result = asked.json()["result"]
        assert result["resultType"] == "input_required"
        retry = {
            "name": "greet",
            "inputResponses": {"name": {"action": "accept", "content": {"name": "Ada"}}},
            "requestState": result["requestState"],
        }
        answered = await post(second, 2, retry)
        assert answered.status == 200
        text = answered.json()["result"]["content"][0]["text"]
        assert text == "Hello {'name': 'Ada'}; asked by worker 1, answered by worker 2"
        # A worker that does not share the key cannot read (or be fooled by) the state.
        refused = await post(stranger, 3, retry)
        assert refused.status == 400 and refused.json()["error"]["code"] == jsonrpc.INVALID_PARAMS

    run(scenario())


def test_many_requests_spread_over_workers_all_complete() -> None:
    async def scenario() -> None:
        workers = [worker(f"worker {i}") for i in range(3)]

        async def one(n: int) -> str:
            asked = (await post(workers[n % 3], 2 * n + 1, {"name": "greet"})).json()["result"]
            retry = {
                "name": "greet",
                "inputResponses": {"name": {"action": "accept", "content": {"name": f"user {n}"}}},
                "requestState": asked["requestState"],
            }
            answered = (await post(workers[(n + 1) % 3], 2 * n + 2, retry)).json()
            text: str = answered["result"]["content"][0]["text"]
            return text

        texts = await asyncio.gather(*(one(n) for n in range(60)))
        for n, text in enumerate(texts):
            assert (
                text
                == f"Hello {{'name': 'user {n}'}}; asked by worker {n % 3}, answered by worker {(n + 1) % 3}"
            )

    run(scenario())
