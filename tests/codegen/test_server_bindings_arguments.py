"""Arguments of a typed call are checked against the tool's input schema before
they are sent: a value outside ``minimum``, ``pattern`` or ``maxLength`` (the
``msgspec.Meta`` of the generated signature) raises InvalidArguments naming the
tool and the field, and the server never sees the request; ``check_arguments=False``
sends them as they are, for the server to judge.

The server is ours (mcpbind.app) in memory, with a middleware that records
each ``tools/call`` it receives; the bindings are generated from its snapshot.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated, Any

import msgspec
import pytest
from support.peers import run

from mcpbind import codec
from mcpbind._core.jsonrpc import McpError
from mcpbind.app import App
from mcpbind.bindings import InvalidArguments, ToolCallFailed
from mcpbind_codegen.servers import Snapshot, generate

REVISION = "2025-11-25"


def booking_app(received: list[Any]) -> App:
    async def record(call: Any, call_next: Any) -> Any:
        if call.method == "tools/call":
            received.append(call.params.name)
        return await call_next(call)

    app = App("booking", "1.0.0", middleware=[record])

    @app.tool()
    def book(
        travellers: Annotated[int, msgspec.Meta(ge=1)],
        code: Annotated[str, msgspec.Meta(pattern="^[A-Z]{3}$")],
        note: Annotated[str, msgspec.Meta(max_length=5)] = "",
    ) -> str:
        """Book seats."""
        return f"{travellers} to {code}"

    return app


async def generated(session: Any, folder: Path) -> ModuleType:
    from mcpbind_protocol import v2025_11_25 as mcp

    tools = json.loads(codec.encode(await mcp.ClientStub(session).list_tools()))["tools"]
    source = generate(Snapshot({"name": "booking", "version": "1.0.0"}, REVISION, tools))
    path = folder / "booking_bindings.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("booking_bindings", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("arguments", "path", "says"),
    [
        ({"travellers": 0, "code": "LYS"}, "$.travellers", ">= 1"),
        ({"travellers": 2, "code": "lys"}, "$.code", "^[A-Z]{3}$"),
        ({"travellers": 2, "code": "LYS", "note": "too long"}, "$.note", "length <= 5"),
        ({"travellers": "2", "code": "LYS"}, "$.travellers", "Expected `int`"),
    ],
)
def test_arguments_outside_the_schema_are_refused_before_sending(
    tmp_path: Path, arguments: dict[str, Any], path: str, says: str
) -> None:
    received: list[Any] = []

    async def scenario() -> None:
        async with booking_app(received).test_client(protocol_version=REVISION) as session:
            bindings = await generated(session, tmp_path)
            server = bindings.Booking(session)
            with pytest.raises(InvalidArguments) as refused:
                await server.book(**arguments)
            message = str(refused.value)
            assert message.startswith("tool 'book': invalid arguments, not sent:"), message
            assert path in message and says in message, message
            assert (refused.value.name, refused.value.path) == ("book", path)
            assert received == []
            assert (await server.book(travellers=1, code="LYS")).content[0].text == "1 to LYS"
            assert received == ["book"]

    run(scenario())


def test_checking_can_be_turned_off(tmp_path: Path) -> None:
    """``check_arguments=False``: the arguments go as they are and the server judges."""
    received: list[Any] = []

    async def scenario() -> None:
        async with booking_app(received).test_client(protocol_version=REVISION) as session:
            bindings = await generated(session, tmp_path)
            server = bindings.Booking(session, check_arguments=False)
            with pytest.raises((ToolCallFailed, McpError)):
                await server.book(travellers=0, code="LYS")
            assert received == ["book"]

    run(scenario())
