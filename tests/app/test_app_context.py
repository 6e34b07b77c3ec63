"""The injected Context: progress, logs, the client's identity and capabilities,
``_meta``, and asking the client (elicitation with a typed form, sampling,
roots) by a request before 2026-07-28 and by input-required rounds from it on."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any, Literal

import msgspec
import pytest
from typing_extensions import override

from mcpbind._core import jsonrpc, lifecycle
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App, Context, Elicited
from mcpbind.app._context import form_schema
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25 as mcp
from mcpbind_protocol import v2026_07_28 as modern

ASKING = ("2025-06-18", "2025-11-25", "2026-07-28")


class Contact(msgspec.Struct):
    name: str
    age: int = 30
    plan: Literal["free", "pro"] = "free"
    newsletter: bool | None = None


@dataclasses.dataclass
class Nested:
    contact: Contact


class Name(msgspec.Struct):
    name: str


def client_handlers(version: str, *, action: str = "accept", log: list[Any] | None = None) -> Any:
    """Client handlers of ``version`` answering as a user and a model would."""
    types = lifecycle.revision(version).package

    class Handlers(types.ClientHandlers):  # type: ignore[name-defined,misc]
        asked: list[str] = []

        @override
        async def elicit(self, params: Any, ctx: RequestContext) -> Any:
            self.asked.append(params.message)
            schema = msgspec.to_builtins(params.requested_schema)
            assert (
                schema["properties"]["plan"]["enum"] == ["free", "pro"]
                and schema["properties"]["plan"]["type"] == "string"
            )
            assert schema["required"] == ["name"]
            if action != "accept":
                return types.ElicitResult(action=action)
            return types.ElicitResult(
                action="accept", content={"name": params.message.split()[-1], "plan": "pro"}
            )

        @override
        async def create_message(self, params: Any, ctx: RequestContext) -> Any:
            prompt = params.messages[-1].content.text
            return types.CreateMessageResult(
                role="assistant",
                model="echo-1",
                content=types.TextContent(text=f"re: {prompt}"),
                stop_reason="endTurn",
            )

        @override
        async def list_roots(self, params: Any, ctx: RequestContext) -> Any:
            return types.ListRootsResult(
                roots=[types.Root(uri="file:///work", name="work"), types.Root(uri="file:///tmp")]
            )

        @override
        async def on_logging_message(self, params: Any, ctx: RequestContext) -> None:
            if log is not None:
                log.append((params.level, params.data))

    return Handlers()


def asking_app() -> App:
    app = App("asking")

    @app.tool()
    async def register(ctx: Context) -> str:
        first: Elicited[Contact] = await ctx.elicit("Who is Ann", Contact)
        if not first.accepted or first.data is None:
            return f"no ({first.action})"
        second = await ctx.elicit("Who is Bob", Contact)
        sampled = await ctx.sample("say hi", max_tokens=10, system_prompt="be brief")
        roots = await ctx.list_roots()
        assert second.data is not None
        return (
            f"{first.data.name}/{first.data.plan}/{first.data.age} {second.data.name} {sampled.text} {sampled.model} "
            + ",".join(f"{root.uri}={root.name}" for root in roots)
        )

    @app.resource("profile://{user}")
    async def profile(user: str, ctx: Context) -> str:
        roots = await ctx.list_roots()
        return f"{user} works in {roots[0].uri}"

    @app.prompt()
    async def greet(ctx: Context) -> str:
        who = await ctx.elicit("Who is Cy", Contact)
        return f"Greet {who.data.name if who.data else 'nobody'}"

    return app


@pytest.mark.parametrize("version", ASKING)
def test_asking_the_client(version: str) -> None:
    handlers = client_handlers(version)

    async def main() -> None:
        async with asking_app().test_client(protocol_version=version, handlers=handlers) as session:
            server = lifecycle.revision(version).package.ClientStub(session)
            result = await server.call_tool("register", arguments={})
            assert (
                result.content[0].text
                == "Ann/pro/30 Bob re: say hi echo-1 file:///work=work,file:///tmp=None"
            )
            prompt = await server.get_prompt(name="greet")
            assert prompt.messages[0].content.text == "Greet Cy"
            read = await server.read_resource(uri="profile://ann")
            assert read.contents[0].text == "ann works in file:///work"

    asyncio.run(main())
    # At 2026-07-28 each round runs the function again from the start, yet
    # the user is asked each question once: earlier answers come back in the
    # sealed requestState.
    assert handlers.asked == ["Who is Ann", "Who is Bob", "Who is Cy"]


@pytest.mark.parametrize("version", ("2025-11-25", "2026-07-28"))
@pytest.mark.parametrize("action", ("decline", "cancel"))
def test_a_declined_form(version: str, action: str) -> None:
    async def main() -> None:
        app = asking_app()
        async with app.test_client(
            protocol_version=version, handlers=client_handlers(version, action=action)
        ) as session:
            result = (
                await lifecycle.revision(version)
                .package.ClientStub(session)
                .call_tool("register", arguments={})
            )
            assert result.content[0].text == f"no ({action})"

    asyncio.run(main())


def test_form_schemas() -> None:
    assert form_schema(Contact) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "default": 30},
            "plan": {"enum": ["free", "pro"], "default": "free", "type": "string"},
            "newsletter": {"type": "boolean"},
        },
        "required": ["name"],
    }
    with pytest.raises(
        TypeError, match="field 'contact' must be a string, number, integer, boolean or string enum"
    ):
        form_schema(Nested)


@pytest.mark.parametrize("version", ("2024-11-05", "2025-11-25", "2026-07-28"))
def test_progress_logs_and_what_the_request_says(version: str) -> None:
    app = App("context")

    @app.tool()
    async def work(steps: int, ctx: Context) -> dict[str, Any]:
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        await ctx.debug("details")
        await ctx.warning({"careful": True}, logger="work")
        return {
            "version": ctx.protocol_version,
            "client": ctx.client_info.name,
            "sampling": ctx.client_supports("sampling"),
            "meta": dict(ctx.meta).get("trace"),
            "request_id": ctx.request_id is not None,
        }

    log: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def main() -> None:
        from mcpbind._client.client import Client

        types = lifecycle.revision(version).package
        client = Client(
            name="ctx-client",
            version="1",
            protocol_version=version,
            handlers=client_handlers(version, log=log),
            log_level="info",
        )
        async with app.test_client(client=client) as session:
            if not session.stateless:
                await types.ClientStub(session).set_level(level="info")
            # The 2024-11-05 stub has no _meta parameter for tools/call.
            meta = {"meta": {"trace": "t1"}} if version != "2024-11-05" else {}
            result = await types.ClientStub(session).call_tool(
                "work", arguments={"steps": 2}, on_progress=lambda *a: progress.append(a), **meta
            )
            text = result.content[0].text
            assert msgspec.json.decode(text) == {
                "version": version,
                "client": "ctx-client",
                "sampling": True,
                "meta": "t1" if meta else None,
                "request_id": True,
            }
            await asyncio.sleep(0.05)

    asyncio.run(main())
    assert progress == [(1, 2, "step 1"), (2, 2, "step 2")]
    assert log == [("warning", {"careful": True})]


class Choice(msgspec.Struct):
    colors: list[str]


TITLED_MULTI = {
    "type": "object",
    "properties": {
        "colors": {
            "type": "array",
            "items": {"anyOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}]},
        }
    },
    "required": ["colors"],
}


def test_an_elicitation_schema_no_type_spells_and_a_hand_made_round() -> None:
    """``schema=`` sends a requested schema of its own; ``key=`` names the
    request in an input-required result; ``ctx.params`` lets a 2026-07-28
    function run its own input-required rounds."""
    app = App("raw")

    @app.tool()
    async def pick(ctx: Context) -> str:
        answer = await ctx.elicit("Pick colors", Choice, schema=TITLED_MULTI)
        return ",".join(answer.data.colors) if answer.data else answer.action

    @app.tool()
    async def named(ctx: Context) -> str:
        # The key a fixed-key client expects; the retry carries the answer under it.
        answer = await ctx.elicit("Your name?", Name, key="user_name")
        return f"{answer.data.name if answer.data else answer.action} under {sorted(ctx.params.input_responses)}"

    @app.tool()
    def confirm(ctx: Context) -> modern.CallToolResult | modern.InputRequiredResult:
        responses = ctx.params.input_responses
        answer = responses.get("ok") if isinstance(responses, dict) else None
        if answer is None:
            form = modern.ElicitRequestFormParams(
                message="Sure?",
                requested_schema=modern.ElicitRequestFormParamsRequestedSchema(properties={}),
            )
            return modern.InputRequiredResult(
                input_requests={"ok": modern.ElicitRequest(params=form)}, request_state="mine"
            )
        return modern.CallToolResult(
            content=[modern.TextContent(text=f"{answer.action} after {ctx.params.request_state}")]
        )

    class Picker(mcp.ClientHandlers):
        @override
        async def elicit(self, params: Any, ctx: RequestContext) -> Any:
            assert msgspec.to_builtins(params.requested_schema) == TITLED_MULTI
            return mcp.ElicitResult(action="accept", content={"colors": ["r", "g"]})

    class Confirmer(modern.ClientHandlers):
        @override
        async def elicit(self, params: Any, ctx: RequestContext) -> Any:
            return modern.ElicitResult(action="accept", content={"name": "Ada"})

    async def main() -> None:
        async with app.test_client(protocol_version="2025-11-25", handlers=Picker()) as session:
            assert (await mcp.ClientStub(session).call_tool("pick")).content[0].text == "r,g"
        async with app.test_client(handlers=Confirmer()) as session:
            assert (await modern.ClientStub(session).call_tool("confirm")).content[
                0
            ].text == "accept after mine"
            named = await modern.ClientStub(session).call_tool("named")
            assert named.content[0].text == "Ada under ['user_name']"

    asyncio.run(main())


@pytest.mark.parametrize("version", ("2025-11-25", "2026-07-28"))
def test_a_careless_except_and_an_answer_that_does_not_fit(version: str) -> None:
    app = App("careless")

    @app.tool()
    async def guarded(ctx: Context) -> str:
        try:
            answer = await ctx.elicit("Who is Dee", Contact)
        except Exception:  # must not swallow the 2026-07-28 input round
            return "swallowed"
        return answer.data.name if answer.data else "none"

    @app.tool()
    async def strict(ctx: Context) -> str:
        answer = await ctx.elicit("Who is Dee", Contact)
        return answer.data.name if answer.data else "none"

    types = lifecycle.revision(version).package

    class Numbers(types.ClientHandlers):  # type: ignore[name-defined,misc]
        @override
        async def elicit(self, params: Any, ctx: RequestContext) -> Any:
            return types.ElicitResult(action="accept", content={"name": 42})

    async def main() -> None:
        async with app.test_client(
            protocol_version=version, handlers=client_handlers(version)
        ) as session:
            assert (await types.ClientStub(session).call_tool("guarded")).content[0].text == "Dee"
        async with app.test_client(protocol_version=version, handlers=Numbers()) as session:
            result = await types.ClientStub(session).call_tool("strict")
            assert result.is_error is True
            assert (
                result.content[0].text
                == "The answer to 'Who is Dee' does not fit the form: Expected `str`, got `int` - at `$.name`"
            )

    asyncio.run(main())


def test_an_answer_is_read_as_the_result_of_what_was_asked_or_refused() -> None:
    """2026-07-28, multi round-trip requests: "Servers SHOULD validate that the
    data provided by the client is a valid `InputResponses` object" and
    "Protocol errors (malformed JSON, invalid schema, internal server errors)
    SHOULD return a JSON-RPC error response". An answer under the key of a
    roots/list request that has the shape of an elicitation answer is not
    taken for one: it is refused naming the method and what it lacks."""
    app = App("roots")

    @app.tool()
    async def where(ctx: Context) -> str:
        return ", ".join(root.uri for root in await ctx.list_roots())

    class Confused(modern.ClientHandlers):
        @override
        async def list_roots(
            self, params: modern.ListRootsRequestParams, ctx: RequestContext
        ) -> Any:
            return modern.ElicitResult(action="accept")

    async def main() -> None:
        async with app.test_client(protocol_version="2026-07-28", handlers=Confused()) as session:
            with pytest.raises(McpError) as error:
                await modern.ClientStub(session).call_tool("where")
        assert error.value.code == jsonrpc.INVALID_PARAMS
        assert error.value.message == (
            "Invalid params: inputResponses['roots-0'], the answer to roots/list,"
            " lacks required field(s) `roots`"
        )

    asyncio.run(main())
