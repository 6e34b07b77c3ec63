"""Ownership: a task of the tasks extension belongs to whoever made it.

Its owner is the authenticated principal where there is one, else the
session, else the connection (mcpbind._core.ownership); a 2026-07-28 HTTP
request without authorization has none, and its task is reached by id. Everyone else, whatever
method they use (tasks/get, tasks/update, tasks/cancel), gets exactly the
answer an id that never existed gets, and the task goes on untouched. Task
ids never reach the log. Tried in memory (principals set on the transport, as
an authorization gate does), through the HTTP app with a principal in the
ASGI scope, and over real HTTP connections (uvicorn on 127.0.0.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from support.figures import record
from support.http_servers import run, serving
from support.transports import MemoryTransport, memory_pair
from typing_extensions import override

from mcpbind._core import jsonrpc
from mcpbind._core.limits import local_client
from mcpbind._core.ownership import PRINCIPAL_SCOPE_KEY
from mcpbind._core.wire import RequestExtra
from mcpbind._extensions.tasks.serving import EXTENSION_ID, TaskContext, Tasks
from mcpbind._server.server import Server, ServerSession
from mcpbind.auth._principal import Principal
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": {
        "extensions": {EXTENSION_ID: {}},
        "elicitation": {"form": {}},
    },
}
SCHEMA = mcp.ElicitRequestFormParamsRequestedSchema(
    type="object", properties={"ok": mcp.StringSchema(type="string")}
)


class Work(mcp.ServerHandlers):
    """``wait``: a task that asks for input, then waits until released; ``fail``: one that raises."""

    def __init__(self, tasks: Tasks) -> None:
        self.tasks = tasks
        self.release = asyncio.Event()

    @override
    async def call_tool(
        self, params: mcp.CallToolRequestParams, ctx: RequestContext
    ) -> mcp.CallToolResultResponseResult:
        async def work(task: TaskContext) -> mcp.CallToolResult:
            if params.name == "fail":
                raise RuntimeError("the work failed")
            await task.elicit(
                mcp.ElicitRequestFormParams(message="Go on?", requested_schema=SCHEMA), key="go"
            )
            await self.release.wait()
            return mcp.CallToolResult(content=[mcp.TextContent(text="done")])

        return await self.tasks.start(ctx, work)


def make_server() -> tuple[Server, Work]:
    tasks = Tasks(tools={"wait": "required", "fail": "required"})
    work = Work(tasks)
    return Server(work, name="owned", version="1", extensions=[tasks]), work


def message(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {**params, "_meta": META},
    }


TRESPASS = [
    ("tasks/get", {}),
    ("tasks/update", {"inputResponses": {"go": {"action": "accept", "content": {"ok": "yes"}}}}),
    ("tasks/cancel", {}),
]


def unknown_shape(answer: dict[str, Any], task_id: str) -> Any:
    """The answer with the id it names taken out: what must not differ between a foreign and an unknown id."""
    return json.loads(json.dumps(answer).replace(task_id, "<id>"))


# ------------------------------------------------------------------ in memory, by principal and by connection


@contextlib.asynccontextmanager
async def connection(server: Server, principal: Principal | None) -> AsyncIterator[MemoryTransport]:
    client_end, server_end = memory_pair("client", "server")
    server_end.extra = RequestExtra(principal, local_client(principal))  # as an auth gate would
    task = asyncio.create_task(ServerSession(server, server_end).run())
    try:
        yield client_end
    finally:
        await client_end.close()
        await asyncio.wait_for(task, 10)


async def ask(
    wire: MemoryTransport, request_id: int, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    wire.send(message(request_id, method, params))
    while True:
        answer = await wire.receive()
        assert answer is not None
        if answer.get("id") == request_id:
            answer.pop("id")
            return answer


OWNERS: list[tuple[str, Principal | None, list[Principal | None]]] = [
    # (who makes the task, as whom, the others who try to reach it)
    (
        "principal",
        Principal("alice", client_id="app"),
        [
            Principal("bob", client_id="app"),
            Principal(None, client_id="app"),
            Principal("Alice"),
            None,
        ],
    ),
    (
        "client-credentials principal",
        Principal(None, client_id="svc"),
        [Principal(None, client_id="svc2"), Principal("svc"), None],
    ),
    ("connection", None, [None, Principal("alice")]),
]


@pytest.mark.parametrize(("kind", "owner", "others"), OWNERS, ids=[o[0] for o in OWNERS])
def test_another_owner_gets_the_unknown_task_answer(
    kind: str, owner: Principal | None, others: list[Principal | None]
) -> None:
    tried: Counter[str] = Counter()

    async def scenario() -> None:
        server, work = make_server()
        async with connection(server, owner) as mine:
            created = (await ask(mine, 1, "tools/call", {"name": "wait"}))["result"]
            task_id = created["taskId"]
            for other in others:
                async with connection(server, other) as theirs:
                    for method, params in TRESPASS:
                        never_id = secrets.token_urlsafe(18)
                        foreign = await ask(theirs, 2, method, {"taskId": task_id, **params})
                        never = await ask(theirs, 2, method, {"taskId": never_id, **params})
                        assert foreign["error"]["code"] == jsonrpc.INVALID_PARAMS, (method, foreign)
                        assert unknown_shape(foreign, task_id) == unknown_shape(never, never_id), (
                            foreign,
                            never,
                        )
                        tried[method] += 1
            # Nothing the others did reached the task: still waiting for its input.
            task = (await ask(mine, 3, "tasks/get", {"taskId": task_id}))["result"]
            assert task["status"] == "input_required" and "go" in task["inputRequests"]
            if owner is not None:
                # The same principal on another connection is the owner.
                async with connection(
                    server, Principal(owner.subject, client_id=owner.client_id)
                ) as again:
                    assert (await ask(again, 4, "tasks/get", {"taskId": task_id}))["result"][
                        "status"
                    ] == "input_required"
            assert "result" in await ask(
                mine, 5, "tasks/update", {"taskId": task_id, **TRESPASS[1][1]}
            )
            work.release.set()

    run(scenario())
    record(
        f"security.ownership.tasks.{kind.replace(' ', '_')}",
        {"foreign_attempts": sum(tried.values()), "by_method": dict(tried)},
    )


def test_task_ids_stay_out_of_the_log(caplog: pytest.LogCaptureFixture) -> None:
    """A task that fails, and lookups by others: no log line (tracebacks included) names the id."""

    async def scenario() -> str:
        server, work = make_server()
        async with connection(server, None) as mine, connection(server, None) as theirs:
            task_id = (await ask(mine, 1, "tools/call", {"name": "fail"}))["result"]["taskId"]
            for _ in range(100):
                if (await ask(mine, 2, "tasks/get", {"taskId": task_id}))["result"][
                    "status"
                ] == "failed":
                    break
                await asyncio.sleep(0.01)
            await ask(theirs, 3, "tasks/get", {"taskId": task_id})
            work.release.set()
        return str(task_id)

    with caplog.at_level(logging.DEBUG, logger="mcpbind"):
        task_id = run(scenario())
    assert any("task failed" in r.getMessage() for r in caplog.records)
    assert task_id not in caplog.text


# ------------------------------------------------------------------ over HTTP: the connection owns the task


def http_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {
        "content-type": "application/json",
        "accept": "application/json",
        "mcp-protocol-version": VERSION,
        "mcp-method": method,
    }
    if name is not None:
        headers["mcp-name"] = name
    return headers


def test_over_http_a_task_belongs_to_its_principal() -> None:
    """2026-07-28 over HTTP: with a principal in the scope (what an
    authorization layer puts there), bob and unauthenticated callers get the
    unknown-task answer for alice's task on every method, and alice reaches
    it from any request. Without authorization (real uvicorn, three other
    connections) the unguessable id alone reaches it: such requests have
    neither a session nor a lasting connection to bind to."""
    server, work = make_server()

    async def authenticated() -> int:
        app = http_app(server)
        alice = Principal("alice", client_id="app")
        body = json.dumps(message(1, "tools/call", {"name": "wait"})).encode()
        status, answer = await as_principal(
            app, alice, "POST", http_headers("tools/call", "wait"), body
        )
        assert status == 200, answer
        task_id = json.loads(answer)["result"]["taskId"]
        # The work runs beside the requests: wait until it asks for input, so that the
        # trespassing tasks/update below has an input request to answer. (Python 3.12's
        # wait_for no longer passes through the event loop, so a fixed number of requests
        # is no longer time enough for it.)
        await until_status(app, alice, task_id, "input_required")
        attempts = 0
        for other in (Principal("bob", client_id="app"), None, Principal(None, client_id="app")):
            for method, params in TRESPASS:
                request = json.dumps(message(2, method, {"taskId": task_id, **params})).encode()
                status, answer = await as_principal(
                    app, other, "POST", http_headers(method, task_id), request
                )
                assert (
                    status == 400 and json.loads(answer)["error"]["code"] == jsonrpc.INVALID_PARAMS
                ), (other, method, answer)
                attempts += 1
        request = json.dumps(message(3, "tasks/get", {"taskId": task_id})).encode()
        status, answer = await as_principal(
            app,
            Principal("alice", client_id="app"),
            "POST",
            http_headers("tasks/get", task_id),
            request,
        )
        assert json.loads(answer)["result"]["status"] == "input_required"
        return attempts

    attempts = run(authenticated())
    with serving(http_app(server)) as running:
        url = running.url()

        async def anonymous() -> None:
            async with httpx.AsyncClient(timeout=10) as mine:
                made = await mine.post(
                    url,
                    json=message(1, "tools/call", {"name": "wait"}),
                    headers=http_headers("tools/call", "wait"),
                )
                task_id = made.json()["result"]["taskId"]
            for _ in range(3):
                async with httpx.AsyncClient(timeout=10) as elsewhere:
                    polled = await elsewhere.post(
                        url,
                        json=message(2, "tasks/get", {"taskId": task_id}),
                        headers=http_headers("tasks/get", task_id),
                    )
                    assert polled.json()["result"]["status"] == "input_required"
            await running.call(lambda: _release(work))

        run(anonymous())
    record("security.ownership.tasks.http_principal", {"foreign_attempts": attempts})


async def until_status(app: Any, owner: Principal, task_id: str, wanted: str) -> None:
    """Poll tasks/get as ``owner`` until the task's status is ``wanted``."""
    request = json.dumps(message(9, "tasks/get", {"taskId": task_id})).encode()
    while True:
        _status, answer = await as_principal(
            app, owner, "POST", http_headers("tasks/get", task_id), request
        )
        if json.loads(answer)["result"]["status"] == wanted:
            return
        await asyncio.sleep(0.01)


async def _release(work: Work) -> None:
    work.release.set()


# ------------------------------------------------------------------ sessions and their streams, by principal


async def as_principal(
    app: Any, principal: Principal | None, method: str, head: dict[str, str], body: bytes = b""
) -> tuple[int, bytes]:
    """One request to ``app`` authenticated as ``principal`` (as an authorization layer marks it in the scope)."""
    status = 0
    chunks: list[bytes] = []
    sent = False
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            chunks.append(message.get("body", b""))
            gone.set()  # one piece is enough: streams are left at once

    scope = {
        "type": "http",
        "http_version": "1.1",
        "method": method,
        "path": "/mcp",
        "raw_path": b"/mcp",
        "root_path": "",
        "query_string": b"",
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 8000),
        "headers": [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1", **head}.items()],
        PRINCIPAL_SCOPE_KEY: principal,
    }
    await asyncio.wait_for(app(scope, receive, send), 10)
    return status, b"".join(chunks)


def test_a_principals_session_and_streams_are_unknown_to_everyone_else() -> None:
    """alice's session id, from bob, from an unauthenticated request and
    from alice's other client id: POST, GET (and Last-Event-ID resumption)
    and DELETE all get the 404 a never-issued id gets; alice's own work on."""
    from support.reliability_server import reliability_server

    async def scenario() -> int:
        app = http_app(reliability_server())
        alice = Principal("alice", client_id="app")
        post = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "o", "version": "0"},
            },
        }
        status, _ = await as_principal(app, alice, "POST", post, json.dumps(init).encode())
        assert status == 200
        session_id = next(iter(app.streamable.sessions))
        mine = {**post, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
        status, body = await as_principal(
            app, alice, "POST", mine, b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
        )
        assert status == 200
        event_id = body.split(b"id: ", 1)[1].split(b"\n", 1)[0].decode()
        attempts = 0
        for other in (Principal("bob", client_id="app"), None, Principal(None, client_id="app")):
            for method, head, payload in (
                ("POST", mine, b'{"jsonrpc":"2.0","id":2,"method":"ping"}'),
                (
                    "GET",
                    {
                        "accept": "text/event-stream",
                        "mcp-session-id": session_id,
                        "mcp-protocol-version": "2025-11-25",
                    },
                    b"",
                ),
                (
                    "GET",
                    {
                        "accept": "text/event-stream",
                        "mcp-session-id": session_id,
                        "mcp-protocol-version": "2025-11-25",
                        "last-event-id": event_id,
                    },
                    b"",
                ),
                ("DELETE", {"mcp-session-id": session_id}, b""),
            ):
                foreign = await as_principal(app, other, method, head, payload)
                never = await as_principal(
                    app,
                    other,
                    method,
                    {**head, "mcp-session-id": secrets.token_urlsafe(32)},
                    payload,
                )
                assert foreign[0] == never[0] == 404, (other, method, foreign, never)
                assert foreign[1] == never[1]
                attempts += 1
        assert session_id in app.streamable.sessions
        status, _ = await as_principal(
            app, alice, "POST", mine, b'{"jsonrpc":"2.0","id":3,"method":"ping"}'
        )
        assert status == 200
        await app.streamable.close()
        return attempts

    record("security.ownership.sessions_by_principal", {"foreign_attempts": run(scenario())})
