"""What the headers of a 2026-07-28 request must mirror of its body.

``Mcp-Method``, ``Mcp-Name`` and ``MCP-Protocol-Version`` mirror the method, the name of
the tool, prompt or resource, and the ``_meta`` revision; each argument of a tool whose
input schema annotates it with ``x-mcp-header`` is mirrored in an ``Mcp-Param-*`` header.
A request whose headers say otherwise is refused (400, HeaderMismatch).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from ...._core import jsonrpc, lifecycle
from ...._server.server import Server
from .. import headers as http_headers
from ..headers import InvalidAnnotation, ParamHeader
from .options import HttpOptions

logger = logging.getLogger(__name__)

# Who lists the tools for the Mcp-Param-* check: the app itself, not the client whose call
# made it look (a client's _meta could fail the listing, and the tools one client sees are
# not necessarily those another does).
_HEADER_CHECK_CLIENT = {"name": "mcp-runtime-header-check", "version": "0"}


def header_problem(
    headers: dict[str, str], method: str, fields: http_headers.MirroredFields, version: Any
) -> str | None:
    """What is wrong with the standard headers of a 2026-07-28 request, if
    anything; ``version``: the one its ``_meta`` names."""
    sent = headers.get(http_headers.METHOD)
    if sent is None:
        return "the Mcp-Method header is missing"
    if sent.strip(" \t") != method:
        return f"Mcp-Method header value {sent.strip()!r} does not match body method {method!r}"
    if isinstance(version, str):
        sent = headers.get("mcp-protocol-version")
        if sent is None:
            return "the MCP-Protocol-Version header is missing"
        if sent.strip(" \t") != version:
            return f"MCP-Protocol-Version header value {sent.strip()!r} does not match _meta protocol version {version!r}"
    expected = fields.name_for(method)
    if expected is not None:
        sent = headers.get(http_headers.NAME)
        if sent is None:
            return "the Mcp-Name header is missing"
        value = http_headers.decode_value(sent)
        if value is None:
            return "the Mcp-Name header holds invalid characters or invalid Base64"
        if value != expected:
            return f"Mcp-Name header value {value!r} does not match body value {expected!r}"
    return None


def param_headers_problem(
    headers: dict[str, str], fields: http_headers.MirroredFields, params: list[ParamHeader]
) -> str | None:
    """What is wrong with the Mcp-Param-* headers of a tools/call whose tool mirrors ``params``."""
    if not params:
        return None
    arguments: Any = None
    if not isinstance(fields.arguments, msgspec.UnsetType):
        try:
            arguments = msgspec.json.decode(fields.arguments)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return None  # the session refuses the params
    for param in params:
        value = param.value_in(arguments)
        if value is None:
            continue  # nothing to mirror: a header sent anyway is not looked at
        sent = headers.get(param.header)
        if sent is None:
            return f"the Mcp-Param-{param.name} header is missing (argument {'.'.join(param.path)} is given)"
        decoded = http_headers.decode_value(sent)
        if decoded is None:
            return f"the Mcp-Param-{param.name} header holds invalid characters or invalid Base64"
        if not http_headers.matches(decoded, value):
            return f"Mcp-Param-{param.name} header value {decoded!r} does not match argument {'.'.join(param.path)}"
    return None


class ToolParams:
    """The arguments each of the server's tools mirrors in headers, from the server's own
    ``tools/list`` (asked with ``ask``: a request's bytes to its decoded response), kept
    ``tool_schemas_ttl`` seconds."""

    def __init__(
        self, server: Server, options: HttpOptions, ask: Callable[[bytes], Awaitable[Any]]
    ) -> None:
        self.server = server
        self.options = options
        self._ask = ask
        self._params: dict[str, list[ParamHeader]] = {}
        self._params_at = float("-inf")  # when the tools were last listed
        self._params_tried = float("-inf")
        self._listing: asyncio.Task[None] | None = None

    def known(self, tool: str) -> list[ParamHeader] | None:
        """What of() would return without waiting, if it would."""
        known = self._params.get(tool)
        if known is not None and time.monotonic() - self._params_at < self.options.tool_schemas_ttl:
            return known
        return None

    async def of(self, tool: str) -> list[ParamHeader]:
        """The arguments of ``tool`` mirrored in headers, from the server's
        own tools/list, kept a while."""
        known = self.known(tool)
        if known is not None:
            return known
        now = time.monotonic()
        listing = self._listing
        if (
            listing is None or listing.done()
        ) and now - self._params_tried >= self.options.tool_schemas_retry:
            self._params_tried = now
            listing = self._listing = asyncio.get_running_loop().create_task(self._list())
        if listing is not None and not listing.done():
            await asyncio.shield(listing)
        return self._params.get(tool, [])

    async def _list(self) -> None:
        if not self.server.stateless_versions:
            return
        meta = {
            lifecycle.VERSION_KEY: max(self.server.stateless_versions),
            lifecycle.CAPABILITIES_KEY: {},
            lifecycle.CLIENT_INFO_KEY: _HEADER_CHECK_CLIENT,
        }
        found: dict[str, list[ParamHeader]] = {}
        cursor: Any = None
        for page in range(64):
            params: dict[str, Any] = {"_meta": meta}
            if cursor is not None:
                params["cursor"] = cursor
            answer = await self._ask(
                jsonrpc.request_bytes(page + 1, "tools/list", msgspec.json.encode(params))
            )
            result = answer.get("result") if isinstance(answer, dict) else None
            if not isinstance(result, dict):
                return  # keep what was known
            tools = result.get("tools")
            for tool in tools if isinstance(tools, list) else ():
                if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                    continue
                try:
                    found[tool["name"]] = http_headers.param_headers(tool.get("inputSchema"))
                except InvalidAnnotation as error:
                    logger.warning(
                        "tool %r: %s; its Mcp-Param headers are not checked", tool["name"], error
                    )
            cursor = result.get("nextCursor")
            if not isinstance(cursor, str):
                break
        self._params = found
        self._params_at = time.monotonic()
