"""A proxied server's task-capable tools run through the proxy as tasks of the
front (2025-11-25 core tasks, and the 2026-07-28 tasks extension for a client
that declares it) whose work is the backend's call, and the front's resource
subscriptions (resources/subscribe, or a 2026-07-28 listen stream) reach the
backend, whose updates come back under the prefix. server-everything behind an
app (and a 2026-07-28 app for the backend's listen stream), driven by clients
of 2025-11-25 and 2026-07-28."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from msgspec import to_builtins
from support.http_servers import serving
from support.peers import (
    SERVER_EVERYTHING,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import McpError
from mcpbind._extensions.tasks.serving import (
    EXTENSION_ID,
    TASKS_GET,
    TASKS_UPDATE,
    GetTaskParams,
    UpdateTaskParams,
)
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App
from mcpbind.methods import MethodSpec, RequestContext
from mcpbind_protocol import v2025_11_25, v2026_07_28

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

RESEARCH = "everything_simulate-research-query"
WAIT = 30.0  # a deadline against hanging, not a measure


def everything_behind_an_app() -> App:
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")
    return app


@pytest.mark.node
def test_a_task_required_backend_tool_runs_as_a_task_through_the_proxy() -> None:
    """The 2025-11-25 schema's ToolExecution: "\"required\": Tool requires
    task-augmented execution". The front lists the backend's taskSupport, refuses
    a plain call, and runs a task whose work is the backend's own task."""
    app = everything_behind_an_app()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            stub = v2025_11_25.ClientStub(session)
            tools = {tool.name: tool for tool in (await stub.list_tools()).tools}
            execution = tools[RESEARCH].execution
            assert isinstance(execution, v2025_11_25.ToolExecution)
            assert execution.task_support == "required"
            with pytest.raises(McpError, match="runs only as a task"):
                await stub.call_tool(RESEARCH, arguments={"topic": "gateways"})
            created = await stub.call_tool_as_task(
                RESEARCH, arguments={"topic": "gateways"}, task=v2025_11_25.TaskMetadata()
            )
            task_id = created.task.task_id
            result = await stub.call_tool_task_result(task_id)
            text = "".join(getattr(block, "text", "") for block in result.content)
            assert "gateways" in text
            assert (await stub.get_task(task_id)).status == "completed"

    run(main())


class Subscriber(v2025_11_25.ClientHandlers):
    def __init__(self) -> None:
        self.updated: asyncio.Queue[str] = asyncio.Queue()

    async def on_resource_updated(self, params: Any, ctx: RequestContext) -> None:
        self.updated.put_nowait(params.uri)


@pytest.mark.node
def test_a_front_subscription_reaches_the_backend_and_its_updates_come_back() -> None:
    app = everything_behind_an_app()
    front = Subscriber()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25", handlers=front) as session:
            stub = v2025_11_25.ClientStub(session)
            uri = (await stub.list_resources()).resources[0].uri
            assert uri.startswith("demo://everything/")
            await stub.subscribe(uri)
            # The backend sends an update for each subscribed resource at once, then every 5 s.
            await stub.call_tool("everything_toggle-subscriber-updates", arguments={})
            async with asyncio.timeout(WAIT):
                assert await front.updated.get() == uri
            await stub.call_tool("everything_toggle-subscriber-updates", arguments={})
            await stub.unsubscribe(uri)

    run(main())


def test_a_front_subscription_reaches_a_2026_07_28_backend_on_its_listen_stream() -> None:
    """A 2026-07-28 backend tells of updates only on a subscriptions/listen
    stream: the proxy's stream asks for the URIs the front's clients subscribe to."""
    backend = App("notes", versions=["2026-07-28"])

    @backend.resource("note://pad")
    def pad() -> str:
        return "the pad"

    @backend.tool()
    async def touch() -> str:
        await backend.notify_resource_updated("note://pad")
        return "touched"

    app = App("front")
    front = Subscriber()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25", handlers=front) as session:
            stub = v2025_11_25.ClientStub(session)
            uri = (await stub.list_resources()).resources[0].uri
            assert uri == "note://notes/pad"
            await stub.subscribe(uri)
            await stub.call_tool("notes_touch", arguments={})
            async with asyncio.timeout(WAIT):
                assert await front.updated.get() == uri

    with serving(backend.asgi()) as served:
        app.proxy(served.url(), prefix="notes")
        run(main())


_CALL_AS_TASK: MethodSpec[Any, Any] = MethodSpec(
    method="tools/call", direction="client_to_server", kind="request",
    params=v2026_07_28.CallToolRequestParams, result=dict[str, Any], params_required=True,
    handler="call_tool",
)  # fmt: skip


async def task_until(session: Any, task_id: str, statuses: set[str]) -> Any:
    """tasks/get until the task shows one of ``statuses``."""
    async with asyncio.timeout(WAIT):
        while True:
            got = await session.request(TASKS_GET, GetTaskParams(task_id=task_id))
            if got.status in statuses:
                return got
            await asyncio.sleep(0.05)


def modern_tasks_client() -> Client:
    capabilities = {"extensions": {EXTENSION_ID: {}}, "elicitation": {"form": {}}}
    return Client(name="front", version="1", capabilities=capabilities)


@pytest.mark.node
def test_a_2026_07_28_client_asking_for_a_task_gets_one_of_a_proxied_task_tool() -> None:
    """A front that declares the tasks extension gets a task handle
    (``resultType: "task"``) for a proxied task-capable tool, whose work is the
    backend's own task, and polls its result with tasks/get."""
    app = everything_behind_an_app()

    async def main() -> None:
        async with app.test_client(client=modern_tasks_client()) as session:
            created = await session.request(
                _CALL_AS_TASK,
                v2026_07_28.CallToolRequestParams(name=RESEARCH, arguments={"topic": "gateways"}),
            )
            assert created["resultType"] == "task", created
            done = await task_until(session, created["taskId"], {"completed", "failed"})
            assert done.status == "completed", done
            text = "".join(block.get("text", "") for block in to_builtins(done.result)["content"])
            assert "gateways" in text

    run(main())


@pytest.mark.node
def test_a_backends_question_in_a_proxied_task_is_the_tasks_input_request() -> None:
    """A backend's question during a task of the front is the task's input
    request: the task shows ``input_required`` with it, and the client's
    tasks/update carries the answer to the backend."""
    app = everything_behind_an_app()

    async def main() -> None:
        async with app.test_client(client=modern_tasks_client()) as session:
            created = await session.request(
                _CALL_AS_TASK,
                v2026_07_28.CallToolRequestParams(
                    name=RESEARCH, arguments={"topic": "gateways", "ambiguous": True}
                ),
            )
            task_id = created["taskId"]
            asked = await task_until(session, task_id, {"input_required", "completed", "failed"})
            assert asked.status == "input_required", asked
            ((key, request),) = to_builtins(asked.input_requests).items()
            assert request["method"] == "elicitation/create"
            schema = request["params"]["requestedSchema"]["properties"]
            content = {name: next(iter(spec.get("enum", ["x"]))) for name, spec in schema.items()}
            answer = {key: {"action": "accept", "content": content}}
            await session.request(
                TASKS_UPDATE, UpdateTaskParams(task_id=task_id, input_responses=answer)
            )
            done = await task_until(session, task_id, {"completed", "failed"})
            assert done.status == "completed", done

    run(main())


class ModernSubscriber(v2026_07_28.ClientHandlers):
    def __init__(self) -> None:
        self.updated: asyncio.Queue[str] = asyncio.Queue()

    async def on_resource_updated(self, params: Any, ctx: RequestContext) -> None:
        self.updated.put_nowait(params.uri)


@pytest.mark.node
def test_a_2026_07_28_listen_stream_for_a_proxied_resource_reaches_the_backend() -> None:
    """A 2026-07-28 front tells of the resources it wants to hear of on a
    subscriptions/listen stream: the proxy subscribes the backend to the URIs
    it asks for under the prefix, while the stream is open, and the backend's
    updates come back on the stream under the prefix."""
    app = everything_behind_an_app()
    front = ModernSubscriber()

    async def main() -> None:
        async with app.test_client(protocol_version="2026-07-28", handlers=front) as session:
            stub = v2026_07_28.ClientStub(session)
            uri = (await stub.list_resources()).resources[0].uri
            assert uri.startswith("demo://everything/")
            listener = await session.listen(resource_subscriptions=[uri])
            assert listener.acknowledged["resourceSubscriptions"] == [uri]
            # The backend sends an update for each subscribed resource at once, then every 5 s.
            await stub.call_tool("everything_toggle-subscriber-updates", arguments={})
            async with asyncio.timeout(WAIT):
                assert await front.updated.get() == uri
            await stub.call_tool("everything_toggle-subscriber-updates", arguments={})
            await listener.close()
            proxy = app._proxies[0]
            async with asyncio.timeout(WAIT):  # the stream's end reaches the server after close
                while proxy.subscriptions.uris:
                    await asyncio.sleep(0.05)

    run(main())


def test_a_2026_07_28_listen_stream_reaches_a_2026_07_28_backends_listen_stream() -> None:
    """Both sides at 2026-07-28: the URI the front's listen stream asks for is
    asked for on the proxy's own listen stream to the backend."""
    backend = App("notes", versions=["2026-07-28"])

    @backend.resource("note://pad")
    def pad() -> str:
        return "the pad"

    @backend.tool()
    async def touch() -> str:
        await backend.notify_resource_updated("note://pad")
        return "touched"

    app = App("front")
    front = ModernSubscriber()

    async def main() -> None:
        async with app.test_client(protocol_version="2026-07-28", handlers=front) as session:
            listener = await session.listen(resource_subscriptions=["note://notes/pad"])
            assert listener.acknowledged["resourceSubscriptions"] == ["note://notes/pad"]
            await v2026_07_28.ClientStub(session).call_tool("notes_touch", arguments={})
            async with asyncio.timeout(WAIT):
                assert await front.updated.get() == "note://notes/pad"
            await listener.close()

    with serving(backend.asgi()) as served:
        app.proxy(served.url(), prefix="notes")
        run(main())
