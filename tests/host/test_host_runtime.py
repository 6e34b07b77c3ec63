"""The host while it runs: servers added, removed and changed (by call, and by
editing the watched configuration file) without disturbing the others; a
server given up tried again at once; typed calls; a resource subscription;
per-entry allow and deny lists of tools; an approval hook before each call;
and each stdio server's stderr lines prefixed with its name."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from support.peers import LOWLEVEL_SERVER, NODE, SERVER_EVERYTHING, run

from mcpbind.host import Host, HostError, HostTool, RetryPolicy, ServerConfig

ONCE = RetryPolicy(max_attempts=1)


def example(name: str, *extra: str, **entry: Any) -> dict[str, Any]:
    return {name: {"command": sys.executable, "args": [str(LOWLEVEL_SERVER), *extra], **entry}}


def tool_names(host: Host) -> set[str]:
    return {tool.name for tool in host.tools}


def test_servers_added_removed_and_changed_while_running(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": example("a")}))

    async def go() -> None:
        async with Host(path, retry=ONCE, watch_config=True) as host:
            assert "a_echo" in tool_names(host)
            first = host.session("a")
            # the file changes: b is started, a is left as it was
            path.write_text(json.dumps({"mcpServers": example("a") | example("b")}))
            await host.wait_until(lambda h: "b_echo" in tool_names(h), 60)
            assert host.session("a") is first
            # a broken entry in the file: the running servers are kept
            path.write_text("{not json")
            # a changed entry restarts; a removed one stops
            path.write_text(json.dumps({"mcpServers": example("b", env={"X": "1"})}))
            await host.wait_until(lambda h: "a_echo" not in tool_names(h), 60)
            await host.wait_until(lambda h: h.status()["b"].state == "ready", 60)
            assert "a" not in host.status() and host.config.names == ["b"]
            # by call
            status = await host.add(
                ServerConfig("c", "stdio", command=sys.executable, args=(str(LOWLEVEL_SERVER),))
            )
            assert status.state == "ready" and "c_echo" in tool_names(host)
            with pytest.raises(HostError, match="already a server named 'c'"):
                await host.add(ServerConfig("c", "stdio", command="x"))
            await host.remove("c")
            assert "c_echo" not in tool_names(host)
            await host.reload({"mcpServers": example("d")})
            assert set(host.status()) == {"d"} and "d_echo" in tool_names(host)

    run(go())


def test_retry_now_connects_a_server_given_up(tmp_path: Path) -> None:
    flag = tmp_path / "up"
    script = (
        f"import os, runpy, sys; os.path.exists({str(flag)!r}) or sys.exit(3); "
        f"sys.argv = ['s']; runpy.run_path({str(LOWLEVEL_SERVER)!r}, run_name='__main__')"
    )
    config = {"mcpServers": {"flaky": {"command": sys.executable, "args": ["-c", script]}}}

    async def go() -> None:
        async with Host(config, retry=ONCE) as host:
            assert host.status()["flaky"].state == "failed"
            flag.touch()
            host.retry_now("flaky")
            await host.wait_until(lambda h: h.status()["flaky"].state == "ready", 60)
            assert "flaky_echo" in tool_names(host)

    run(go())


class Sum(msgspec.Struct):
    sum: float


def test_typed_calls_and_the_revision_stub() -> None:
    async def go() -> None:
        async with Host({"mcpServers": example("ex")}, retry=ONCE) as host:
            assert await host.call_tool_as("ex_add", {"a": 1, "b": 2}, result_type=Sum) == Sum(3)
            with pytest.raises(HostError, match="returned no structuredContent"):
                await host.call_tool_as("ex_echo", {"text": "x"}, result_type=Sum)
            listed = await host.stub("ex").list_tools()
            assert "add" in [tool.name for tool in listed.tools]

    run(go())


@pytest.mark.node
def test_a_resource_subscription_through_the_host() -> None:
    config = {
        "mcpServers": {"e": {"command": str(NODE), "args": [str(SERVER_EVERYTHING), "stdio"]}}
    }
    uri = "demo://resource/dynamic/text/1"

    async def go() -> None:
        async with Host(config, retry=ONCE, server_stderr=-3) as host:
            await host.call_tool("e_toggle-subscriber-updates")
            async with host.subscribe(uri, server="e") as updates:
                update = await anext(updates)
                assert update.uri == uri

    run(go(), timeout=90)


def test_allow_and_deny_lists_and_the_approval_hook() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def approve(tool: HostTool, arguments: dict[str, Any]) -> bool:
        asked.append((tool.name, arguments))
        return tool.original != "add"

    config = {
        "mcpServers": example("only", allowTools=["e*", "add", "count"], denyTools=["count"])
        | example("most", denyTools=["c*"])
    }

    async def go() -> None:
        async with Host(config, retry=ONCE, approve=approve) as host:
            assert {t.original for t in host.tools if t.server == "only"} == {"echo", "add"}
            most = {t.original for t in host.tools if t.server == "most"}
            assert "echo" in most and "count" not in most and "crash" not in most
            assert (await host.call_tool("only_echo", {"text": "hi"})).content[0].text == "hi"
            with pytest.raises(HostError, match="the call to 'only_add' was not approved"):
                await host.call_tool("only_add", {"a": 1, "b": 2})
            with pytest.raises(HostError, match="no tool named 'only_count'"):
                await host.call_tool("only_count")

    run(go())
    assert asked == [("only_echo", {"text": "hi"}), ("only_add", {"a": 1, "b": 2})]


def test_each_servers_stderr_is_prefixed_with_its_name(capfd: pytest.CaptureFixture[str]) -> None:
    script = (
        "import runpy, sys; print('hello from', sys.argv[1], file=sys.stderr, flush=True); "
        f"sys.argv = ['s']; runpy.run_path({str(LOWLEVEL_SERVER)!r}, run_name='__main__')"
    )
    config = {
        "mcpServers": {
            name: {"command": sys.executable, "args": ["-c", script, name]}
            for name in ("one", "two")
        }
    }

    async def go() -> None:
        async with Host(config, retry=ONCE) as host:
            assert (await host.call_tool("two_echo", {"text": "x"})).content[0].text == "x"

    run(go())
    lines = capfd.readouterr().err.splitlines()
    assert "[one] hello from one" in lines and "[two] hello from two" in lines
