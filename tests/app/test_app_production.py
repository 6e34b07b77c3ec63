"""What a production server needs of the app layer, in process at every revision:
the lifespan, middleware (and the shipped ones), the injected headers,
lifespan state and session state, media converted per revision, visibility
with list-changed notifications to exactly the sessions whose view changed,
the typed decorators' run-time checks, and run settings."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import logging
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, TypedDict

import msgspec
import pytest
from support.asgi import request
from typing_extensions import override

import mcpbind
from mcpbind._client.client import Client
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import INVALID_PARAMS, McpError
from mcpbind.app import (
    RATE_LIMITED,
    App,
    Audio,
    Cache,
    Call,
    Content,
    Context,
    ErrorMapping,
    File,
    Image,
    LifespanError,
    Link,
    Message,
    Next,
    RateLimit,
    StructuredLogging,
    Timing,
)
from mcpbind.app._settings import RunSettings, SettingsError
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2024_11_05 as old
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

REVISIONS = ("2024-11-05", "2025-11-25", "2026-07-28")
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 8
WAV = b"RIFF\0\0\0\0WAVEfmt "


def stub(session: Any, version: str) -> Any:
    return lifecycle.revision(version).package.ClientStub(session)


def wire(value: Any) -> Any:
    return msgspec.to_builtins(value)


# ------------------------------------------------------------------ lifespan


def test_the_lifespan_runs_once_around_serving_and_its_state_reaches_functions() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: App[dict[str, int]]) -> AsyncIterator[dict[str, int]]:
        events.append("start")
        try:
            yield {"answer": 42}
        finally:
            events.append("stop")

    app = App("life", lifespan=lifespan)

    @app.tool()
    def answer(ctx: Context[dict[str, int]]) -> int:
        return ctx.lifespan["answer"]

    async def main() -> None:
        for version in REVISIONS:
            async with app.test_client(protocol_version=version) as session:
                result = await stub(session, version).call_tool("answer", arguments={})
                assert result.content[0].text == "42"
                assert app.lifespan_state == {"answer": 42}
        with pytest.raises(RuntimeError, match="lifespan has not started"):
            app.lifespan_state

    asyncio.run(main())
    assert events == ["start", "stop"] * len(REVISIONS)


def test_a_lifespan_that_fails_to_start_stops_serving_with_one_line() -> None:
    @contextlib.asynccontextmanager
    async def lifespan(app: App[None]) -> AsyncIterator[None]:
        raise OSError("database\nunreachable")
        yield

    app = App("broken", lifespan=lifespan)

    async def main() -> None:
        with pytest.raises(LifespanError) as caught:
            async with app.test_client():
                pass
        assert str(caught.value) == (
            "the app's lifespan failed to start: OSError: database unreachable"
        )

    asyncio.run(main())


def test_the_lifespan_tears_down_when_serving_ends_with_an_error() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: App[None]) -> AsyncIterator[None]:
        yield
        events.append("stop")

    app = App("err", lifespan=lifespan)

    async def main() -> None:
        with pytest.raises(ZeroDivisionError):
            async with app.test_client():
                1 / 0

    asyncio.run(main())
    assert events == ["stop"]


async def lifespan_messages(app: Any) -> list[str]:
    """Drive an ASGI app's lifespan (startup, then shutdown): the types of what it sent."""
    incoming = [{"type": "lifespan.shutdown"}, {"type": "lifespan.startup"}]
    sent: list[str] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop()

    async def send(message: dict[str, Any]) -> None:
        sent.append(message["type"])

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)
    return sent


def test_the_asgi_lifespan_runs_the_app_lifespan_and_reports_a_failure() -> None:
    events: list[str] = []

    @contextlib.asynccontextmanager
    async def lifespan(app: App[None]) -> AsyncIterator[None]:
        events.append("start")
        yield
        events.append("stop")

    app = App("asgi", lifespan=lifespan)
    sent = asyncio.run(lifespan_messages(app.asgi()))
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert events == ["start", "stop"]

    @contextlib.asynccontextmanager
    async def failing(app: App[None]) -> AsyncIterator[None]:
        raise RuntimeError("no model")
        yield

    sent = asyncio.run(lifespan_messages(App("asgi", lifespan=failing).asgi()))
    assert sent == ["lifespan.startup.failed"]


# ------------------------------------------------------------------ middleware


def test_middleware_runs_in_order_around_every_request_at_every_revision() -> None:
    seen: list[tuple[str, str, str]] = []

    def named(label: str) -> Any:
        async def middleware(call: Call, call_next: Next) -> Any:
            seen.append((label, call.method, call.protocol_version))
            return await call_next(call)

        return middleware

    app = App("mw", middleware=[named("outer"), named("inner")])

    @app.tool()
    def echo(text: str) -> str:
        return text

    async def main() -> None:
        for version in REVISIONS:
            seen.clear()
            async with app.test_client(protocol_version=version) as session:
                await stub(session, version).call_tool("echo", arguments={"text": "x"})
            assert [(label, method) for label, method, _ in seen] == [
                ("outer", "tools/call"),
                ("inner", "tools/call"),
            ]
            assert {v for _, _, v in seen} == {version}

    asyncio.run(main())


def test_middleware_can_short_circuit_replace_params_and_raise_protocol_errors() -> None:
    async def gate(call: Call, call_next: Next) -> Any:
        if call.method == "tools/call" and call.name == "forbidden":
            raise McpError(INVALID_PARAMS, "not for you")
        if call.method == "tools/call" and call.name == "cached":
            types = lifecycle.revision(call.protocol_version).package
            return types.CallToolResult(content=[types.TextContent(text="from the gate")])
        if call.method == "tools/call":
            arguments = {**call.params.arguments, "text": "rewritten"}
            call = call.replace(params=msgspec.structs.replace(call.params, arguments=arguments))
        return await call_next(call)

    app = App("gate", middleware=[gate])
    ran: list[str] = []

    @app.tool()
    def echo(text: str) -> str:
        return text

    @app.tool()
    def forbidden() -> str:
        ran.append("forbidden")
        return "no"

    @app.tool()
    def cached() -> str:
        ran.append("cached")
        return "no"

    async def main() -> None:
        for version in REVISIONS:
            async with app.test_client(protocol_version=version) as session:
                tools = stub(session, version)
                assert (await tools.call_tool("echo", arguments={"text": "a"})).content[
                    0
                ].text == "rewritten"
                assert (await tools.call_tool("cached", arguments={})).content[
                    0
                ].text == "from the gate"
                with pytest.raises(McpError) as refused:
                    await tools.call_tool("forbidden", arguments={})
                assert (refused.value.code, refused.value.message) == (
                    INVALID_PARAMS,
                    "not for you",
                )
        assert ran == []

    asyncio.run(main())


def test_middleware_sees_the_notifications_the_app_handles() -> None:
    seen: list[tuple[str, bool]] = []

    async def watch(call: Call, call_next: Next) -> Any:
        seen.append((call.method, call.notification))
        return await call_next(call)

    app = App("notes", middleware=[watch])

    @app.tool()
    def noop() -> None:
        return None

    async def main() -> None:
        client = Client(
            name="c",
            version="1",
            protocol_version="2025-11-25",
            capabilities={"roots": {"listChanged": True}},
        )
        async with app.test_client(protocol_version="2025-11-25", client=client) as session:
            await mcp.ClientStub(session).notify_roots_list_changed()
            await mcp.ClientStub(session).list_tools()

    asyncio.run(main())
    assert ("notifications/roots/list_changed", True) in seen and ("tools/list", False) in seen


def test_rate_limit_refuses_past_the_limit_per_client() -> None:
    app = App("limited", middleware=[RateLimit(3, per=60.0)])

    @app.tool()
    def ping() -> str:
        return "pong"

    async def main() -> None:
        for version in REVISIONS:
            limit = RateLimit(3, per=60.0)
            app.middleware = (limit,)
            app._server = None
            async with app.test_client(protocol_version=version) as session:
                tools = stub(session, version)
                for _ in range(3):
                    await tools.call_tool("ping", arguments={})
                with pytest.raises(McpError) as refused:
                    await tools.call_tool("ping", arguments={})
                assert refused.value.code == RATE_LIMITED
                assert refused.value.data == {"retryAfterSeconds": 60.0}

    asyncio.run(main())


def test_cache_keeps_lists_until_they_change_and_reads_until_updated() -> None:
    app = App("cached", middleware=[Cache(ttl=60.0)])
    reads: list[str] = []

    @app.resource("note://today")
    def today() -> str:
        reads.append("today")
        return f"read {len(reads)}"

    @app.tool()
    def one() -> str:
        return "1"

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            client = mcp.ClientStub(session)
            first = await client.read_resource("note://today")
            assert (await client.read_resource("note://today")) == first and len(reads) == 1
            await app.notify_resource_updated("note://today")
            assert (await client.read_resource("note://today")).contents[0].text == "read 2"
            assert [t.name for t in (await client.list_tools()).tools] == ["one"]
            app.add_tool(lambda: "2", name="two")
            assert [t.name for t in (await client.list_tools()).tools] == ["one", "two"]

    asyncio.run(main())


def test_error_mapping_timing_and_structured_logging(caplog: pytest.LogCaptureFixture) -> None:
    timing = Timing()
    app = App(
        "mapped",
        middleware=[timing, StructuredLogging(), ErrorMapping({KeyError: INVALID_PARAMS})],
    )

    @app.tool()
    def lookup(key: str) -> str:
        return {"a": "alpha"}[key]

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            client = mcp.ClientStub(session)
            assert (await client.call_tool("lookup", arguments={"key": "a"})).content[
                0
            ].text == "alpha"
            with pytest.raises(McpError) as mapped:
                await client.call_tool("lookup", arguments={"key": "b"})
            assert (mapped.value.code, mapped.value.message) == (INVALID_PARAMS, "b")

    with caplog.at_level(logging.INFO, logger="mcpbind.app.calls"):
        asyncio.run(main())
    stats = timing.stats["tools/call"]
    assert (stats.count, stats.errors) == (2, 1) and stats.max_seconds > 0
    records = [r for r in caplog.records if r.name == "mcpbind.app.calls"]
    outcomes = [(r.mcp_method, r.mcp_name, r.mcp_outcome) for r in records]  # type: ignore[attr-defined]
    assert ("tools/call", "lookup", "ok") in outcomes
    assert ("tools/call", "lookup", INVALID_PARAMS) in outcomes


def test_error_mapping_sends_a_key_errors_message_without_its_quotes() -> None:
    app = App("mapped", middleware=[ErrorMapping({LookupError: INVALID_PARAMS})])

    @app.tool()
    def lookup(key: str) -> str:
        raise KeyError(f"no such key {key}")

    @app.tool()
    def index() -> str:
        raise IndexError("no such index")

    async def main() -> None:
        for version in REVISIONS:
            async with app.test_client(protocol_version=version) as session:
                tools = stub(session, version)
                with pytest.raises(McpError) as mapped:
                    await tools.call_tool("lookup", arguments={"key": "x"})
                assert (mapped.value.code, mapped.value.message) == (
                    INVALID_PARAMS,
                    "no such key x",
                )
                with pytest.raises(McpError) as other:
                    await tools.call_tool("index", arguments={})
                assert other.value.message == "no such index"

    asyncio.run(main())


SHIPPED = {
    each.__name__: each for each in (Timing, StructuredLogging, ErrorMapping, RateLimit, Cache)
}
SHIPPED_CALL = re.compile(r"\b(" + "|".join(SHIPPED) + r")\(")


def shipped_calls(text: str) -> Iterator[str]:
    """The calls of shipped middleware written in ``text`` (``RateLimit(600, per=60.0)``)."""
    for found in SHIPPED_CALL.finditer(text):
        depth = 0
        for end in range(found.end() - 1, len(text)):
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            if depth == 0:
                yield text[found.start() : end + 1]
                break


def test_the_runtimes_docstrings_call_the_shipped_middleware_with_its_parameters() -> None:
    runtime = Path(mcpbind.__file__).parent
    checked = 0
    for path in sorted(runtime.rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)):
                continue
            for written in shipped_calls(ast.get_docstring(node) or ""):
                call = ast.parse(written, mode="eval").body
                assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                signature = inspect.signature(SHIPPED[call.func.id])
                try:
                    signature.bind(*call.args, **{k.arg: k.value for k in call.keywords if k.arg})
                except TypeError as error:
                    raise AssertionError(
                        f"{path.relative_to(runtime)}: {written}: {error}"
                    ) from None
                checked += 1
    assert checked >= 5


# ------------------------------------------------------------------ injection


def test_session_state_lasts_across_a_sessions_requests_and_no_further() -> None:
    app = App("carts")

    @app.tool()
    async def add(item: str, ctx: Context) -> list[str]:
        cart = await ctx.session.get("cart", list[str]) or []
        cart.append(item)
        await ctx.session.set("cart", cart)
        return cart

    async def main() -> None:
        for version in ("2024-11-05", "2025-11-25"):
            async with app.test_client(protocol_version=version) as session:
                tools = stub(session, version)
                await tools.call_tool("add", arguments={"item": "a"})
                second = await tools.call_tool("add", arguments={"item": "b"})
                assert second.content[0].text == '["a","b"]'
            async with app.test_client(protocol_version=version) as session:
                fresh = await stub(session, version).call_tool("add", arguments={"item": "c"})
                assert fresh.content[0].text == '["c"]'
        # 2026-07-28 has no session: the state lasts one request.
        async with app.test_client(protocol_version="2026-07-28") as session:
            tools = modern.ClientStub(session)
            await tools.call_tool("add", arguments={"item": "a"})
            again = await tools.call_tool("add", arguments={"item": "b"})
            assert again.content[0].text == '["b"]'

    asyncio.run(main())


def test_headers_reach_the_function_over_http_and_are_none_off_it() -> None:
    app = App("headers")

    @app.tool()
    def tenant(ctx: Context) -> str:
        return "none" if ctx.headers is None else ctx.headers.get("x-tenant", "?")

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            result = await mcp.ClientStub(session).call_tool("tenant", arguments={})
            assert result.content[0].text == "none"
        body = msgspec.json.encode(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "tools/call",
                "params": {
                    "name": "tenant",
                    "arguments": {},
                    "_meta": {
                        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                        "io.modelcontextprotocol/clientCapabilities": {},
                    },
                },
            }
        )
        answer = await request(
            app.asgi(),
            "POST",
            "/mcp",
            {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "tenant",
                "x-tenant": "acme",
            },
            body,
        )
        assert answer.status == 200, answer.body
        assert answer.json()["result"]["content"][0]["text"] == "acme"

    asyncio.run(main())


# ------------------------------------------------------------------ media and content


def test_media_become_each_revisions_blocks_with_documented_fallbacks() -> None:
    app = App("media")

    @app.tool()
    def everything() -> list[Content]:
        return [
            "look:",
            Image(PNG),
            Audio(WAV, name="hello.wav"),
            File(b"a,b\n1,2\n", name="data.csv"),
            Link("note://1", "first note"),
        ]

    expected_types = {
        "2024-11-05": ["text", "image", "resource", "resource", "text"],
        "2025-03-26": ["text", "image", "audio", "resource", "text"],
        "2025-06-18": ["text", "image", "audio", "resource", "resource_link"],
        "2025-11-25": ["text", "image", "audio", "resource", "resource_link"],
        "2026-07-28": ["text", "image", "audio", "resource", "resource_link"],
    }

    async def main() -> None:
        for version, types in expected_types.items():
            async with app.test_client(protocol_version=version) as session:
                result = wire(await stub(session, version).call_tool("everything", arguments={}))
            assert [block["type"] for block in result["content"]] == types, version
            image = result["content"][1]
            assert image["mimeType"] == "image/png"
            csv = result["content"][3]["resource"]
            assert (csv["uri"], csv["mimeType"], csv["text"]) == (
                "file:///data.csv",
                "text/csv",
                "a,b\n1,2\n",
            )
            if version == "2024-11-05":
                assert result["content"][2]["resource"]["mimeType"] == "audio/wav"
                assert result["content"][4]["text"] == "first note: note://1"

    asyncio.run(main())


def test_a_block_of_another_revision_is_converted_not_leaked() -> None:
    """A resource_link built with 2025-11-25's types never reaches a 2024-11-05 client,
    and a 2026-07-28 result sent to 2025-11-25 carries no resultType."""
    app = App("foreign")

    @app.tool()
    def link() -> mcp.ResourceLink:
        return mcp.ResourceLink(uri="note://1", name="first")

    @app.tool()
    def newer() -> modern.CallToolResult:
        return modern.CallToolResult(content=[modern.TextContent(text="hi")])

    async def main() -> None:
        async with app.test_client(protocol_version="2024-11-05") as session:
            result = wire(await old.ClientStub(session).call_tool("link", arguments={}))
            assert result["content"] == [{"type": "text", "text": "first: note://1"}]
        async with app.test_client(protocol_version="2025-11-25") as session:
            raw = await session.request(
                lifecycle.revision("2025-11-25").all_methods["tools/call"],
                mcp.CallToolRequestParams(name="newer", arguments={}),
            )
            assert "result_type" not in mcp.CallToolResult.__struct_fields__
            assert wire(raw) == {"content": [{"type": "text", "text": "hi"}]}

    asyncio.run(main())


def test_a_resource_returns_an_image_as_a_blob() -> None:
    app = App("pics")

    @app.resource("pic://dot")
    def dot() -> Image:
        return Image(PNG)

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            read = wire(await mcp.ClientStub(session).read_resource("pic://dot"))
            assert read["contents"][0]["mimeType"] == "image/png" and "blob" in read["contents"][0]

    asyncio.run(main())


def test_media_from_a_path_detect_the_mime_type(tmp_path: Any) -> None:
    (tmp_path / "a.png").write_bytes(PNG)
    (tmp_path / "noext").write_bytes(WAV)
    assert Image.from_path(tmp_path / "a.png").mime_type == "image/png"
    assert Audio.from_path(tmp_path / "noext").mime_type == "audio/wav"
    assert File.from_path(tmp_path / "a.png").uri == "file:///a.png"


# ------------------------------------------------------------------ visibility


class Counting(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.tool_changes = 0

    @override
    async def on_tool_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.tool_changes += 1


def visibility_app() -> App[Any]:
    app = App("visible")

    @app.tool(tags={"admin"})
    def drop_table() -> str:
        return "dropped"

    @app.tool()
    def hello() -> str:
        return "hi"

    @app.tool()
    def show_admin(ctx: Context) -> str:
        app.enable(tags={"admin"}, session=ctx)
        return "ok"

    return app


def test_a_hidden_tool_is_absent_and_unknown_at_every_revision() -> None:
    app = visibility_app()
    app.disable(tags={"admin"})

    async def main() -> None:
        for version in REVISIONS:
            async with app.test_client(protocol_version=version) as session:
                tools = stub(session, version)
                names = [t.name for t in (await tools.list_tools()).tools]
                assert names == ["hello", "show_admin"]
                with pytest.raises(McpError) as unknown:
                    await tools.call_tool("drop_table", arguments={})
                assert unknown.value.code == INVALID_PARAMS

    asyncio.run(main())


def test_list_changed_reaches_exactly_the_sessions_whose_view_changed() -> None:
    """2025-11-25 server/tools: "Servers that declared the listChanged capability
    SHOULD send a notification when the list of available tools changes." """
    app = visibility_app()
    app.disable(tags={"admin"})

    async def main() -> None:
        first, second = Counting(), Counting()
        async with app.test_client(protocol_version="2025-11-25", handlers=first) as one:
            async with app.test_client(protocol_version="2025-11-25", handlers=second) as two:
                a, b = mcp.ClientStub(one), mcp.ClientStub(two)
                await a.call_tool("show_admin", arguments={})
                await asyncio.sleep(0.05)
                assert (first.tool_changes, second.tool_changes) == (1, 0)
                assert "drop_table" in [t.name for t in (await a.list_tools()).tools]
                assert "drop_table" not in [t.name for t in (await b.list_tools()).tools]
                assert (await a.call_tool("drop_table", arguments={})).content[0].text == "dropped"
                # The app shows admin to all: only the second session's view changes.
                app.enable(tags={"admin"})
                await asyncio.sleep(0.05)
                assert (first.tool_changes, second.tool_changes) == (1, 1)
                app.disable(["hello"])
                await asyncio.sleep(0.05)
                assert (first.tool_changes, second.tool_changes) == (2, 2)

    asyncio.run(main())


# ------------------------------------------------------------------ typed decorators at run time


def test_a_misspelled_annotation_or_a_str_completion_is_refused_when_registered() -> None:
    app = App("typed")
    loose: Any = {"readOnlyHnt": True}
    with pytest.raises(TypeError, match="unknown tool annotation 'readOnlyHnt'"):
        app.add_tool(lambda: "x", name="x", annotations=loose)

    @app.prompt()
    def summarize(style: str) -> str:
        return style

    def styles(value: str) -> str:
        return "short"

    with pytest.raises(TypeError, match="split into characters"):
        app.completion(prompt="summarize", argument="style")(styles)  # type: ignore[type-var]


class Point(TypedDict):
    x: int
    y: int


class Point3(msgspec.Struct):
    x: int
    y: int
    z: int


def test_undeclared_fields_never_leak_into_structured_content() -> None:
    app = App("points")

    @app.tool()
    def point() -> Point:
        leaky: Any = {"x": 1, "y": 2, "secret": "s3cr3t"}
        return leaky  # type: ignore[no-any-return]

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25") as session:
            result = wire(await mcp.ClientStub(session).call_tool("point", arguments={}))
            assert result["structuredContent"] == {"x": 1, "y": 2}
            assert "s3cr3t" not in result["content"][0]["text"]

    asyncio.run(main())


def test_a_prompt_sends_media_as_its_revisions_blocks() -> None:
    app = App("prompts")

    @app.prompt()
    def show() -> list[Message]:
        return [Message("user", Image(PNG)), Message("user", Link("note://1", "n"))]

    async def main() -> None:
        async with app.test_client(protocol_version="2024-11-05") as session:
            got = wire(await old.ClientStub(session).get_prompt("show"))
            assert [m["content"]["type"] for m in got["messages"]] == ["image", "text"]

    asyncio.run(main())


# ------------------------------------------------------------------ settings


def test_run_settings_come_from_arguments_then_environment_then_defaults() -> None:
    env = {"MCP_TRANSPORT": "http", "MCP_PORT": "9000", "MCP_LOG_LEVEL": "INFO"}
    settings = RunSettings.resolve(port=9100, environ=env)
    assert (
        settings.transport,
        settings.port,
        settings.host,
        settings.path,
        settings.log_level,
    ) == (
        "http",
        9100,
        "127.0.0.1",
        "/mcp",
        "info",
    )
    assert RunSettings.resolve(environ={}).transport == "stdio"
    with pytest.raises(SettingsError, match="MCP_PORT"):
        RunSettings.resolve(environ={"MCP_PORT": "eighty"})
    with pytest.raises(SettingsError, match="expected stdio or http"):
        RunSettings.resolve(environ={"MCP_TRANSPORT": "carrier-pigeon"})


# ------------------------------------------------------------------ across workers


def test_session_state_and_rate_limits_are_shared_by_workers_on_a_shared_store() -> None:
    """Two workers (two apps over one store, as two processes behind a load balancer
    would be) serve one HTTP session: what one request stored, the other reads, and
    the rate limit counts both workers' requests."""
    import fakeredis

    from mcpbind.stores._redis_store import RedisStore

    store = RedisStore(fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer()))

    def worker() -> App[Any]:
        app = App("carts", middleware=[RateLimit(4, per=60.0)], store=store)

        @app.tool()
        async def add(item: str, ctx: Context) -> list[str]:
            cart = await ctx.session.get("cart", list[str]) or []
            cart.append(item)
            await ctx.session.set("cart", cart)
            return cart

        return app

    one, two = worker().asgi(), worker().asgi()
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
    }

    def message(id: int | None, method: str, params: dict[str, Any]) -> bytes:
        body: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if id is not None:
            body["id"] = id
        return msgspec.json.encode(body)

    def text_of(body: bytes) -> Any:
        """The JSON-RPC answer in a JSON body or in the last event of an SSE body."""
        if body.lstrip().startswith(b"{"):
            return msgspec.json.decode(body)
        events = [line[6:] for line in body.split(b"\n") if line.startswith(b"data: {")]
        return msgspec.json.decode(events[-1])

    async def main() -> None:
        opened = await request(
            one,
            "POST",
            "/mcp",
            headers,
            message(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"},
                },
            ),
        )
        session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"]}
        session["mcp-protocol-version"] = "2025-11-25"
        await request(one, "POST", "/mcp", session, message(None, "notifications/initialized", {}))
        answers = []
        for n, (app, item) in enumerate([(one, "a"), (two, "b"), (one, "c"), (two, "d")]):
            call = message(10 + n, "tools/call", {"name": "add", "arguments": {"item": item}})
            answers.append(text_of((await request(app, "POST", "/mcp", session, call)).body))
        assert answers[-1]["result"]["structuredContent"] == {"result": ["a", "b", "c", "d"]}
        refused = text_of(
            (
                await request(
                    two,
                    "POST",
                    "/mcp",
                    session,
                    message(20, "tools/call", {"name": "add", "arguments": {"item": "e"}}),
                )
            ).body
        )
        assert refused["error"]["code"] == RATE_LIMITED

    asyncio.run(main())
