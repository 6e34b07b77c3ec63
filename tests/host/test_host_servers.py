"""A host over a configuration mixing server-everything (stdio and Streamable
HTTP), our example server, a server built with the official Python SDK and a
broken entry: aggregation, routing, list changes, the servers' requests
through one set of handlers, a server killed and restarted, clean shutdown."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Iterator
from typing import Any, cast

import pytest
from support.everything_http import EverythingHttp, everything_http
from support.growing_server import growing_server
from support.http_servers import ThreadedServer, eventually, serving
from support.peers import (
    LOWLEVEL_SERVER,
    NODE,
    SDK_SERVER,
    SERVER_EVERYTHING,
    no_leaked_processes,  # noqa: F401  (a fixture)
    pid_alive,
    run,
)

from mcpbind._transports.stdio import ProcessTransport
from mcpbind.host import Host, HostError, HostHandlers, RetryPolicy, ServerConfig, ServerStatus
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as mcp

pytestmark = [pytest.mark.node, pytest.mark.peers, pytest.mark.usefixtures("no_leaked_processes")]

FAST_RETRY = RetryPolicy(initial_delay=0.2, max_delay=1.0)


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with everything_http() as server:
        yield server.url


def configuration(everything_url: str) -> dict[str, Any]:
    return {
        "mcpServers": {
            "everything": {"command": str(NODE), "args": [str(SERVER_EVERYTHING), "stdio"]},
            "everything http": {"type": "http", "url": everything_url},
            "example": {"command": "${PYTHON}", "args": [str(LOWLEVEL_SERVER)]},
            "sdk": {
                "command": sys.executable,
                "args": [str(SDK_SERVER)],
                "env": {"PYTHONWARNINGS": "ignore"},
            },
            "broken": {
                "command": sys.executable,
                "args": ["-c", "import sys; sys.exit(3)"],
                "connectTimeout": 5,
            },
        }
    }


class Application(HostHandlers):
    """Answers sampling and roots for every server, noting who asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str]] = []
        self.statuses: list[tuple[str, str]] = []

    async def create_message(
        self, server: str, params: mcp.CreateMessageRequestParams, ctx: RequestContext
    ) -> mcp.CreateMessageResult:
        self.asked.append((server, "sampling"))
        return mcp.CreateMessageResult(
            role="assistant", content=mcp.TextContent(text=f"sampled for {server}"), model="test"
        )

    async def elicit(
        self, server: str, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        self.asked.append((server, "elicitation"))
        return mcp.ElicitResult(
            action="accept", content={"name": f"Ada of {server}", "check": True}
        )

    async def list_roots(
        self, server: str, params: mcp.ListRootsRequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        self.asked.append((server, "roots"))
        return mcp.ListRootsResult(roots=[mcp.Root(uri="file:///work", name=f"root of {server}")])

    async def on_status(self, server: str, status: ServerStatus) -> None:
        self.statuses.append((server, status.state))


def texts(result: Any) -> list[str]:
    blocks = result.content if hasattr(result, "content") else [m.content for m in result.messages]
    return [block.text for block in blocks if hasattr(block, "text")]


def tool_names(host: Host) -> set[str]:
    return {tool.name for tool in host.tools}


def host_of(everything_url: str, app: HostHandlers | None = None) -> Host:
    os.environ.setdefault("PYTHON", sys.executable)
    return Host(
        configuration(everything_url),
        app,
        retry=FAST_RETRY,
        server_stderr=asyncio.subprocess.DEVNULL,
    )


def test_aggregates_every_server_and_routes_calls(everything_url: str) -> None:
    async def scenario() -> None:
        async with host_of(everything_url) as host:
            status = host.status()
            states = {name: s.state for name, s in status.items()}
            # The broken server is in its retry cycle: it failed at least once,
            # and after FAST_RETRY's first 0.2 s it may be connecting again
            # while the others are still starting.
            assert (
                states.pop("broken") in ("retrying", "connecting")
                and status["broken"].failures >= 1
            )
            assert states == {
                "everything": "ready",
                "everything http": "ready",
                "example": "ready",
                "sdk": "ready",
            }
            assert "exited with code 3" in (status["broken"].error or "")
            # each server negotiated its own revision
            assert status["everything"].protocol_version == "2025-11-25"
            assert status["sdk"].protocol_version == "2026-07-28"

            names = tool_names(host)
            assert {
                "everything_echo",
                "everything-http_echo",
                "example_echo",
                "sdk_add",
            } <= names
            assert not any(name.startswith("broken__") for name in names)
            assert all(
                len(name) <= 128
                and name.replace("_", "").replace("-", "").replace(".", "").isalnum()
                for name in names
            )
            echo = next(tool for tool in host.tools if tool.name == "everything-http_echo")
            assert (echo.server, echo.original) == ("everything http", "echo")

            # routing: each call reaches the server that offers the tool
            assert texts(await host.call_tool("everything_echo", {"message": "one"})) == [
                "Echo: one"
            ]
            assert texts(await host.call_tool("everything-http_echo", {"message": "two"})) == [
                "Echo: two"
            ]
            assert texts(await host.call_tool("example_echo", {"text": "three"})) == ["three"]
            assert texts(await host.call_tool("sdk_add", {"a": 2, "b": 5})) == ["7"]

            # resources by URI, templates by match, prompts and completions by host name
            static = next(
                r.uri
                for r in host.resources
                if r.server == "everything" and r.uri.startswith("demo://")
            )
            assert host.server_of("greeting://ada") == "example"
            read = await host.read_resource("greeting://ada")
            assert "ada" in read.contents[0].text
            with pytest.raises(HostError, match="several servers"):
                host.server_of(static)  # both everything servers list it
            contents = await host.read_resource(static, server="everything http")
            assert contents.contents[0].uri == static
            prompt = await host.get_prompt("sdk_review", {"code": "x = 1"})
            assert "x = 1" in texts(prompt)[0]
            completed = await host.complete("language", "py", prompt="example_review")
            assert "python" in completed.completion.values
            names = await host.complete("name", "a", template="greeting://{name}")
            assert names.completion.values == ["alice"]
            team = await host.complete(
                "name",
                "",
                prompt="everything_completable-prompt",
                context={"department": "Engineering"},
            )
            assert team.completion.values

            # a name under a server that is down names the server, not a missing tool
            with pytest.raises(HostError, match=r"^server 'broken' is not connected \(retrying"):
                await host.call_tool("broken_x")
            with pytest.raises(HostError, match="no tool named 'example_nope'"):
                await host.call_tool("example_nope")
            with pytest.raises(HostError, match="not connected"):
                host.session("broken")

    run(scenario())


def test_list_changes_and_server_requests_reach_the_one_set_of_handlers(
    everything_url: str,
) -> None:
    app = Application()

    async def scenario() -> None:
        async with host_of(everything_url, app) as host:
            # server-everything registers its sampling and roots tools once it
            # has seen the client's capabilities, and announces the new list
            await host.wait_until(
                lambda h: {
                    "everything_trigger-sampling-request",
                    "everything-http_get-roots-list",
                }
                <= tool_names(h),
                timeout=20,
            )
            sampled = await host.call_tool("everything_trigger-sampling-request", {"prompt": "hi"})
            assert "sampled for everything" in " ".join(texts(sampled))
            roots = await host.call_tool("everything-http_get-roots-list", {})
            assert "root of everything http" in " ".join(texts(roots))
            # server-everything asks for the roots again when told they changed
            await host.roots_changed()
            await eventually(
                lambda: app.asked.count(("everything http", "roots")) == 2, 10, "roots asked again"
            )
            elicited = await host.call_tool("everything_trigger-elicitation-request", {})
            assert "Ada of everything" in " ".join(texts(elicited))
            assert {
                ("everything", "sampling"),
                ("everything http", "roots"),
                ("everything", "elicitation"),
            } <= set(app.asked)
            assert ("broken", "retrying") in app.statuses and ("sdk", "ready") in app.statuses
        assert ("sdk", "stopped") in app.statuses  # told before the host is gone

    run(scenario())


def test_a_killed_server_leaves_the_catalogue_and_comes_back(everything_url: str) -> None:
    async def scenario() -> None:
        async with host_of(everything_url) as host:
            first = cast(ProcessTransport, host.session("example").transport).process.pid
            os.kill(first, signal.SIGKILL)
            await host.wait_until(lambda h: "example_echo" not in tool_names(h), timeout=10)
            await host.wait_until(lambda h: "example_echo" in tool_names(h), timeout=20)
            assert host.status()["example"].state == "ready"
            second = cast(ProcessTransport, host.session("example").transport).process.pid
            assert second != first
            assert texts(await host.call_tool("example_echo", {"text": "back"})) == ["back"]
            assert texts(await host.call_tool("sdk_add", {"a": 1, "b": 1})) == [
                "2"
            ]  # the others were undisturbed

    run(scenario())


def test_leaving_the_host_ends_every_session_and_process(everything_url: str) -> None:
    async def scenario() -> list[int]:
        async with host_of(everything_url) as host:
            pids = [
                cast(ProcessTransport, host.session(name).transport).process.pid
                for name in ("everything", "example", "sdk")
            ]
            assert all(pid_alive(pid) for pid in pids)
        assert {s.state for s in host.status().values()} == {"stopped"}
        assert host.tools == []
        return pids

    pids = run(scenario())
    assert not any(pid_alive(pid) for pid in pids)


def test_an_http_server_killed_and_restarted_is_noticed_and_comes_back() -> None:
    async def scenario(remote: EverythingHttp) -> None:
        config = {
            "mcpServers": {
                "remote": {
                    "type": "http",
                    "url": remote.url,
                    "pingInterval": 0.3,
                    "connectTimeout": 10,
                },
                "example": {"command": sys.executable, "args": [str(LOWLEVEL_SERVER)]},
            }
        }
        async with Host(config, retry=FAST_RETRY) as host:
            assert "remote_echo" in tool_names(host)
            await asyncio.to_thread(remote.kill)
            await host.wait_until(lambda h: "remote_echo" not in tool_names(h), timeout=15)
            assert "health check failed" in (host.status()["remote"].error or "")
            assert "example_echo" in tool_names(host)
            await asyncio.to_thread(remote.start)
            await host.wait_until(lambda h: "remote_echo" in tool_names(h), timeout=20)
            assert texts(await host.call_tool("remote_echo", {"message": "again"})) == [
                "Echo: again"
            ]

    with everything_http() as remote:
        run(scenario(remote))


def test_legacy_sse_and_stateless_entries_an_authorization_hook_and_a_triggered_list_change() -> (
    None
):
    app = Changes()
    seen: list[str] = []

    async def authorize(entry: ServerConfig) -> dict[str, str]:
        seen.append(entry.name)
        return {"Authorization": f"Bearer {entry.auth['token']}"} if entry.auth else {}

    async def scenario(web: ThreadedServer) -> None:
        config = {
            "servers": {
                "old": {"type": "sse", "url": web.url("/sse"), "auth": {"token": "s3cret"}},
                "new": {"type": "http", "url": web.url("/mcp")},
            }
        }
        async with Host(config, app, authorize=authorize) as host:
            status = host.status()
            assert (
                status["new"].protocol_version == "2026-07-28"
            )  # list changes come over subscriptions/listen
            assert status["old"].state == "ready"
            assert {"old_grow", "new_grow"} <= tool_names(host)
            grown = await host.call_tool("new_grow")
            assert texts(grown) == ["extra-1"]
            await host.wait_until(
                lambda h: {"old_extra-1", "new_extra-1"} <= tool_names(h), timeout=10
            )
            assert ("old", "tools") in app.changes and ("new", "tools") in app.changes
            assert texts(await host.call_tool("old_extra-1")) == ["extra-1 called"]
        assert sorted(seen) == ["new", "old"]
        legacy = [h for m, path, h in web.recorder.requests if path in ("/sse", "/messages")]
        assert legacy and all(h.get("authorization") == "Bearer s3cret" for h in legacy)
        assert all(
            "authorization" not in h for m, path, h in web.recorder.requests if path == "/mcp"
        )

    with serving(http_app(growing_server())) as web:
        run(scenario(web))


class Changes(HostHandlers):
    def __init__(self) -> None:
        self.changes: list[tuple[str, str]] = []

    async def on_list_changed(self, server: str, kind: str) -> None:
        self.changes.append((server, kind))
