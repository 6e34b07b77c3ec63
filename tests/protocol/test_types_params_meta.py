"""Every request's and notification's params keep ``_meta`` on every revision.

"The `_meta` property/parameter is reserved by MCP to allow clients and servers
to attach additional metadata to their interactions" (basic/index, 2025-06-18);
the TypeScript types of 2024-11-05 to 2025-06-18 give it to every request and
notification through their base, which the published JSON Schema copied into
none of them. Decoded with the generated types, it must survive: the progress
token, and the W3C trace context OpenTelemetry's MCP conventions carry there."""

from __future__ import annotations

import msgspec
import pytest

from mcpbind import codec
from mcpbind._core import lifecycle

TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
# 2026-07-28 requests carry their envelope in _meta, checked where it is read.
ALL = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


@pytest.mark.parametrize("version", ALL)
@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("tools/call", {"name": "echo"}),
        ("resources/read", {"uri": "note://1"}),
        ("tools/list", {}),
    ],
)
def test_request_params_keep_every_meta_key(
    version: str, method: str, params: dict[str, str]
) -> None:
    spec = lifecycle.revision(version).all_methods[method]
    meta = {"traceparent": TRACEPARENT, "tracestate": "a=1", "progressToken": 7}
    decoded = codec.decode(codec.encode({**params, "_meta": meta}), spec.params)
    assert decoded.meta["traceparent"] == TRACEPARENT
    assert decoded.meta["tracestate"] == "a=1"
    again = msgspec.json.decode(codec.encode(decoded))
    assert again["_meta"]["traceparent"] == TRACEPARENT


@pytest.mark.parametrize("version", ALL)
def test_notification_params_keep_their_meta(version: str) -> None:
    spec = lifecycle.revision(version).all_methods["notifications/message"]
    raw = codec.encode({"level": "info", "data": "x", "_meta": {"traceparent": TRACEPARENT}})
    decoded = codec.decode(raw, spec.params)
    assert decoded.meta["traceparent"] == TRACEPARENT
