"""Resources, templates, prompts and completion of the application layer, on every revision."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
from typing import Any

import msgspec
import pytest
from typing_extensions import override

from mcpbind._client.client import ClientSession
from mcpbind._core import lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Message, ResourceError, UriTemplate
from mcpbind.codec import encode
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28")
PNG = b"\x89PNG\r\n\x1a\n"


class Style(enum.Enum):
    SHORT = "short"
    LONG = "long"


class Meta(msgspec.Struct):
    id: int
    words: int


def stub(session: ClientSession) -> Any:
    return lifecycle.revision(session.protocol_version).package.ClientStub(session)


def wire(value: Any) -> Any:
    return json.loads(encode(value))


def make_app() -> App:
    app = App("library", "1.0")
    notes = {1: "buy milk", 2: "call mum"}

    @app.resource(
        "memo://readme", mime_type="text/markdown", title="Read me", description="About this server"
    )
    def readme() -> str:
        return "# Notes"

    @app.resource("memo://logo", mime_type="image/png")
    def logo() -> bytes:
        return PNG

    @app.resource("note://{id}", title="A note")
    def note(id: int) -> str:
        """One note by its number."""
        if id not in notes:
            raise ResourceError(f"no note {id}")
        return notes[id]

    @app.resource("meta://{id}/stats")
    async def stats(id: int) -> Meta:
        return Meta(id, len(notes[id].split()))

    @app.resource("file:///{+path}")
    def file(path: str) -> str:
        return f"contents of {path}"

    @app.prompt(title="Summarize")
    def summarize(topic: str, style: Style = Style.SHORT, limit: int = 3) -> str:
        """Summarize the notes on a topic.

        Args:
            topic: What to summarize.
        """
        return f"Summarize {topic} ({style.value}, {limit} points)"

    @app.prompt()
    async def dialogue(name: str) -> list[Message]:
        return [
            Message("user", f"Hi, I am {name}"),
            Message("assistant", "Hello!"),
            Message("user", mcp.TextContent(text="Go on")),
        ]

    @app.completion(prompt="summarize", argument="topic")
    def topics(value: str) -> list[str]:
        return [t for t in ("shopping", "family", "work") if t.startswith(value)]

    @app.completion(template="note://{id}", argument="id")
    async def note_ids(value: str, arguments: dict[str, str]) -> list[str]:
        return [str(key) for key in notes if str(key).startswith(value)]

    return app


def serve(app: App, version: str, check: Any, **options: Any) -> None:
    async def main() -> None:
        async with app.test_client(protocol_version=version, **options) as session:
            await check(session)

    asyncio.run(main())


# ------------------------------------------------------------------ URI templates


def test_uri_templates() -> None:
    simple = UriTemplate("note://{id}/v/{version}")
    assert simple.variables == ("id", "version")
    assert simple.match("note://12/v/3") == {"id": "12", "version": "3"}
    assert simple.match("note://12/v/3/x") is None and simple.match("note://a/b/v/3") is None
    assert UriTemplate("note://{id}").match("note://a%20b") == {"id": "a b"}
    assert UriTemplate("file:///{+path}").match("file:///a/b/c.txt") == {"path": "a/b/c.txt"}
    assert UriTemplate("repo://x{/name}").match("repo://x/main") == {"name": "main"}
    for bad in ("x://{a,b}", "x://{?q}", "x://{a}{a}", "x://{a"):
        with pytest.raises(ValueError, match="URI template"):
            UriTemplate(bad)


def test_template_and_signature_must_agree() -> None:
    app = App("bad")
    with pytest.raises(TypeError, match=r"template variables \['id'\] have no parameter"):

        @app.resource("note://{id}")
        def wrong(name: str = "") -> str:
            return ""

    with pytest.raises(
        TypeError, match=r"parameters \['name'\] are not variables of 'note://{id}'"
    ):

        @app.resource("note://{id}")
        def extra(id: str, name: str) -> str:
            return ""

    with pytest.raises(TypeError, match=r"parameters \['id'\] are not variables of 'the URI'"):

        @app.resource("memo://static")
        def static(id: str) -> str:
            return ""


# ------------------------------------------------------------------ resources


@pytest.mark.parametrize("version", ALL)
def test_resources(version: str) -> None:
    async def check(session: ClientSession) -> None:
        server = stub(session)
        listed = wire(await server.list_resources())["resources"]
        readme = next(r for r in listed if r["uri"] == "memo://readme")
        assert (
            readme["mimeType"] == "text/markdown" and readme["description"] == "About this server"
        )
        assert ("title" in readme) == (version >= "2025-06-18")
        templates = wire(await server.list_resource_templates())["resourceTemplates"]
        assert [t["uriTemplate"] for t in templates] == [
            "note://{id}",
            "meta://{id}/stats",
            "file:///{+path}",
        ]
        assert templates[0]["description"] == "One note by its number."
        read = wire(await server.read_resource(uri="memo://readme"))
        assert read["contents"] == [
            {"uri": "memo://readme", "mimeType": "text/markdown", "text": "# Notes"}
        ]
        blob = wire(await server.read_resource(uri="memo://logo"))["contents"][0]
        assert base64.b64decode(blob["blob"]) == PNG and blob["mimeType"] == "image/png"
        assert wire(await server.read_resource(uri="note://2"))["contents"][0]["text"] == "call mum"
        stats = wire(await server.read_resource(uri="meta://1/stats"))["contents"][0]
        assert (
            json.loads(stats["text"]) == {"id": 1, "words": 2}
            and stats["mimeType"] == "application/json"
        )
        assert (
            wire(await server.read_resource(uri="file:///etc/hosts"))["contents"][0]["text"]
            == "contents of etc/hosts"
        )
        for uri, code, text in (
            ("note://9", -32602, "no note 9"),
            ("note://x", -32602, "Invalid resource URI 'note://x'"),
            # -32002 until 2026-07-28 made it invalid params (SEP-2164)
            (
                "nowhere://1",
                -32602 if version >= "2026-07-28" else -32002,
                "Resource not found: nowhere://1",
            ),
        ):
            with pytest.raises(McpError) as raised:
                await server.read_resource(uri=uri)
            assert raised.value.code == code and text in raised.value.message

    serve(make_app(), version, check)


def test_resource_subscriptions_on_a_handshake_revision() -> None:
    app = make_app()
    updated: asyncio.Queue[str] = asyncio.Queue()

    class Handlers(mcp.ClientHandlers):
        @override
        async def on_resource_updated(
            self, params: mcp.ResourceUpdatedNotificationParams, ctx: RequestContext
        ) -> None:
            updated.put_nowait(params.uri)

    async def check(session: ClientSession) -> None:
        assert session.server_capabilities.resources.subscribe is True
        server = mcp.ClientStub(session)
        await server.subscribe(uri="note://1")
        await app.notify_resource_updated("note://2")  # nobody subscribed
        await app.notify_resource_updated("note://1")
        assert await asyncio.wait_for(updated.get(), 5) == "note://1"
        assert updated.empty()
        await server.unsubscribe(uri="note://1")
        await app.notify_resource_updated("note://1")
        await asyncio.sleep(0.05)
        assert updated.empty()

    serve(app, "2025-11-25", check, handlers=Handlers())


# ------------------------------------------------------------------ prompts


@pytest.mark.parametrize("version", ALL)
def test_prompts(version: str) -> None:
    async def check(session: ClientSession) -> None:
        server = stub(session)
        listed = wire(await server.list_prompts())["prompts"]
        summarize = next(p for p in listed if p["name"] == "summarize")
        assert summarize["description"] == "Summarize the notes on a topic."
        assert summarize["arguments"] == [
            {"name": "topic", "description": "What to summarize.", "required": True},
            {"name": "style"},
            {"name": "limit"},
        ]
        assert ("title" in summarize) == (version >= "2025-06-18")
        got = wire(
            await server.get_prompt(
                name="summarize", arguments={"topic": "work", "style": "long", "limit": "5"}
            )
        )
        assert got["messages"] == [
            {"role": "user", "content": {"type": "text", "text": "Summarize work (long, 5 points)"}}
        ]
        assert got["description"] == "Summarize the notes on a topic."
        chat = wire(await server.get_prompt(name="dialogue", arguments={"name": "Ann"}))
        assert [(m["role"], m["content"]["text"]) for m in chat["messages"]] == [
            ("user", "Hi, I am Ann"),
            ("assistant", "Hello!"),
            ("user", "Go on"),
        ]
        for name, arguments, text in (
            (
                "summarize",
                {"topic": "x", "style": "medium"},
                "Invalid arguments for prompt 'summarize'",
            ),
            ("summarize", {}, "missing required field `topic`"),
            ("nope", {}, "Unknown prompt: nope"),
        ):
            with pytest.raises(McpError) as raised:
                await server.get_prompt(name=name, arguments=arguments)
            assert raised.value.code == -32602 and text in raised.value.message

    serve(make_app(), version, check)


@pytest.mark.parametrize("version", ALL)
def test_a_prompt_returns_the_messages_or_result_of_any_revision(version: str) -> None:
    """What the prompt decorator's typing lets a prompt return (a PromptMessage or
    GetPromptResult of any revision) is what a client of every revision gets."""
    app = App("revisions")

    @app.prompt()
    def messages(topic: str) -> list[mcp.PromptMessage]:
        return [mcp.PromptMessage(role="user", content=mcp.TextContent(text=topic))]

    @app.prompt()
    async def result(topic: str) -> modern.GetPromptResult:
        text = modern.TextContent(text=topic)
        return modern.GetPromptResult(
            description="From 2026-07-28",
            messages=[modern.PromptMessage(role="assistant", content=text)],
        )

    async def check(session: ClientSession) -> None:
        server = stub(session)
        got = wire(await server.get_prompt(name="messages", arguments={"topic": "a"}))
        assert got["messages"] == [{"role": "user", "content": {"type": "text", "text": "a"}}]
        got = wire(await server.get_prompt(name="result", arguments={"topic": "b"}))
        assert got["description"] == "From 2026-07-28"
        assert got["messages"] == [{"role": "assistant", "content": {"type": "text", "text": "b"}}]

    serve(app, version, check)


def test_a_prompt_argument_must_be_a_string_like_type() -> None:
    app = App("bad")
    with pytest.raises(
        TypeError,
        match=r"prompt .*listy: parameter 'items' must be a string, number, boolean or string enum",
    ):

        @app.prompt()
        def listy(items: list[str]) -> str:
            return ""


@pytest.mark.parametrize("version", ("2025-03-26", "2025-11-25", "2026-07-28"))
def test_completion(version: str) -> None:
    async def check(session: ClientSession) -> None:
        types = lifecycle.revision(version).package
        server = stub(session)
        prompt = types.PromptReference(name="summarize")
        done = await server.complete(
            argument=types.CompleteRequestParamsArgument(name="topic", value="w"), ref=prompt
        )
        assert wire(done)["completion"] == {"values": ["work"], "total": 1}
        reference = getattr(types, "ResourceTemplateReference", None) or types.ResourceReference
        ids = await server.complete(
            argument=types.CompleteRequestParamsArgument(name="id", value=""),
            ref=reference(uri="note://{id}"),
        )
        assert wire(ids)["completion"]["values"] == ["1", "2"]
        other = await server.complete(
            argument=types.CompleteRequestParamsArgument(name="style", value=""), ref=prompt
        )
        assert wire(other)["completion"]["values"] == []

    serve(make_app(), version, check)


def test_completion_needs_one_reference() -> None:
    app = App("bad")
    with pytest.raises(TypeError, match="exactly one of prompt= and template="):
        app.completion(argument="x")


def test_resources_and_prompts_added_and_removed_are_announced() -> None:
    app = make_app()
    changes: asyncio.Queue[str] = asyncio.Queue()

    class Handlers(mcp.ClientHandlers):
        @override
        async def on_resource_list_changed(
            self, params: mcp.NotificationParams, ctx: RequestContext
        ) -> None:
            changes.put_nowait("resources")

        @override
        async def on_prompt_list_changed(
            self, params: mcp.NotificationParams, ctx: RequestContext
        ) -> None:
            changes.put_nowait("prompts")

    def motd() -> str:
        return "hello"

    def farewell() -> str:
        return "bye"

    async def check(session: ClientSession) -> None:
        server = mcp.ClientStub(session)
        app.add_resource("memo://motd", motd)
        assert await asyncio.wait_for(changes.get(), 5) == "resources"
        assert (await server.read_resource(uri="memo://motd")).contents[0].text == "hello"
        app.remove_resource("note://{id}")
        assert await asyncio.wait_for(changes.get(), 5) == "resources"
        assert "note://{id}" not in [
            t.uri_template for t in (await server.list_resource_templates()).resource_templates
        ]
        app.add_prompt(farewell)
        assert await asyncio.wait_for(changes.get(), 5) == "prompts"
        app.remove_prompt("farewell")
        assert await asyncio.wait_for(changes.get(), 5) == "prompts"
        with pytest.raises(KeyError):
            app.remove_prompt("farewell")

    serve(app, "2025-11-25", check, handlers=Handlers())
