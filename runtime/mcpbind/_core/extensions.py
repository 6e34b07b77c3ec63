"""Extension negotiation (SEP-2133): one question for every extension, on every revision.

A client and a server each declare the extensions they support in their
capabilities, ``capabilities.extensions[<identifier>]``, with a settings
object (MCP Apps: ``{"mimeTypes": ["text/html;profile=mcp-app"]}``). The
2026-07-28 schema names the member; the official SDKs and the MCP Apps hosts
send it the same way in ``initialize`` on the revisions before it, which this
project's generated capabilities keep (see ``capabilities-extensions`` in
schema/corrections.toml). Hosts that predate SEP-2133 declared an extension
under ``capabilities.experimental[<identifier>]``, which is read too.

    settings = negotiated(ctx.client_capabilities, "io.modelcontextprotocol/ui")
    if settings is not None: ...   # the client declared MCP Apps

Declaring is :func:`declare` (used by :class:`~mcpbind._client.client.Client`
``extensions=`` and by the app layer for the extensions it serves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

__all__ = ["declare", "negotiated"]


def negotiated(capabilities: object, extension_id: str) -> Mapping[str, Any] | None:
    """The settings a peer declared for ``extension_id`` in ``capabilities``
    (a generated ``ClientCapabilities`` or ``ServerCapabilities`` of any
    revision, a mapping, or None), or None if it did not declare it.

    An empty settings object is a declaration (``{}``: supported, nothing to
    say); ``false`` or ``null`` in its place is none."""
    for member in ("extensions", "experimental"):
        declared = _member(capabilities, member)
        if isinstance(declared, Mapping):
            settings = declared.get(extension_id)
            if isinstance(settings, Mapping):
                return settings
            if isinstance(settings, msgspec.Struct):
                converted: Mapping[str, Any] = msgspec.to_builtins(settings)
                return converted
    return None


def declare(
    capabilities: Mapping[str, Any], extensions: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``capabilities`` with ``extensions`` (settings by identifier) added to
    its ``extensions`` member; an identifier already there keeps its own."""
    if not extensions:
        return dict(capabilities)
    own = capabilities.get("extensions") or {}
    merged = {key: dict(value) for key, value in extensions.items()}
    return {**capabilities, "extensions": {**merged, **own}}


def _member(capabilities: object, name: str) -> object:
    if capabilities is None:
        return None
    if isinstance(capabilities, msgspec.Struct):
        # Generated capabilities name both members as they are on the wire.
        value = msgspec.structs.asdict(capabilities).get(name)
        return None if value is msgspec.UNSET else value
    if isinstance(capabilities, Mapping):
        return capabilities.get(name)
    return None
