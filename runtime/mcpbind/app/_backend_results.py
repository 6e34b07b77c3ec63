"""A proxied server's answers in the front's terms: what they say of the
backend itself is rewritten or dropped on the way to the front client.

- The URI of a resource link or an embedded resource in a tool result or a
  prompt follows the prefix rule of :mod:`.mount`
  (``demo://resource/dynamic/blob/1`` → ``demo://everything/resource/dynamic/blob/1``),
  so that the front client can read it through the app. A URI a backend gives
  is one of its own, so the rule applies to every one, as to those it lists.
- The backend's identity (``io.modelcontextprotocol/serverInfo``) and the
  task it ran a call as (``io.modelcontextprotocol/related-task``) are dropped
  from a result's ``_meta``: the front's identity is added on the way out, and
  a task of the app carries the app's own id.
- A 2026-07-28 backend logs only for a request that names a level: a
  forwarded request carries the front's (:func:`with_log_level`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .. import codec
from .._core.lifecycle import LOG_LEVEL_KEY, SERVER_INFO_KEY
from ..methods import RequestContext
from ._core_tasks import RELATED_TASK
from ._flavor import Flavor
from ._mount import prefixed_uri

# Result metadata that is the backend's own: its identity, and the task it ran a call as.
BACKEND_META = (SERVER_INFO_KEY, RELATED_TASK)


def linked(prefix: str, block: dict[str, Any]) -> dict[str, Any]:
    """A content block of the backend's (wire form) with the URI of a resource
    link or an embedded resource under the prefix rule."""
    if block.get("type") == "resource_link" and isinstance(block.get("uri"), str):
        return {**block, "uri": prefixed_uri(prefix, block["uri"])}
    resource = block.get("resource")
    if block.get("type") == "resource" and isinstance(resource, dict):
        if isinstance(resource.get("uri"), str):
            return {**block, "resource": {**resource, "uri": prefixed_uri(prefix, resource["uri"])}}
    return block


def own_call_result(prefix: str, result: object, flavor: Flavor) -> object:
    """A backend's CallToolResult as the front revision's, in the front's terms."""
    wire = msgspec.to_builtins(result)
    wire["content"] = [linked(prefix, block) for block in wire.get("content", [])]
    meta = wire.get("_meta")
    if isinstance(meta, dict):
        for key in BACKEND_META:
            meta.pop(key, None)
        if not meta:
            del wire["_meta"]
    return flavor.own_result(codec.convert(wire, type(result)))


def linked_prompt(prefix: str, result: Any) -> Any:
    """A backend's GetPromptResult with its messages' links under the prefix rule."""
    wire = msgspec.to_builtins(result)
    for message in wire["messages"]:
        message["content"] = linked(prefix, message["content"])
    return codec.convert(wire, type(result))


def with_log_level(params: Any, front: RequestContext | None) -> Any:
    """A request's params for a 2026-07-28 backend, naming the log level the
    front request wants (none: the backend sends no log messages for it). The
    client session adds the rest of the request's ``_meta``."""
    level = front.log_level if front is not None else None
    if level is None or params is None:
        return params
    return msgspec.structs.replace(params, meta={LOG_LEVEL_KEY: level})
