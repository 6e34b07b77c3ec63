"""Tools of the application layer: schemas from signatures, one-pass argument
validation, structured results, errors, scopes and list changes, on every
revision, through a real client session over the in-memory transport."""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal, Optional, TypedDict

import msgspec
import pytest
from typing_extensions import override

from mcpbind._client.client import ClientSession
from mcpbind._core import jsonrpc, lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Context, ToolError
from mcpbind.auth._principal import Principal
from mcpbind.codec import encode
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
STRUCTURED = ("2025-06-18", "2025-11-25", "2026-07-28")


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Point(msgspec.Struct):
    x: int
    y: int


class Span(TypedDict):
    start: int
    end: int


@dataclasses.dataclass
class Box:
    width: float
    height: float = 1.0


class Note(msgspec.Struct):
    id: int
    text: str
    tags: list[str] = []


def stub(session: ClientSession) -> Any:
    return lifecycle.revision(session.protocol_version).package.ClientStub(session)


def wire(value: Any) -> Any:
    return json.loads(encode(value))


def serve(
    app: App, check: Callable[[ClientSession], Awaitable[None]], version: str, **options: Any
) -> None:
    async def main() -> None:
        async with app.test_client(protocol_version=version, **options) as session:
            assert session.protocol_version == version
            await check(session)

    asyncio.run(main())


def notes_app() -> App:
    app = App("notes", "1.0")

    @app.tool(
        title="Add a note",
        annotations={"destructiveHint": False},
        icons=[{"src": "https://example.com/n.png"}],
        meta={"k": 1},
    )
    async def add_note(
        text: Annotated[str, msgspec.Meta(min_length=1)],
        tags: list[str] = [],
        ctx: Context | None = None,
    ) -> Note:
        """Add a note.

        Args:
            text: The note's text.
            tags: Labels to find it by.
        """
        return Note(1, text, tags)

    @app.tool()
    def count(words: list[str]) -> int:
        return len(words)

    @app.tool()
    def shout(text: str) -> str:
        return text.upper()

    @app.tool()
    def nothing() -> None:
        return None

    @app.tool()
    def fail() -> str:
        raise ToolError("the note store is read-only")

    @app.tool()
    def crash() -> str:
        raise RuntimeError("secret details")

    return app


# ------------------------------------------------------------------ schemas


def test_input_schema_from_the_signature() -> None:
    app = App("schemas")

    @app.tool()
    def every_kind(
        point: Point,
        span: Span,
        box: Box,
        color: Color = Color.RED,
        mode: Literal["fast", "slow"] = "fast",
        limit: Annotated[int, msgspec.Meta(ge=1, le=10, description="At most this many")] = 5,
        label: Optional[str] = None,
    ) -> str:
        """Do everything.

        :param point: Where.
        :param label: A label, or none.
        """
        return ""

    schema = app.registry.tools["every_kind"].wire["inputSchema"]
    assert schema["type"] == "object" and schema["required"] == ["point", "span", "box"]
    properties = schema["properties"]
    assert properties["point"] == {"description": "Where.", "$ref": "#/$defs/Point"}
    assert properties["color"] == {"$ref": "#/$defs/Color", "default": "red"}
    assert properties["mode"] == {"enum": ["fast", "slow"], "default": "fast"}
    assert properties["limit"] == {
        "description": "At most this many",
        "type": "integer",
        "minimum": 1,
        "maximum": 10,
        "default": 5,
    }
    assert properties["label"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert properties["label"]["description"] == "A label, or none."
    assert set(schema["$defs"]) == {"Point", "Span", "Box", "Color"}
    assert app.registry.tools["every_kind"].wire["description"] == "Do everything."


def test_a_schema_of_its_own() -> None:
    """input_schema= is what tools/list shows; the signature still decodes."""
    app = App("own")
    schema = {
        "type": "object",
        "properties": {"phone": {"type": "string"}},
        "if": {"required": ["phone"]},
        "then": {},
    }

    @app.tool(input_schema=schema)
    def contact(phone: str = "") -> str:
        return phone

    async def check(session: ClientSession) -> None:
        tools = stub(session)
        assert wire((await tools.list_tools()).tools[0])["inputSchema"] == schema
        assert (await tools.call_tool("contact", arguments={"phone": 5})).is_error is True

    serve(app, check, "2025-11-25")


def test_an_unsupported_parameter_type_is_refused_when_decorating() -> None:
    app = App("bad")
    with pytest.raises(
        TypeError,
        match=r"tool .*handle_socket: parameter 'conn' has type object, which JSON Schema cannot express",
    ):

        @app.tool()
        def handle_socket(conn: object) -> str:
            return ""

    with pytest.raises(TypeError, match=r"parameter 'rest' must be a named parameter"):

        @app.tool()
        def star(*rest: int) -> str:
            return ""

    with pytest.raises(TypeError, match=r"write @app.tool\(\)"):
        app.tool(lambda: "")  # type: ignore[arg-type]
    assert not app.registry.tools


@pytest.mark.parametrize("version", ALL)
def test_what_each_revision_lists(version: str) -> None:
    async def check(session: ClientSession) -> None:
        listed = wire(await stub(session).list_tools())
        add = next(tool for tool in listed["tools"] if tool["name"] == "add_note")
        assert add["inputSchema"]["properties"]["text"] == {
            "description": "The note's text.",
            "type": "string",
            "minLength": 1,
        }
        assert add["description"] == "Add a note."

        def has(field: str) -> bool:
            return field in lifecycle.revision(version).type("Tool").__struct_encode_fields__

        for field in ("outputSchema", "title", "icons", "annotations", "_meta"):
            assert (field in add) == has(field), field
        if version in STRUCTURED:
            assert add["outputSchema"]["required"] == ["id", "text"]
            assert add["outputSchema"]["$schema"] == "https://json-schema.org/draft/2020-12/schema"
            count = next(tool for tool in listed["tools"] if tool["name"] == "count")
            assert count["outputSchema"]["properties"] == {"result": {"type": "integer"}}
        if version == "2026-07-28":
            assert listed["ttlMs"] == 0 and listed["cacheScope"] == "private"

    serve(notes_app(), check, version)


@pytest.mark.parametrize("version", ALL)
def test_results(version: str) -> None:
    async def check(session: ClientSession) -> None:
        tools = stub(session)
        added = wire(
            await tools.call_tool("add_note", arguments={"text": "milk", "tags": ["shop"]})
        )
        assert added["content"] == [
            {"type": "text", "text": '{"id":1,"text":"milk","tags":["shop"]}'}
        ]
        assert ("structuredContent" in added) == (version in STRUCTURED)
        if version in STRUCTURED:
            assert added["structuredContent"] == {"id": 1, "text": "milk", "tags": ["shop"]}
            counted = wire(await tools.call_tool("count", arguments={"words": ["a", "b"]}))
            assert (
                counted["structuredContent"] == {"result": 2}
                and counted["content"][0]["text"] == "2"
            )
        shouted = wire(await tools.call_tool("shout", arguments={"text": "hi"}))
        assert (
            shouted["content"] == [{"type": "text", "text": "HI"}]
            and "structuredContent" not in shouted
        )
        assert wire(await tools.call_tool("nothing"))["content"] == []

    serve(notes_app(), check, version)


@pytest.mark.parametrize("version", ALL)
def test_invalid_arguments(version: str) -> None:
    """From 2025-11-25 a tool execution error the model can act on, with the
    path of the field; before, -32602."""

    async def check(session: ClientSession) -> None:
        tools = stub(session)
        bad = {"text": "milk", "tags": ["a", 3]}
        if version >= "2025-11-25":
            result = await tools.call_tool("add_note", arguments=bad)
            assert result.is_error is True
            assert (
                result.content[0].text
                == "Invalid arguments for tool 'add_note': Expected `str`, got `int` - at `$.tags[1]`"
            )
            missing = await tools.call_tool("add_note", arguments={})
            assert "missing required field `text`" in missing.content[0].text
            short = await tools.call_tool("add_note", arguments={"text": ""})
            assert "at `$.text`" in short.content[0].text
        else:
            with pytest.raises(McpError) as raised:
                await tools.call_tool("add_note", arguments=bad)
            assert raised.value.code == -32602 and "`$.tags[1]`" in raised.value.message
        with pytest.raises(McpError) as unknown:
            await tools.call_tool("no_such_tool", arguments={})
        assert unknown.value.code == -32602 and "no_such_tool" in unknown.value.message

    serve(notes_app(), check, version)


@pytest.mark.parametrize("version", ("2024-11-05", "2025-11-25", "2026-07-28"))
def test_tool_error_and_internal_error(version: str) -> None:
    async def check(session: ClientSession) -> None:
        tools = stub(session)
        failed = await tools.call_tool("fail")
        assert failed.is_error is True and failed.content[0].text == "the note store is read-only"
        with pytest.raises(McpError) as raised:
            await tools.call_tool("crash")
        assert raised.value.code == -32603 and raised.value.message == "Internal error"
        assert "secret" not in str(raised.value.data)

    serve(notes_app(), check, version)


def test_content_blocks_and_full_results_pass_through() -> None:
    app = App("raw")

    @app.tool()
    def image() -> list[mcp.ContentBlock]:
        return [
            mcp.ImageContent(data="AAAA", mime_type="image/png"),
            mcp.TextContent(text="an image"),
        ]

    @app.tool()
    def full() -> mcp.CallToolResult:
        return mcp.CallToolResult(
            content=[mcp.TextContent(text="x")], structured_content={"a": 1}, meta={"m": True}
        )

    @app.tool()
    def anything(kind: str) -> Any:
        return {"a": 1} if kind == "object" else [1, 2]

    async def check(session: ClientSession) -> None:
        tools = stub(session)
        assert wire(await tools.call_tool("image"))["content"][0] == {
            "type": "image",
            "data": "AAAA",
            "mimeType": "image/png",
        }
        assert wire(await tools.call_tool("full")) == {
            "content": [{"type": "text", "text": "x"}],
            "structuredContent": {"a": 1},
            "_meta": {"m": True},
        }
        assert wire(await tools.call_tool("anything", arguments={"kind": "object"}))[
            "structuredContent"
        ] == {"a": 1}
        listed = [wire(tool) for tool in (await tools.list_tools()).tools]
        assert all("outputSchema" not in tool for tool in listed)

    serve(app, check, "2025-11-25")


def test_a_tool_name_clients_may_refuse_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    app = App("names")
    app.add_tool(lambda: "", name="has space")
    app.add_tool(lambda: "", name="fine.name-1")
    assert [record.getMessage() for record in caplog.records] == [
        "tool name 'has space' is not 1 to 128 of A-Z, a-z, 0-9, '_', '-', '.': some clients refuse it"
    ]


def test_sync_and_async_functions_keep_their_signature() -> None:
    app = App("plain")

    @app.tool()
    def add(a: int, b: int = 2) -> int:
        return a + b

    assert add(1) == 3  # the decorator returns the function itself

    async def later(x: int) -> int:
        return x

    @app.tool()
    def deferred(x: int) -> Awaitable[int]:
        return later(x)

    async def check(session: ClientSession) -> None:
        assert (
            await stub(session).call_tool("deferred", arguments={"x": 7})
        ).structured_content == {"result": 7}

    serve(app, check, "2025-11-25")


@pytest.mark.parametrize("version", ("2025-11-25", "2026-07-28"))
def test_scopes(version: str) -> None:
    app = App("scoped")

    @app.tool(scopes=["notes:write"])
    def write(ctx: Context) -> str:
        return f"by {ctx.principal.subject if ctx.principal else 'nobody'}"

    async def call(principal: Principal | None) -> Any:
        async with app.test_client(protocol_version=version, principal=principal) as session:
            return await stub(session).call_tool("write")

    allowed = asyncio.run(call(Principal("alice", scopes=frozenset({"notes:write", "notes:read"}))))
    assert allowed.content[0].text == "by alice"
    # No verified token (stdio, in memory): nothing to check.
    assert asyncio.run(call(None)).content[0].text == "by nobody"
    # InsufficientScope: the HTTP layer answers 403; in memory the client sees its JSON-RPC error.
    with pytest.raises(McpError) as raised:
        asyncio.run(call(Principal("bob", scopes=frozenset({"notes:read"}))))
    assert raised.value.code == jsonrpc.INSUFFICIENT_SCOPE


def test_insufficient_scope_is_raised_to_the_transport() -> None:
    from mcpbind._core.session import SessionContext
    from mcpbind._core.wire import RequestExtra
    from mcpbind._server.server import Server, ServerSession
    from mcpbind._transports.memory import memory_pair
    from mcpbind.app._flavor import Flavor
    from mcpbind.auth._principal import InsufficientScope

    app = App("scoped")

    @app.tool(scopes=["admin"])
    def wipe() -> str:
        return "wiped"

    async def main() -> None:
        bob = Principal("bob", scopes=frozenset({"read"}))
        server_end, _ = memory_pair(bob)
        session = ServerSession(Server(app.handlers()[-1], name="s", version="1"), server_end)
        ctx = SessionContext(session, 1, None, RequestExtra(bob))
        flavor = Flavor("2025-11-25", ttl_ms=0, cache_scope="private")
        with pytest.raises(InsufficientScope) as raised:
            await app.registry.tools["wipe"].call(
                mcp.CallToolRequestParams(name="wipe"), ctx, flavor
            )
        assert raised.value.required == ("admin",)

    asyncio.run(main())


# ------------------------------------------------------------------ list changes


def test_tools_added_and_removed_at_runtime_are_announced() -> None:
    app = notes_app()
    changed = asyncio.Event()

    class Handlers(mcp.ClientHandlers):
        @override
        async def on_tool_list_changed(
            self, params: mcp.NotificationParams, ctx: RequestContext
        ) -> None:
            changed.set()

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25", handlers=Handlers()) as session:
            tools = mcp.ClientStub(session)

            def late(x: int) -> int:
                return x * 2

            app.add_tool(late)
            await asyncio.wait_for(changed.wait(), 5)
            assert "late" in [tool.name for tool in (await tools.list_tools()).tools]
            assert (await tools.call_tool("late", arguments={"x": 4})).structured_content == {
                "result": 8
            }
            changed.clear()
            app.remove_tool("late")
            await asyncio.wait_for(changed.wait(), 5)
            assert "late" not in [tool.name for tool in (await tools.list_tools()).tools]

    asyncio.run(main())


def test_list_changes_reach_a_2026_listen_stream() -> None:
    app = notes_app()
    changed = asyncio.Event()

    class Handlers(modern.ClientHandlers):
        @override
        async def on_tool_list_changed(
            self, params: modern.NotificationParams, ctx: RequestContext
        ) -> None:
            changed.set()

    async def main() -> None:
        async with app.test_client(handlers=Handlers()) as session:
            assert session.protocol_version == "2026-07-28"
            listener = await session.listen(tools_list_changed=True)
            app.remove_tool("shout")
            await asyncio.wait_for(changed.wait(), 5)
            await listener.close()

    asyncio.run(main())


def test_descriptions_from_docstrings() -> None:
    from mcpbind.app._schema import _param_docs, _summary

    google = """Find notes.

    Searches titles and bodies.

    Args:
        query (str): Text to look for,
            case-insensitive.
        limit: At most this many.

    Returns:
        The notes.
    """
    import inspect

    doc = inspect.cleandoc(google)
    assert _summary(doc) == "Find notes.\n\nSearches titles and bodies."
    assert _param_docs(doc) == {
        "query": "Text to look for, case-insensitive.",
        "limit": "At most this many.",
    }
    sphinx = inspect.cleandoc("""Find notes.

        :param query: Text to look for,
            case-insensitive.
        :param int limit: At most this many.
        :returns: The notes.
        """)
    assert _summary(sphinx) == "Find notes."
    assert _param_docs(sphinx) == {
        "query": "Text to look for, case-insensitive.",
        "limit": "At most this many.",
    }
    assert _summary("") is None and _param_docs("Just a summary.") == {}
