"""What a proxied result says of its backend, put in the front's terms: the
URIs of resource links and embedded resources follow the prefix rule (so that
the front client can read them through the gateway), and the backend's own
task id stays at the gateway. server-everything behind an app, driven by the
official Python SDK client over stdio and Streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp as sdk
import pytest
from mcp import StdioServerParameters as SdkStdioParameters
from support.gateway import gateway_config, gateway_over_http
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

from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App
from mcpbind_protocol import v2024_11_05

pytestmark = [pytest.mark.usefixtures("no_leaked_processes"), pytest.mark.node]

RELATED_TASK = "io.modelcontextprotocol/related-task"
MODES = [("legacy", "2025-11-25"), ("auto", "2026-07-28")]


@pytest.fixture(autouse=True)
def quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the SDK's deprecation notices of 2026-07-28
        yield


def everything_behind_an_app() -> App:
    require(SERVER_EVERYTHING, "server-everything")
    app = App("front")
    app.proxy(StdioServerParameters(str(SERVER_EVERYTHING), ["stdio"]), prefix="everything")
    return app


def over_stdio() -> SdkStdioParameters:
    """The SDK client's parameters for an app proxying server-everything over stdio."""
    require(SERVER_EVERYTHING, "server-everything")
    return SdkStdioParameters(
        command=sys.executable, args=[str(SUPPORT / "proxy_front.py")], env=THIS_TREE
    )


async def follow_links(client: Any) -> None:
    """The links and embedded resources of server-everything's tool results and
    prompts name the gateway's URIs, and each reads through the gateway."""
    linked = await client.call_tool("everything_get-resource-links", {"count": 2})
    links = [block for block in linked.content if block.type == "resource_link"]
    assert [str(link.uri) for link in links] == [
        "demo://everything/resource/dynamic/blob/1",
        "demo://everything/resource/dynamic/text/2",
    ]
    for link in links:
        read = await client.read_resource(str(link.uri))
        assert str(read.contents[0].uri) == str(link.uri)
    referenced = await client.call_tool(
        "everything_get-resource-reference", {"resourceType": "Text", "resourceId": 4}
    )
    embedded = [block for block in referenced.content if block.type == "resource"]
    assert [str(block.resource.uri) for block in embedded] == [
        "demo://everything/resource/dynamic/text/4"
    ]
    read = await client.read_resource(str(embedded[0].resource.uri))
    assert read.contents[0].text == embedded[0].resource.text
    prompt = await client.get_prompt(
        "everything_resource-prompt", {"resourceType": "Text", "resourceId": "6"}
    )
    uris = [str(m.content.resource.uri) for m in prompt.messages if m.content.type == "resource"]
    assert uris == ["demo://everything/resource/dynamic/text/6"]


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_links_in_proxied_results_name_the_gateways_uris_over_stdio(
    mode: str, version: str
) -> None:
    """A link the front client cannot follow is no link: a backend's
    ``resource_link`` and embedded resource carry the URI the gateway serves it
    under (``demo://resource/dynamic/blob/1`` → ``demo://everything/resource/dynamic/blob/1``)."""

    async def main() -> None:
        async with sdk.Client(over_stdio(), mode=mode) as client:
            assert client.protocol_version == version
            await follow_links(client)

    run(main())


@pytest.mark.peers
@pytest.mark.parametrize(("mode", "version"), MODES)
def test_links_in_proxied_results_name_the_gateways_uris_over_http(mode: str, version: str) -> None:
    app = everything_behind_an_app()

    async def main(url: str) -> None:
        async with sdk.Client(url, mode=mode) as client:
            assert client.protocol_version == version
            await follow_links(client)

    with serving(app.asgi()) as server:
        run(main(server.url()))


RESEARCH = "everything_simulate-research-query"


def test_a_backends_task_id_does_not_reach_a_2024_11_05_front() -> None:
    """A task-required backend tool runs as the backend's task; a front without
    tasks gets the result alone, not ``_meta["io.modelcontextprotocol/related-task"]``
    naming a task it cannot know (2025-11-25, tasks: the metadata relates a
    message to a task of the receiver's peer, which the gateway's front is not)."""
    app = everything_behind_an_app()

    async def main() -> None:
        async with app.test_client(protocol_version="2024-11-05") as session:
            stub = v2024_11_05.ClientStub(session)
            result = await stub.call_tool(RESEARCH, arguments={"topic": "gateways"})
            assert "gateways" in " ".join(getattr(b, "text", "") for b in result.content)
            meta = result.meta if isinstance(result.meta, dict) else {}
            assert RELATED_TASK not in meta

    run(main())


async def call_research(client: Any) -> None:
    assert client.protocol_version == "2026-07-28"
    result = await client.call_tool(RESEARCH, {"topic": "gateways"})
    assert not result.is_error, result.content
    assert "gateways" in " ".join(getattr(b, "text", "") for b in result.content)
    assert RELATED_TASK not in (result.meta or {})


@pytest.mark.peers
def test_a_backends_task_id_does_not_reach_a_2026_07_28_front_without_tasks_over_stdio() -> None:
    async def main() -> None:
        async with sdk.Client(over_stdio(), mode="auto") as client:
            await call_research(client)

    run(main())


@pytest.mark.peers
def test_a_backends_task_id_does_not_reach_a_2026_07_28_front_without_tasks_over_http() -> None:
    app = everything_behind_an_app()

    async def main(url: str) -> None:
        async with sdk.Client(url, mode="auto") as client:
            await call_research(client)

    with serving(app.asgi()) as server:
        run(main(server.url()))


@pytest.mark.node
def test_the_official_typescript_client_follows_the_links_of_a_proxied_result(
    tmp_path: Path,
) -> None:
    """``mcpx serve --http`` in front of server-everything: the official
    TypeScript client reads each resource link of a proxied result at the URI
    the link gives."""
    node = require(NODE, "node")
    config = gateway_config(
        tmp_path / "gateway.json",
        {
            "everything": {
                "command": str(require(SERVER_EVERYTHING, "server-everything")),
                "args": ["stdio"],
            }
        },
    )
    with gateway_over_http(config) as url:
        completed = subprocess.run(
            [str(node), str(SUPPORT / "ts_links_client.cjs"), url],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "NODE_PATH": str(REPO / "tests" / "peers" / "node_modules")},
        )
    assert completed.returncode == 0, completed.stderr
    seen = json.loads(completed.stdout)
    assert seen["links"] == [
        "demo://everything/resource/dynamic/blob/1",
        "demo://everything/resource/dynamic/text/2",
    ]
    assert seen["read"] == [[uri] for uri in seen["links"]]
