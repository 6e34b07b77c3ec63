"""Visibility rules made while serving hold for what clients list and call, the
app's ``Cache`` notwithstanding, and a rule for one session asked by a request
that has none (2026-07-28) answers the caller with a tool error saying why.

tests/support/unlock_server.py (the servers guide's visibility example behind a
``Cache``) is driven by the official Python SDK client (PyPI ``mcp`` 2.3.0) at
2025-11-25 and, in its ``auto`` mode, 2026-07-28, and by this runtime's
``Client`` (2026-07-28 by default), over stdio and Streamable HTTP."""

from __future__ import annotations

import sys
import warnings
from collections.abc import Iterator
from typing import Any

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from support.http_servers import serving
from support.peers import SUPPORT, THIS_TREE, no_leaked_processes, run  # noqa: F401
from support.unlock_server import unlock_app

from mcpbind._client.client import Client, connect_stdio
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.http import connect_http
from mcpbind_protocol import v2026_07_28 as modern

UNLOCK_SERVER = SUPPORT / "unlock_server.py"
MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]
NO_SESSION = (
    "protocol revision 2026-07-28 has no sessions: "
    "nothing can be shown or hidden for this client alone"
)

pytestmark = pytest.mark.usefixtures("no_leaked_processes")


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


async def names(client: Any) -> list[str]:
    return sorted(tool.name for tool in (await client.list_tools()).tools)


async def drive(client: Any, version: str) -> None:
    assert client.protocol_version == version
    assert await names(client) == ["ping", "retire", "unlock"]  # and now kept by the Cache
    unlocked = await client.call_tool("unlock", {"code": "letmein"})
    if version == "2026-07-28":
        # A request of 2026-07-28 has no session to show the admin tools to.
        assert unlocked.is_error is True and unlocked.content[0].text == NO_SESSION
        assert await names(client) == ["ping", "retire", "unlock"]
    else:
        assert unlocked.is_error is not True and unlocked.content[0].text == "ok"
        assert await names(client) == ["ping", "purge", "retire", "unlock"]
        assert (await client.call_tool("purge", {})).content[0].text == "0"
    retired = await client.call_tool("retire", {"name": "ping"})
    assert retired.content[0].text == "ping retired"
    assert "ping" not in await names(client)
    with pytest.raises(sdk.MCPError, match="Unknown tool: ping"):
        await client.call_tool("ping", {})


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_visibility_changes_while_serving_reach_the_lists_over_stdio(
    mode: str, version: str
) -> None:
    async def main() -> None:
        parameters = SdkStdioParameters(
            command=sys.executable, args=[str(UNLOCK_SERVER)], env=THIS_TREE
        )
        async with sdk.Client(parameters, mode=mode) as client:
            await drive(client, version)

    run(main())


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_visibility_changes_while_serving_reach_the_lists_over_streamable_http(
    mode: str, version: str
) -> None:
    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode) as client:
            await drive(client, version)

    with serving(unlock_app().asgi()) as server:
        run(main(server.url()))


async def unlock_without_a_session(session: Any) -> None:
    assert session.protocol_version == "2026-07-28"
    tools = modern.ClientStub(session)
    unlocked = await tools.call_tool("unlock", arguments={"code": "letmein"})
    assert unlocked.is_error is True
    assert [block.text for block in unlocked.content] == [NO_SESSION]  # type: ignore[union-attr]


def test_a_session_rule_asked_without_a_session_is_a_tool_error_over_stdio() -> None:
    async def main() -> None:
        parameters = StdioServerParameters(
            command=sys.executable, args=[str(UNLOCK_SERVER)], env=THIS_TREE
        )
        async with connect_stdio(Client(name="c", version="1"), parameters) as session:
            await unlock_without_a_session(session)

    run(main())


def test_a_session_rule_asked_without_a_session_is_a_tool_error_over_streamable_http() -> None:
    async def main(url: str) -> None:
        async with connect_http(Client(name="c", version="1"), url) as session:
            await unlock_without_a_session(session)

    with serving(unlock_app().asgi()) as server:
        run(main(server.url()))


@pytest.mark.peers
def test_a_sessions_unlocked_list_is_cached_for_that_session_alone_over_streamable_http() -> None:
    """Two sessions of one client address (two agents on one machine) share no
    cached list: the one that unlocked the admin tools lists them, the other
    does not, behind the app's ``Cache`` (keyed by the session as well as by
    the client, since visibility rules are per session)."""

    async def main(url: str) -> None:
        async with sdk.Client(url, mode="legacy") as first, sdk.Client(url, mode="legacy") as other:
            assert await names(other) == ["ping", "retire", "unlock"]  # cached for `other`
            await first.call_tool("unlock", {"code": "letmein"})
            assert await names(first) == ["ping", "purge", "retire", "unlock"]
            assert await names(other) == ["ping", "retire", "unlock"]
            with pytest.raises(sdk.MCPError, match="Unknown tool: purge"):
                await other.call_tool("purge", {})
            assert (await first.call_tool("purge", {})).content[0].text == "0"

    with serving(unlock_app().asgi()) as server:
        run(main(server.url()))
