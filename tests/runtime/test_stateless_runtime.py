"""The 2026-07-28 wire in the runtime: requests that describe themselves in
``_meta``, server/discover, input-required results, subscriptions/listen and
the per-request log level; driven in memory, byte by byte where the wire is
the point, and with our own client where the behaviour is."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from support.peers import run
from support.transports import MemoryTransport, RecordingTransport, memory_pair
from typing_extensions import override

from mcpbind._client import client as client_module
from mcpbind._client.client import Client, ClientSession
from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._core.lifecycle import SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY
from mcpbind._core.request_state import StateError, StateSealer
from mcpbind._server.server import Server, ServerSession
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25
from mcpbind_protocol import v2026_07_28 as m

VERSION = "2026-07-28"
CAPS: dict[str, Any] = {}
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientCapabilities": CAPS,
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


def _schema() -> m.ElicitRequestFormParamsRequestedSchema:
    return m.ElicitRequestFormParamsRequestedSchema(
        type="object", properties={"name": m.StringSchema(type="string")}
    )


class Handlers(m.ServerHandlers):
    @override
    async def list_tools(
        self, params: m.PaginatedRequestParams, ctx: RequestContext
    ) -> m.ListToolsResult:
        tool = m.Tool(name="ask", input_schema=m.ToolInputSchema(type="object"))
        return m.ListToolsResult(tools=[tool], ttl_ms=60_000, cache_scope="public")

    @override
    async def list_prompts(
        self, params: m.PaginatedRequestParams, ctx: RequestContext
    ) -> m.ListPromptsResult:
        # Asking for input is reserved to tools/call, prompts/get and resources/read.
        return m.InputRequiredResult(input_requests={})  # type: ignore[return-value]

    @override
    async def call_tool(
        self, params: m.CallToolRequestParams, ctx: RequestContext
    ) -> m.CallToolResultResponseResult:
        await ctx.log("debug", "a debug line")
        await ctx.log("warning", "a warning")
        if params.name == "ask":
            answers = params.input_responses if isinstance(params.input_responses, dict) else {}
            answer = answers.get("name")
            if not isinstance(answer, m.ElicitResult):
                return m.InputRequiredResult(
                    input_requests={
                        "name": m.ElicitRequest(
                            params=m.ElicitRequestFormParams(
                                message="Name?", requested_schema=_schema()
                            )
                        )
                    },
                    request_state=f"round-1 of {params.name}",
                )
            return m.CallToolResult(
                content=[m.TextContent(text=f"Hello {answer.content}, {params.request_state}")]
            )
        if params.name == "sample":
            request = m.CreateMessageRequest(
                params=m.CreateMessageRequestParams(messages=[], max_tokens=5)
            )
            return m.InputRequiredResult(input_requests={"s": request})
        if params.name == "forever":
            return m.InputRequiredResult(
                input_requests={
                    "name": m.ElicitRequest(
                        params=m.ElicitRequestFormParams(
                            message="Again?", requested_schema=_schema()
                        )
                    )
                }
            )
        if params.name == "empty":
            return m.InputRequiredResult(input_requests={})
        if params.name == "both":
            return m.InputRequiredResult(
                input_requests={
                    "name": m.ElicitRequest(
                        params=m.ElicitRequestFormParams(
                            message="Name?", requested_schema=_schema()
                        )
                    ),
                    "s": m.CreateMessageRequest(
                        params=m.CreateMessageRequestParams(messages=[], max_tokens=5)
                    ),
                }
            )
        if params.name == "change":
            await SERVER.notify_list_changed("tools")
            await SERVER.notify_resource_updated("memo://a")
            return m.CallToolResult(content=[])
        return m.CallToolResult(content=[m.TextContent(text="plain")])

    @override
    async def read_resource(
        self, params: m.ReadResourceRequestParams, ctx: RequestContext
    ) -> m.ReadResourceResultResponseResult:
        return m.ReadResourceResult(
            contents=[m.TextResourceContents(uri=params.uri, text="x")],
            ttl_ms=0,
            cache_scope="private",
        )


class Answers(m.ClientHandlers):
    def __init__(self) -> None:
        self.logs: list[str] = []
        self.changes: list[Any] = []

    @override
    async def elicit(self, params: m.ElicitRequestParams, ctx: RequestContext) -> m.ElicitResult:
        return m.ElicitResult(action="accept", content={"name": "Ada"})

    @override
    async def on_logging_message(
        self, params: m.LoggingMessageNotificationParams, ctx: RequestContext
    ) -> None:
        self.logs.append(params.level)

    @override
    async def on_tool_list_changed(self, params: m.NotificationParams, ctx: RequestContext) -> None:
        self.changes.append(("tools", params.meta))

    @override
    async def on_resource_updated(
        self, params: m.ResourceUpdatedNotificationParams, ctx: RequestContext
    ) -> None:
        self.changes.append(("resource", params.uri))


SERVER = Server(
    [v2025_11_25.ServerHandlers(), Handlers()], name="stateless", version="1.0", instructions="hi"
)


@contextlib.asynccontextmanager
async def raw_server(server: Server = SERVER) -> AsyncIterator[MemoryTransport]:
    """A server session at one end; the test speaks raw JSON-RPC at the other."""
    client_end, server_end = memory_pair("client", "server")
    task = asyncio.create_task(ServerSession(server, server_end).run())
    try:
        yield client_end
    finally:
        await client_end.close()
        await asyncio.wait_for(task, 10)


async def call(
    wire: MemoryTransport, method: str, params: Any = None, request_id: int = 1
) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    wire.send(message)
    while True:
        answer = await wire.receive()
        assert answer is not None
        if answer.get("id") == request_id and "method" not in answer:
            return answer


@contextlib.asynccontextmanager
async def connected(
    client: Client, server: Server = SERVER
) -> AsyncIterator[tuple[ClientSession, RecordingTransport]]:
    client_end, server_end = memory_pair("client", "server")
    task = asyncio.create_task(ServerSession(server, server_end).run())
    recorder = RecordingTransport(client_end)
    session = await client.connect(recorder)
    try:
        yield session, recorder
    finally:
        await session.close()
        await client_end.close()
        await asyncio.wait_for(task, 10)


# ------------------------------------------------------------------ the envelope


@pytest.mark.parametrize(
    "params, code, fragment",
    [
        (None, jsonrpc.INVALID_PARAMS, "_meta"),
        ({}, jsonrpc.INVALID_PARAMS, "_meta"),
        (
            {"_meta": {k: v for k, v in META.items() if "protocolVersion" not in k}},
            jsonrpc.INVALID_PARAMS,
            "protocolVersion",
        ),
        (
            {"_meta": {k: v for k, v in META.items() if "clientCapabilities" not in k}},
            jsonrpc.INVALID_PARAMS,
            "clientCapabilities",
        ),
        (
            {"_meta": {**META, "io.modelcontextprotocol/clientCapabilities": []}},
            jsonrpc.INVALID_PARAMS,
            "clientCapabilities",
        ),
        (
            {"_meta": {**META, "io.modelcontextprotocol/logLevel": "loud"}},
            jsonrpc.INVALID_PARAMS,
            "logLevel",
        ),
        ({"_meta": "no"}, jsonrpc.INVALID_PARAMS, "_meta"),
    ],
    ids=[
        "no params",
        "no _meta",
        "no version",
        "no capabilities",
        "capabilities not an object",
        "bad log level",
        "_meta not an object",
    ],
)
def test_a_request_that_does_not_describe_itself_is_invalid(
    params: Any, code: int, fragment: str
) -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            answer = await call(wire, "tools/list", params, request_id=7)
            assert answer["id"] == 7 and answer["error"]["code"] == code
            assert fragment in answer["error"]["message"]
            # The connection stays usable.
            assert "result" in await call(wire, "tools/list", {"_meta": META}, request_id=8)

    run(scenario())


def test_an_unsupported_version_is_refused_with_the_supported_ones() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            answer = await call(
                wire,
                "server/discover",
                {"_meta": {**META, "io.modelcontextprotocol/protocolVersion": "v999"}},
            )
            assert answer["error"]["code"] == jsonrpc.UNSUPPORTED_PROTOCOL_VERSION == -32022
            assert answer["error"]["data"] == {"requested": "v999", "supported": [VERSION]}

    run(scenario())


@pytest.mark.parametrize(
    "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "unknown/method"]
)
def test_methods_the_stateless_revision_removed_are_not_found(method: str) -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            assert "result" in await call(wire, "server/discover", {"_meta": META})
            answer = await call(wire, method, {"_meta": META}, request_id=2)
            assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND and answer["id"] == 2

    run(scenario())


def test_an_initialize_that_names_a_stateless_version_is_a_removed_method() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            answer = await call(wire, "initialize", {"_meta": META})
            assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND

    run(scenario())


def test_the_same_server_answers_a_handshake_client_with_the_handshake() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            params = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "old", "version": "0"},
            }
            answer = await call(wire, "initialize", params)
            assert answer["result"]["protocolVersion"] == "2025-11-25"
            assert answer["result"]["serverInfo"] == {"name": "stateless", "version": "1.0"}
            assert (await call(wire, "ping", None, request_id=2))["result"] == {}

    run(scenario())


def test_discover_and_every_result_name_the_server() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            found = (await call(wire, "server/discover", {"_meta": META}))["result"]
            assert found["supportedVersions"] == [VERSION]
            assert found["resultType"] == "complete" and found["instructions"] == "hi"
            assert found["capabilities"]["tools"] == {"listChanged": True}
            assert found["capabilities"]["resources"] == {"listChanged": True, "subscribe": True}
            assert found["_meta"][SERVER_INFO_KEY] == {"name": "stateless", "version": "1.0"}
            listed = (await call(wire, "tools/list", {"_meta": META}, request_id=2))["result"]
            assert listed["_meta"][SERVER_INFO_KEY]["name"] == "stateless"
            assert (
                listed["resultType"] == "complete"
                and listed["ttlMs"] == 60_000
                and listed["cacheScope"] == "public"
            )

    run(scenario())


# ------------------------------------------------------------------ input-required results


def test_input_required_round_trip_with_sealed_state() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}}
            params = {"name": "ask", "_meta": meta}
            first = (await call(wire, "tools/call", params))["result"]
            assert first["resultType"] == "input_required"
            assert first["inputRequests"]["name"]["method"] == "elicitation/create"
            sealed = first["requestState"]
            assert "round-1" not in sealed  # opaque to the client
            answer = {"name": {"action": "accept", "content": {"name": "Ada"}}}
            second = await call(
                wire, "tools/call", {**params, "inputResponses": answer, "requestState": sealed}, 2
            )
            assert second["result"]["content"][0]["text"] == "Hello {'name': 'Ada'}, round-1 of ask"
            # Altered, or replayed against another tool: refused.
            tampered = sealed[:-2] + ("AA" if not sealed.endswith("AA") else "BB")
            bad = await call(
                wire,
                "tools/call",
                {**params, "inputResponses": answer, "requestState": tampered},
                3,
            )
            assert (
                bad["error"]["code"] == jsonrpc.INVALID_PARAMS
                and "integrity" in bad["error"]["message"]
            )
            other = await call(
                wire, "tools/call", {**params, "name": "plain", "requestState": sealed}, 4
            )
            assert other["error"]["code"] == jsonrpc.INVALID_PARAMS
            # Responses that are not responses are invalid params.
            wrong = await call(wire, "tools/call", {**params, "inputResponses": {"name": 12345}}, 5)
            assert wrong["error"]["code"] == jsonrpc.INVALID_PARAMS

    run(scenario())


def test_sealed_state_expires_and_needs_the_key() -> None:
    sealer = StateSealer(b"k" * 32, lifetime=-1)
    with pytest.raises(StateError, match="expired"):
        sealer.open(sealer.seal("s", "b"), "b")
    token = StateSealer(b"k" * 32).seal("s", "b")
    assert StateSealer(b"k" * 32).open(token, "b") == "s"  # another worker with the same key
    with pytest.raises(StateError):
        StateSealer(b"x" * 32).open(token, "b")


def test_sealed_state_cannot_move_bytes_between_binding_and_payload() -> None:
    sealer = StateSealer(b"k" * 32)
    token = sealer.seal("state", "tools/call\0a")
    body, mac = token.removeprefix("v3.").split(".")
    payload = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    assert payload[:2] == b"\0\0"  # the expiry's high bytes
    # The same MAC input, split differently: a far-future expiry for a tool named "a\0\0".
    shifted = base64.urlsafe_b64encode(payload[2:]).rstrip(b"=").decode()
    with pytest.raises(StateError, match="integrity"):
        sealer.open(f"v3.{shifted}.{mac}", "tools/call\0a\0\0")


def test_input_the_client_cannot_give_is_a_missing_capability() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            answer = await call(wire, "tools/call", {"name": "sample", "_meta": META})
            assert answer["error"]["code"] == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY == -32021
            assert answer["error"]["data"] == {"requiredCapabilities": {"sampling": {}}}
            meta = {**META, "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}
            allowed = await call(wire, "tools/call", {"name": "sample", "_meta": meta}, 2)
            assert allowed["result"]["resultType"] == "input_required"

    run(scenario())


def test_only_three_methods_may_ask_for_input() -> None:
    async def scenario() -> None:
        async with raw_server() as wire:
            answer = await call(wire, "prompts/list", {"_meta": META})
            assert (
                answer["error"]["code"] == jsonrpc.INTERNAL_ERROR
                and "cannot ask for input" in answer["error"]["message"]
            )

    run(scenario())


def test_our_client_answers_input_requests_and_retries() -> None:
    async def scenario() -> None:
        answers = Answers()
        async with connected(Client(name="c", version="1", handlers=answers)) as (session, wire):
            assert session.stateless and session.protocol_version == VERSION
            result = await m.ClientStub(session).call_tool("ask")
            assert result.content[0].text == "Hello {'name': 'Ada'}, round-1 of ask"  # type: ignore[union-attr]
            calls = [msg for msg in wire.sent_messages() if msg.get("method") == "tools/call"]
            assert len(calls) == 2 and calls[0]["id"] != calls[1]["id"]
            assert calls[1]["params"]["inputResponses"]["name"]["action"] == "accept"
            # Rounds are bounded.
            with pytest.raises(McpError, match="still asks for input"):
                await m.ClientStub(session).call_tool("forever")

    run(scenario())


class Relating(Answers):
    """Input-request handlers that note which request of ours they answer for."""

    def __init__(self) -> None:
        super().__init__()
        self.related: list[Any] = []

    @override
    async def elicit(self, params: m.ElicitRequestParams, ctx: RequestContext) -> m.ElicitResult:
        self.related.append(ctx.extra.related)
        return await super().elicit(params, ctx)


def test_input_request_handlers_are_told_the_first_request_of_their_rounds() -> None:
    """A handler of a 2026-07-28 input request reads in ``ctx.extra.related``
    the call whose input-required result carried it: the first request of the
    rounds, in every round, though each retry is a request of its own id."""

    async def scenario() -> None:
        handlers = Relating()
        client = Client(name="c", version="1", handlers=handlers, max_input_rounds=3)
        async with connected(client) as (session, wire):
            await m.ClientStub(session).call_tool("ask")
            with pytest.raises(McpError, match="still asks for input"):
                await m.ClientStub(session).call_tool("forever")
            calls = [msg for msg in wire.sent_messages() if msg.get("method") == "tools/call"]
            ask, forever = calls[0]["id"], calls[2]["id"]
            assert len({call["id"] for call in calls}) == len(calls) == 6
            assert handlers.related == [ask, forever, forever, forever]

    run(scenario())


def test_an_input_required_result_without_requests_is_not_retried() -> None:
    async def scenario() -> None:
        async with connected(Client(name="c", version="1", handlers=Answers())) as (session, wire):
            with pytest.raises(McpError, match="without input requests"):
                await m.ClientStub(session).call_tool("empty")
            assert [msg.get("method") for msg in wire.sent_messages()].count("tools/call") == 1

    run(scenario())


def test_when_one_input_handler_fails_the_others_are_cancelled() -> None:
    class Refusing(m.ClientHandlers):
        def __init__(self) -> None:
            self.sampling_cancelled = asyncio.Event()

        @override
        async def elicit(
            self, params: m.ElicitRequestParams, ctx: RequestContext
        ) -> m.ElicitResult:
            await asyncio.sleep(0.01)
            raise McpError(jsonrpc.INVALID_REQUEST, "the user closed the form")

        @override
        async def create_message(
            self, params: m.CreateMessageRequestParams, ctx: RequestContext
        ) -> m.CreateMessageResult:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                self.sampling_cancelled.set()
                raise
            raise AssertionError("not reached")

    async def scenario() -> None:
        handlers = Refusing()
        async with connected(Client(name="c", version="1", handlers=handlers)) as (session, _):
            with pytest.raises(McpError, match="closed the form"):
                await asyncio.wait_for(m.ClientStub(session).call_tool("both"), 5)
            assert handlers.sampling_cancelled.is_set()

    run(scenario())


def test_a_client_without_the_handler_fails_clearly() -> None:
    async def scenario() -> None:
        async with connected(Client(name="c", version="1")) as (session, _):
            with pytest.raises(McpError) as refused:
                await m.ClientStub(session).call_tool("ask")
            assert refused.value.code == jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY

    run(scenario())


# ------------------------------------------------------------------ client: envelope, logging, cache, fallback


def test_every_request_carries_the_envelope_and_logs_follow_the_requested_level() -> None:
    async def scenario() -> None:
        quiet, loud = Answers(), Answers()
        async with connected(Client(name="c", version="1", handlers=quiet)) as (session, wire):
            await m.ClientStub(session).call_tool("plain")
            sent = [msg for msg in wire.sent_messages() if msg.get("method") == "tools/call"][0]
            meta = sent["params"]["_meta"]
            assert meta["io.modelcontextprotocol/protocolVersion"] == VERSION
            assert meta["io.modelcontextprotocol/clientInfo"] == {"name": "c", "version": "1"}
            assert meta["io.modelcontextprotocol/clientCapabilities"] == {"elicitation": {}}
            await asyncio.sleep(0.05)
            assert quiet.logs == []  # no log level asked, no log messages
        async with connected(Client(name="c", version="1", handlers=loud, log_level="info")) as (
            session,
            _,
        ):
            await m.ClientStub(session).call_tool("plain")
            await asyncio.sleep(0.05)
            assert loud.logs == ["warning"]

    run(scenario())


def test_the_cache_keeps_results_while_fresh_and_drops_them_on_change() -> None:
    async def scenario() -> None:
        answers = Answers()
        async with connected(Client(name="c", version="1", handlers=answers, cache=True)) as (
            session,
            wire,
        ):
            stub = m.ClientStub(session)
            first = await stub.list_tools()
            again = await stub.list_tools()
            assert again is first
            assert [msg.get("method") for msg in wire.sent_messages()].count("tools/list") == 1
            listener = await session.listen(tools_list_changed=True)
            await stub.call_tool("change")
            await asyncio.sleep(0.05)
            await stub.list_tools()
            assert [msg.get("method") for msg in wire.sent_messages()].count("tools/list") == 2
            # ttlMs 0: never kept.
            await stub.read_resource("memo://a")
            await stub.read_resource("memo://a")
            assert [msg.get("method") for msg in wire.sent_messages()].count("resources/read") == 2
            await listener.close()

    run(scenario())


def test_the_cache_is_bounded_and_skips_results_asked_for_before_a_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "MAX_CACHED", 2)

    async def scenario() -> None:
        async with connected(Client(name="c", version="1", cache=True)) as (session, wire):
            stub = m.ClientStub(session)
            for cursor in ("a", "b", "c"):
                await stub.list_tools(cursor=cursor)
            assert len(session._cache) == 2
            await stub.list_tools(cursor="c")  # the newest entry was kept
            assert [msg.get("method") for msg in wire.sent_messages()].count("tools/list") == 3
            # A change announced while a listing is on its way: that listing is not kept.
            asking = asyncio.ensure_future(stub.list_tools(cursor="d"))
            await asyncio.sleep(0)
            session.invalidate("tools/list")
            await asking
            await stub.list_tools(cursor="d")
            assert [msg.get("method") for msg in wire.sent_messages()].count("tools/list") == 5

    run(scenario())


def test_a_client_falls_back_to_the_handshake_with_an_older_server() -> None:
    async def scenario() -> None:
        old = Server(v2025_11_25.ServerHandlers(), name="old", version="1")
        async with connected(Client(name="c", version="1"), old) as (session, wire):
            assert not session.stateless and session.protocol_version == "2025-11-25"
            methods = [msg.get("method") for msg in wire.sent_messages()]
            assert methods[:2] == ["server/discover", "initialize"]

    run(scenario())


# ------------------------------------------------------------------ subscriptions/listen


def test_listen_acknowledges_first_then_delivers_what_was_asked_tagged() -> None:
    async def scenario() -> None:
        answers = Answers()
        async with connected(Client(name="c", version="1", handlers=answers)) as (session, wire):
            listener = await session.listen(tools_list_changed=True, prompts_list_changed=True)
            assert listener.acknowledged == {"toolsListChanged": True, "promptsListChanged": True}
            await m.ClientStub(session).call_tool("change")
            await asyncio.sleep(0.05)
            # The resource update the call also announced was not asked for.
            assert answers.changes == [("tools", {SUBSCRIPTION_ID_KEY: listener.id})]
            await listener.close()
            cancelled = [
                msg
                for msg in wire.sent_messages()
                if msg.get("method") == "notifications/cancelled"
            ]
            assert cancelled and cancelled[-1]["params"]["requestId"] == listener.id
            await asyncio.sleep(0.05)
            await m.ClientStub(session).call_tool("change")
            await asyncio.sleep(0.05)
            assert len(answers.changes) == 1  # nothing after the stream closed

    run(scenario())


def test_a_listen_stream_outlives_the_default_timeout() -> None:
    async def scenario() -> None:
        answers = Answers()
        async with connected(
            Client(name="c", version="1", handlers=answers, default_timeout=0.1)
        ) as (session, _):
            listener = await session.listen(tools_list_changed=True)
            await asyncio.sleep(0.3)
            assert listener.open
            await m.ClientStub(session).call_tool("change")
            await asyncio.sleep(0.05)
            assert answers.changes == [("tools", {SUBSCRIPTION_ID_KEY: listener.id})]
            await listener.close()

    run(scenario())


def test_resource_subscriptions_and_a_graceful_end() -> None:
    async def scenario() -> None:
        answers = Answers()
        async with connected(Client(name="c", version="1", handlers=answers)) as (session, _):
            listener = await session.listen(resource_subscriptions=["memo://a"])
            await m.ClientStub(session).call_tool("change")
            await asyncio.sleep(0.05)
            assert answers.changes == [("resource", "memo://a")]
            SERVER.end_subscriptions()
            assert listener.task is not None
            result = await asyncio.wait_for(listener.task, 5)
            assert result.meta[SUBSCRIPTION_ID_KEY] == listener.id

    run(scenario())


def test_listen_on_a_handshake_session_is_refused_locally() -> None:
    async def scenario() -> None:
        client = Client(name="c", version="1", protocol_version="2025-11-25")
        async with connected(client) as (session, _):
            with pytest.raises(McpError) as refused:
                await session.listen(tools_list_changed=True)
            assert refused.value.code == jsonrpc.METHOD_NOT_FOUND

    run(scenario())


def test_a_client_asks_again_with_a_version_the_server_offers() -> None:
    async def scenario() -> None:
        client_end, server_end = memory_pair("client", "server")
        seen: list[str] = []

        async def picky_server() -> None:
            while (message := await server_end.receive()) is not None:
                if "id" not in message:
                    continue
                seen.append(message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"])
                if len(seen) == 1:
                    error = {
                        "code": -32022,
                        "message": "Unsupported protocol version",
                        "data": {"supported": [VERSION], "requested": "x"},
                    }
                    server_end.send({"jsonrpc": "2.0", "id": message["id"], "error": error})
                else:
                    result = {
                        "supportedVersions": [VERSION],
                        "capabilities": {},
                        "ttlMs": 0,
                        "cacheScope": "private",
                    }
                    server_end.send({"jsonrpc": "2.0", "id": message["id"], "result": result})

        task = asyncio.create_task(picky_server())
        session = await Client(name="c", version="1").connect(client_end)
        assert session.stateless and seen == [VERSION, VERSION]
        await session.close()
        await server_end.close()
        await asyncio.wait_for(task, 5)

    run(scenario())


def test_a_server_of_stateless_revisions_only_judges_an_adopted_session_by_meta() -> None:
    async def scenario() -> None:
        modern_only = Server(Handlers(), name="m", version="1", versions=[VERSION])
        client_end, server_end = memory_pair("client", "server")
        session = ServerSession(modern_only, server_end)
        session.adopt(
            "2025-11-25"
        )  # what stateless HTTP does for a request naming a handshake revision
        task = asyncio.create_task(session.run())
        try:
            answer = await call(client_end, "tools/list", {}, request_id=3)
            assert (
                answer["error"]["code"] == jsonrpc.INVALID_PARAMS
                and "_meta" in answer["error"]["message"]
            )
            assert "result" in await call(client_end, "tools/list", {"_meta": META}, request_id=4)
        finally:
            await client_end.close()
            await asyncio.wait_for(task, 10)

    run(scenario())


def test_a_stateless_session_refuses_ping_from_the_start() -> None:
    async def scenario() -> None:
        client_end, server_end = memory_pair("client", "server")
        task = asyncio.create_task(ServerSession(SERVER, server_end, stateless=True).run())
        answer = await call(client_end, "ping", {"_meta": META})
        assert answer["error"]["code"] == jsonrpc.METHOD_NOT_FOUND
        await client_end.close()
        await asyncio.wait_for(task, 5)

    run(scenario())
