"""Routing a call to the server that offers it: tools and prompts by the
host's names, resources by URI, completions by prompt or template; the
host's own gate (an approval hook) before each tool call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from .._client.client import ClientSession
from .._core import lifecycle
from ..methods import ProgressCallback
from ._catalogue import Catalogue, HostResource, HostResourceTemplate, HostTool
from ._config import HostConfig
from ._names import SEPARATOR, server_prefix

T = TypeVar("T")

Approve = Callable[[HostTool, Mapping[str, Any]], Awaitable[bool]]
"""Asked before each tool call through the host, with the tool and its
arguments: False refuses the call (:class:`HostError`)."""


class HostError(Exception):
    """A call the host cannot route: an unknown name, an ambiguous URI, a server not connected."""


class Routing:
    """The calls of a :class:`~mcpbind.host.Host` that name what they want, not the server."""

    config: HostConfig
    approve: Approve | None
    _catalogues: dict[str, Catalogue]

    @property
    def resources(self) -> list[HostResource]:
        raise NotImplementedError

    @property
    def resource_templates(self) -> list[HostResourceTemplate]:
        raise NotImplementedError

    def session(self, server: str) -> ClientSession:
        raise NotImplementedError

    async def request(
        self,
        server: str,
        method: str,
        params: Mapping[str, Any],
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        raise NotImplementedError

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call a tool by its host name; the result is the server's CallToolResult."""
        tool = self._find(name, "tool", lambda c: c.tools)
        params: dict[str, Any] = {"name": tool.original}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        if self.approve is not None and not await self.approve(tool, dict(arguments or {})):
            raise HostError(f"the call to {name!r} was not approved")
        return await self.request(tool.server, "tools/call", params, timeout, on_progress)

    async def call_tool_as(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        result_type: type[T],
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> T:
        """Call a tool and decode its ``structuredContent`` into ``result_type`` (a
        msgspec Struct, a dataclass, a TypedDict...). A result with ``isError``,
        or without structured content that fits, raises :class:`HostError`."""
        result = await self.call_tool(name, arguments, timeout=timeout, on_progress=on_progress)
        if result.is_error is True:
            texts = [getattr(block, "text", "") for block in result.content]
            raise HostError(f"tool {name!r} failed: {' '.join(map(str, texts)) or 'no message'}")
        structured = getattr(result, "structured_content", UNSET)
        if structured is UNSET or structured is None:
            raise HostError(f"tool {name!r} returned no structuredContent")
        try:
            return msgspec.convert(structured, result_type)
        except msgspec.ValidationError as error:
            raise HostError(f"tool {name!r}: structuredContent does not fit: {error}") from None

    def stub(self, server: str) -> Any:
        """The generated ``ClientStub`` of the revision ``server`` speaks, over its
        session: every typed call of that revision (``await host.stub("files").list_tools()``)."""
        return lifecycle.revision(self.session(server).protocol_version).package.ClientStub(
            self.session(server)
        )

    async def get_prompt(
        self, name: str, arguments: Mapping[str, str] | None = None, *, timeout: float | None = None
    ) -> Any:
        """Get a prompt by its host name; the server's GetPromptResult."""
        prompt = self._find(name, "prompt", lambda c: c.prompts)
        params: dict[str, Any] = {"name": prompt.original}
        if arguments is not None:
            params["arguments"] = dict(arguments)
        return await self.request(prompt.server, "prompts/get", params, timeout)

    async def read_resource(
        self, uri: str, *, server: str | None = None, timeout: float | None = None
    ) -> Any:
        """Read a resource; the server is the one listing ``uri`` (or a template
        matching it) unless named. The server's ReadResourceResult."""
        return await self.request(
            server or self.server_of(uri), "resources/read", {"uri": uri}, timeout
        )

    async def complete(
        self,
        argument: str,
        value: str,
        *,
        prompt: str | None = None,
        template: str | None = None,
        server: str | None = None,
        context: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> Any:
        """Complete an argument of a prompt (by host name) or of a resource
        template (by URI template, with ``server`` when several offer it)."""
        if (prompt is None) == (template is None):
            raise HostError("complete needs a prompt or a resource template, not both")
        if prompt is not None:
            found = self._find(prompt, "prompt", lambda c: c.prompts)
            target, ref = found.server, {"type": "ref/prompt", "name": found.original}
        else:
            owners = [
                t.server
                for t in self.resource_templates
                if t.uri_template == template and server in (None, t.server)
            ]
            if len(owners) != 1:
                raise HostError(_ownership(f"resource template {template!r}", owners))
            target, ref = owners[0], {"type": "ref/resource", "uri": template}
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": dict(context)}
        return await self.request(target, "completion/complete", params, timeout)

    def server_of(self, uri: str) -> str:
        """The server that lists ``uri``, or else the one with a template matching it."""
        owners = sorted({r.server for r in self.resources if r.uri == uri})
        if not owners:
            owners = sorted({t.server for t in self.resource_templates if t.matches(uri)})
        if len(owners) != 1:
            raise HostError(_ownership(f"resource {uri!r}", owners))
        return owners[0]

    def _find(self, name: str, what: str, entries: Callable[[Catalogue], Mapping[str, Any]]) -> Any:
        for catalogue in self._catalogues.values():
            found = entries(catalogue).get(name)
            if found is not None:
                return found
        # A name under the prefix of a server that is down: say so, rather than "no such tool".
        for server in self.config.names:
            if (
                name.startswith(server_prefix(server) + SEPARATOR)
                and server not in self._catalogues
            ):
                self.session(server)  # raises: not connected, and why
        down = ", ".join(n for n in self.config.names if n not in self._catalogues)
        raise HostError(f"no {what} named {name!r} (servers not connected: {down or 'none'})")


def _ownership(what: str, owners: list[str]) -> str:
    if not owners:
        return f"no connected server offers {what}; name the server"
    return f"{what} is offered by several servers ({', '.join(owners)}); name the server"
