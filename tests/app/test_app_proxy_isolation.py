"""A proxied server that dies or hangs is isolated: its tools leave the
catalogue (the front's clients are told), calls to it get an error naming it
and why, the rest of the app keeps working, and once it is connected again
its tools come back, with a notification."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from support.peers import (
    REPO,
    SUPPORT,
    THIS_TREE,
    no_leaked_processes,  # noqa: F401  (a fixture)
    run,
)

from mcpbind._core.jsonrpc import McpError
from mcpbind._transports.stdio import StdioServerParameters
from mcpbind.app import App
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2025_11_25

pytestmark = pytest.mark.usefixtures("no_leaked_processes")

NOTES_SERVER = REPO / "examples" / "notes_server.py"
WAIT = 30.0  # a deadline against hanging, not a measure: the awaited event comes much sooner


class Watching(v2025_11_25.ClientHandlers):
    """A front client that notes each tools/list_changed."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()

    async def on_tool_list_changed(self, params: Any, ctx: RequestContext) -> None:
        self.changed.set()


async def until(front: Watching, holds: Callable[[], Awaitable[bool]]) -> None:
    """Wait for list-changed notifications until ``holds()``."""
    async with asyncio.timeout(WAIT):
        while not await holds():
            await front.changed.wait()
            front.changed.clear()


def gateway(notes: dict[str, Any]) -> App:
    app = App("front")

    @app.tool()
    def own() -> str:
        return "mine"

    app.proxy(
        {"command": sys.executable, "args": [str(NOTES_SERVER)], "env": THIS_TREE, **notes},
        prefix="notes",
    )
    app.proxy(
        StdioServerParameters(
            sys.executable, [str(SUPPORT / "old_notes_server.py")], env=THIS_TREE
        ),
        prefix="old",
    )
    return app


def backend_pid(app: App) -> int:
    session = app._proxies[0].session
    assert session is not None
    pid: int = session.transport.process.pid  # type: ignore[attr-defined]
    return pid


async def isolated_and_back(app: App, harm: Callable[[int], None], expect: str) -> None:
    front = Watching()
    async with app.test_client(protocol_version="2025-11-25", handlers=front) as session:
        stub = v2025_11_25.ClientStub(session)

        async def names() -> set[str]:
            return {tool.name for tool in (await stub.list_tools()).tools}

        async def notes_gone() -> bool:
            return "notes_add_note" not in await names()

        async def notes_back() -> bool:
            return "notes_add_note" in await names()

        assert {"own", "notes_add_note", "old_add_note"} <= await names()
        first = backend_pid(app)
        harm(first)
        if expect == "timed out":
            # A hung backend: the call in flight fails when its requestTimeout passes.
            try:
                await stub.call_tool("notes_add_note", arguments={"text": "lost"})
            except McpError as error:
                assert "the server behind 'notes'" in error.message, error.message
            else:
                raise AssertionError("a call to a hung backend succeeded")
        await until(front, notes_gone)
        try:
            await stub.call_tool("notes_add_note", arguments={"text": "lost"})
        except McpError as error:
            assert "the server behind 'notes' is not connected" in error.message
            assert expect in error.message, error.message
        else:
            raise AssertionError("a withdrawn tool was called")
        # The rest keep working meanwhile.
        assert (await stub.call_tool("own", arguments={})).content[0].text == "mine"
        kept = await stub.call_tool("old_add_note", arguments={"text": "kept"})
        assert "kept" in kept.content[0].text
        # Connected again (a new process): its tools are back, with a notification.
        await until(front, notes_back)
        assert backend_pid(app) != first
        added = await stub.call_tool("notes_add_note", arguments={"text": "back"})
        assert added.structured_content is not None
        assert added.structured_content["text"] == "back"


def test_a_killed_backend_leaves_the_catalogue_and_comes_back() -> None:
    app = gateway({})
    run(isolated_and_back(app, lambda pid: os.kill(pid, signal.SIGKILL), "connection lost"))


def test_a_hung_backend_times_out_fails_its_health_check_and_comes_back() -> None:
    """A stopped process answers nothing: the call in flight fails after the
    entry's requestTimeout, the health check of its pingInterval fails, and the
    proxy replaces the process."""
    app = gateway({"requestTimeout": 1, "pingInterval": 1, "healthTimeout": 2})
    run(isolated_and_back(app, lambda pid: os.kill(pid, signal.SIGSTOP), "health check failed"))
