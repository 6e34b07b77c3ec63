"""A table-driven Router for sessions under test, and test-only methods."""

from __future__ import annotations

from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from mcpbind._core import jsonrpc
from mcpbind._core.jsonrpc import McpError
from mcpbind._core.session import Handler, Route
from mcpbind.methods import MethodSpec


class TableRouter:
    """Routes the methods registered with :meth:`add`; refuses the rest with -32601."""

    stateless = False

    def __init__(self) -> None:
        self.requests: dict[str, Route] = {}
        self.notifications: dict[str, Route] = {}
        self.checked: list[str] = []

    def add(self, spec: MethodSpec[Any, Any], handler: Handler) -> None:
        table = self.requests if spec.kind == "request" else self.notifications
        table[spec.method] = (spec, handler)

    def route_request(self, method: str, params: msgspec.Raw | UnsetType) -> Route:
        route = self.requests.get(method)
        if route is None:
            raise McpError(jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
        return route

    def route_notification(self, method: str) -> Route | None:
        return self.notifications.get(method)

    def log_level_allows(self, level: str) -> bool:
        return True

    def check_outgoing(self, spec: MethodSpec[Any, Any], params: Any) -> None:
        self.checked.append(spec.method)


class Work(msgspec.Struct, omit_defaults=True):
    """Params of ``test/work``: answered with ``value * 2`` unless told otherwise."""

    value: int
    steps: int = 0
    block: bool = False
    error_code: int = 0
    crash: bool = False
    meta: dict[str, Any] | UnsetType = msgspec.field(name="_meta", default=UNSET)


class Done(msgspec.Struct):
    value: int
    by: str


class Note(msgspec.Struct):
    text: str


WORK: MethodSpec[Work, Done] = MethodSpec(
    method="test/work",
    direction="both",
    kind="request",
    params=Work,
    result=Done,
    params_required=True,
    handler="work",
)
NOTE: MethodSpec[Note, None] = MethodSpec(
    method="test/note",
    direction="both",
    kind="notification",
    params=Note,
    result=None,
    params_required=True,
    handler="on_note",
)
UNROUTED: MethodSpec[Work, Done] = MethodSpec(
    method="test/unrouted",
    direction="both",
    kind="request",
    params=Work,
    result=Done,
    params_required=True,
    handler="unrouted",
)
