"""A handler override that takes the wrong params type: mypy must refuse it."""

from __future__ import annotations

from typing_extensions import override

from mcpbind_protocol.v2025_11_25 import CallToolResult, PaginatedRequestParams, ServerHandlers
from mcpbind.methods import RequestContext


class WrongParams(ServerHandlers):
    @override
    async def call_tool(self, params: PaginatedRequestParams, ctx: RequestContext) -> CallToolResult:  # E: override
        return CallToolResult(content=[])
