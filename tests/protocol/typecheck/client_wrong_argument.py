"""Stub calls with arguments of the wrong type: mypy must refuse them."""

from __future__ import annotations

from mcpbind_protocol.v2025_11_25 import ClientStub, PromptReference


async def calls(stub: ClientStub) -> None:
    await stub.call_tool(42)  # E: arg-type
    await stub.call_tool("echo", arguments=["not", "an", "object"])  # E: arg-type
    await stub.read_resource(uri=b"file:///x")  # E: arg-type
    await stub.complete({"name": "a", "value": "b"}, PromptReference(name="p"))  # E: arg-type
    await stub.list_tools(cursor=3)  # E: arg-type
