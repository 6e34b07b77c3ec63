"""A handler override that returns the wrong result type: mypy must refuse it."""

from __future__ import annotations

from typing_extensions import override

from mcpbind_protocol.v2025_11_25 import CallToolRequestParams, ListToolsResult, ServerHandlers
from mcpbind.methods import RequestContext


class WrongReturn(ServerHandlers):
    @override
    async def call_tool(self, params: CallToolRequestParams, ctx: RequestContext) -> ListToolsResult:  # E: override
        return ListToolsResult(tools=[])
