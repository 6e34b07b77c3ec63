"""Mounting apps into one (``App.mount``): the prefix rule for every kind of
item, the mounted apps' own lifespan, middleware and visibility, and list
changes reaching the parent's clients; driven by the official Python SDK
client over stdio and Streamable HTTP (in this process), and by this
runtime's client in memory."""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Iterator
from typing import Any

import mcp as sdk
import mcp.types as sdk_types
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from support.http_servers import serving
from support.mounted_server import composed
from support.peers import SUPPORT, THIS_TREE, run
from typing_extensions import override

from mcpbind._core.jsonrpc import INVALID_PARAMS, McpError
from mcpbind.app import App, Cache, Context
from mcpbind.app._mount import prefixed_uri, unprefixed_uri
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp

MOUNTED_SERVER = SUPPORT / "mounted_server.py"


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


async def drive(client: Any) -> None:
    """What an SDK client sees of the composed app: every item under its prefix."""
    tools = sorted(tool.name for tool in (await client.list_tools()).tools)
    assert tools == ["billing_charge", "billing_refund", "notes_add", "ping"]
    added = await client.call_tool("notes_add", {"text": "milk"})
    assert added.content[0].text == "added 'milk' to notes-store"
    charged = await client.call_tool("billing_charge", {"cents": 5})
    assert charged.structured_content == {"charged": 5, "in": "ledger"}
    with pytest.raises(sdk.MCPError, match="Unknown tool: add"):  # only the prefixed name exists
        await client.call_tool("add", {"text": "x"})
    resources = [str(r.uri) for r in (await client.list_resources()).resources]
    assert resources == ["note://notes/index"]
    templates = [
        t.uri_template for t in (await client.list_resource_templates()).resource_templates
    ]
    assert templates == ["note://notes/{id}"]
    read = await client.read_resource("note://notes/7")
    assert read.contents[0].text == "note 7" and str(read.contents[0].uri) == "note://notes/7"
    prompts = [p.name for p in (await client.list_prompts()).prompts]
    assert prompts == ["notes_summarize"]
    prompt = await client.get_prompt("notes_summarize", {"style": "short"})
    assert prompt.messages[0].content.text == "summarize short"
    completed = await client.complete(
        sdk_types.PromptReference(type="ref/prompt", name="notes_summarize"),
        {"name": "style", "value": "s"},
    )
    assert completed.completion.values == ["short", "silly"]
    by_template = await client.complete(
        sdk_types.ResourceTemplateReference(type="ref/resource", uri="note://notes/{id}"),
        {"name": "id", "value": "n"},
    )
    assert by_template.completion.values == ["n1", "n2"]


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_two_mounted_apps_serve_under_their_prefixes_over_stdio(mode: str, version: str) -> None:
    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(MOUNTED_SERVER)], env=THIS_TREE
        )
        async with sdk.Client(parameters, mode=mode) as client:
            assert client.protocol_version == version
            await drive(client)

    run(main())


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_two_mounted_apps_serve_under_their_prefixes_over_streamable_http(
    mode: str, version: str
) -> None:
    seen: list[str] = []
    app, _, _ = composed(seen)

    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode) as client:
            assert client.protocol_version == version
            await drive(client)

    with serving(app.asgi()) as server:
        run(main(server.url()))
    # Each mounted app's middleware saw its own calls, by its own names, inside the parent's.
    assert seen.index("main saw tools/call notes_add") < seen.index("notes saw tools/call add")
    assert "billing saw tools/call charge" in seen
    assert not any(line.startswith("notes saw tools/call charge") for line in seen)
    assert "notes saw resources/read note://7" in seen
    assert "notes saw prompts/get summarize" in seen
    assert "notes saw completion/complete None" in seen
    # Each lifespan ran once around serving: the mounted ones inside the parent's.
    assert [line for line in seen if line.endswith((" up", " down"))] == [
        "notes up",
        "billing up",
        "billing down",
        "notes down",
    ]


def test_the_prefix_rule_for_uris_round_trips() -> None:
    for uri, outer in [
        ("note://{id}", "note://x/{id}"),
        ("file:///etc/hosts", "file://x//etc/hosts"),
        ("urn:isbn:1", "urn:x/isbn:1"),
        ("plain", "x/plain"),
    ]:
        assert prefixed_uri("x", uri) == outer
        assert unprefixed_uri("x", outer) == uri
    assert unprefixed_uri("x", "note://y/1") is None


def test_a_bad_or_repeated_prefix_is_refused() -> None:
    main, notes, _ = composed()
    with pytest.raises(ValueError, match="letters, digits"):
        main.mount(App("other"), prefix="a/b")
    with pytest.raises(ValueError, match="already mounted with prefix 'notes'"):
        main.mount(App("other"), prefix="notes")
    with pytest.raises(ValueError, match="already mounted here"):
        main.mount(notes, prefix="again")


class Changes(mcp.ClientHandlers):
    def __init__(self) -> None:
        self.tools = asyncio.Event()
        self.updated: list[str] = []
        self.got_update = asyncio.Event()

    @override
    async def on_tool_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.tools.set()

    @override
    async def on_resource_updated(self, params: Any, ctx: RequestContext) -> None:
        self.updated.append(params.uri)
        self.got_update.set()


def test_changes_in_a_mounted_app_reach_the_parents_clients_under_the_prefix() -> None:
    """2025-11-25 server/tools: "Servers that declared the listChanged capability
    SHOULD send a notification when the list of available tools changes." """
    main, notes, billing = composed()

    async def main_test() -> None:
        changes = Changes()
        async with main.test_client(protocol_version="2025-11-25", handlers=changes) as session:
            stub = mcp.ClientStub(session)

            def late(x: int) -> int:
                return x * 2

            notes.add_tool(late)
            await asyncio.wait_for(changes.tools.wait(), 10)
            names = [tool.name for tool in (await stub.list_tools()).tools]
            assert "notes_late" in names
            result = await stub.call_tool("notes_late", arguments={"x": 4})
            assert result.structured_content == {"result": 8}
            changes.tools.clear()
            notes.remove_tool("late")
            await asyncio.wait_for(changes.tools.wait(), 10)
            assert "notes_late" not in [tool.name for tool in (await stub.list_tools()).tools]
            # Subscriptions use the prefixed URI; the mounted app names its own.
            await stub.subscribe(uri="note://notes/7")
            await notes.notify_resource_updated("note://7")
            await asyncio.wait_for(changes.got_update.wait(), 10)
            assert changes.updated == ["note://notes/7"]

    asyncio.run(main_test())


def test_a_mounted_apps_visibility_rules_follow_the_prefix() -> None:
    main, _, billing = composed()
    billing.disable(tags={"admin"})

    @billing.tool()
    def show_admin(ctx: Context) -> str:
        billing.enable(["refund"], session=ctx)
        return "shown"

    async def main_test() -> None:
        changes = Changes()
        async with main.test_client(protocol_version="2025-11-25", handlers=changes) as session:
            stub = mcp.ClientStub(session)
            names = [tool.name for tool in (await stub.list_tools()).tools]
            assert "billing_refund" not in names and "billing_show_admin" in names
            with pytest.raises(McpError) as hidden:
                await stub.call_tool("billing_refund", arguments={"cents": 1})
            assert hidden.value.code == INVALID_PARAMS
            await stub.call_tool("billing_show_admin", arguments={})
            await asyncio.wait_for(changes.tools.wait(), 10)
            assert "billing_refund" in [tool.name for tool in (await stub.list_tools()).tools]
            refunded = await stub.call_tool("billing_refund", arguments={"cents": 3})
            assert refunded.structured_content == {"result": -3}
            # A rule of the parent on the prefixed name wins over the mounted app's.
            main.disable(["billing_refund"])
            assert "billing_refund" not in [tool.name for tool in (await stub.list_tools()).tools]

    asyncio.run(main_test())


def test_a_mounted_apps_visibility_rule_empties_the_parents_cache() -> None:
    main, notes, _ = composed()
    main.middleware = (Cache(ttl=600.0), *main.middleware)

    async def main_test() -> None:
        async with main.test_client(protocol_version="2025-11-25") as session:
            stub = mcp.ClientStub(session)
            assert "notes_add" in [tool.name for tool in (await stub.list_tools()).tools]
            notes.disable(["add"])  # while serving, on the mounted app
            assert "notes_add" not in [tool.name for tool in (await stub.list_tools()).tools]

    asyncio.run(main_test())


def test_a_mounted_apps_failing_lifespan_stops_the_parent_with_one_line() -> None:
    from mcpbind.app import LifespanError

    def broken(app: App[Any]) -> Any:
        raise OSError("no database")

    main = App("main")
    main.mount(App("broken", lifespan=broken), prefix="b")

    async def main_test() -> None:
        with pytest.raises(LifespanError, match="OSError: no database"):
            async with main.test_client():
                pass

    asyncio.run(main_test())
