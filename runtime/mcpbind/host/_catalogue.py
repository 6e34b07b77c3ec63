"""A host's catalogue: each server's tools, prompts, resources and resource
templates, under the host's names (:mod:`.names`), as last listed."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from msgspec import UNSET

from .. import codec
from .._client.client import ClientSession
from .._core import lifecycle
from ._names import qualified_names

KINDS = ("tools", "resources", "resource_templates", "prompts")

# kind: (list method, result field, capability)
LISTS = {
    "tools": ("tools/list", "tools", "tools"),
    "resources": ("resources/list", "resources", "resources"),
    "resource_templates": ("resources/templates/list", "resource_templates", "resources"),
    "prompts": ("prompts/list", "prompts", "prompts"),
}


@dataclass(frozen=True)
class HostTool:
    """A tool in the host's catalogue: ``name`` is the host's, ``tool`` the server's own."""

    name: str
    server: str
    tool: Any

    @property
    def original(self) -> str:
        return str(self.tool.name)


@dataclass(frozen=True)
class HostPrompt:
    name: str
    server: str
    prompt: Any

    @property
    def original(self) -> str:
        return str(self.prompt.name)


@dataclass(frozen=True)
class HostResource:
    server: str
    resource: Any

    @property
    def uri(self) -> str:
        return str(self.resource.uri)


@dataclass(frozen=True)
class HostResourceTemplate:
    server: str
    template: Any

    @property
    def uri_template(self) -> str:
        return str(self.template.uri_template)

    def matches(self, uri: str) -> bool:
        return _template_pattern(self.uri_template).fullmatch(uri) is not None


@dataclass
class Catalogue:
    """One server's entries, by kind."""

    tools: dict[str, HostTool] = field(default_factory=dict)
    prompts: dict[str, HostPrompt] = field(default_factory=dict)
    resources: list[HostResource] = field(default_factory=list)
    resource_templates: list[HostResourceTemplate] = field(default_factory=list)

    def fill(self, server: str, kind: str, items: list[Any]) -> None:
        """Replace ``kind`` with ``server``'s listing ``items``."""
        if kind == "tools":
            names = qualified_names(server, [item.name for item in items])
            self.tools = {name: HostTool(name, server, item) for name, item in zip(names, items)}
        elif kind == "prompts":
            names = qualified_names(server, [item.name for item in items])
            self.prompts = {
                name: HostPrompt(name, server, item) for name, item in zip(names, items)
            }
        elif kind == "resources":
            self.resources = [HostResource(server, item) for item in items]
        else:
            self.resource_templates = [HostResourceTemplate(server, item) for item in items]


async def list_kind(session: ClientSession, kind: str) -> list[Any]:
    """Every item of ``kind`` the server offers (none without the capability)."""
    method, attribute, capability = LISTS[kind]
    if not lifecycle.has_capability(session.server_capabilities, (capability,)):
        return []
    return await _list_all(session, method, attribute)


async def _list_all(session: ClientSession, method: str, attribute: str) -> list[Any]:
    """Every page of a list method."""
    spec = lifecycle.revision(session.protocol_version).all_methods[method]
    items: list[Any] = []
    cursor: Any = UNSET
    while True:
        params = codec.convert({} if cursor is UNSET else {"cursor": cursor}, spec.params)
        page = await session.request(spec, params)
        items.extend(getattr(page, attribute))
        cursor = page.next_cursor
        if not isinstance(cursor, str) or not cursor:
            return items


def _template_pattern(template: str) -> re.Pattern[str]:
    """A URI template (RFC 6570) as a pattern: {var} matches one path segment,
    {+var}, {#var} and the other operators anything."""
    parts = re.split(r"(\{[^}]*\})", template)
    pattern = "".join(
        (
            (".*" if part[1:2] and part[1] in "+#./;?&" else "[^/]*")
            if part.startswith("{")
            else re.escape(part)
        )
        for part in parts
    )
    return re.compile(pattern)
