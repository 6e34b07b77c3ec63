"""A handler for a method the revision does not have: 2024-11-05 has no elicitation."""

from __future__ import annotations

from typing import Any

from typing_extensions import override

from mcpbind_protocol.v2024_11_05 import ClientHandlers
from mcpbind.methods import RequestContext


class Elicits(ClientHandlers):
    @override
    async def elicit(self, params: Any, ctx: RequestContext) -> Any:  # E: misc "elicit" is marked as an override, but no base method was found
        return None
