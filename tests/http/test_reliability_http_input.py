"""Bad input over HTTP, property-based: POST bodies of random bytes, invalid
UTF-8, truncated and deeply nested JSON, odd messages and batches go straight
into http_app (Streamable HTTP at /mcp, legacy SSE at /messages) while a
legitimate request of the same session is in flight.

The app never raises (an exception out of an ASGI app is a 500 and a
traceback): what is not JSON is 400 with -32700, what is not a JSON-RPC
message (a batch too, on the revisions without batches, and a request with a null
id) 400 with -32600, notifications and responses 202, requests 200 with
their answers, a request reusing the id of the one in flight 400; and the
request in flight still gets exactly its own result.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import asgi
from support.figures import record
from support.reliability_server import ReliabilityServer, reliability_server

from mcpbind._transports.http.client.streamable import SSEParser
from mcpbind.http import http_app

LATEST = "2025-11-25"
ACCEPT = "application/json, text/event-stream"
INIT = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST,
        "capabilities": {},
        "clientInfo": {"name": "http-input", "version": "0"},
    },
}
PROFILE = settings(
    max_examples=250,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SAFE_METHODS = [
    "ping",
    "tools/list",
    "resources/list",
    "prompts/list",
    "unknown/method",
    "notifications/initialized",
    "initialize",
]


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _reject(constant: str) -> Any:
    raise ValueError(constant)


def expected_statuses(body: bytes, in_flight: str) -> set[int]:
    """What the Streamable HTTP app may answer a POST body. Invalid UTF-8 is
    400 where the app reads (id, method), else the session's to answer (as
    -32700 under the request's id): either is right; a body with no request
    in it (202 if valid) is always 400."""
    try:
        return {
            expected_status(json.loads(body.decode("utf-8"), parse_constant=_reject), in_flight)
        }
    except UnicodeDecodeError:
        try:
            status = expected_status(
                json.loads(body.decode("utf-8", "replace"), parse_constant=_reject), in_flight
            )
            return {400} if status == 202 else {400, status}
        except (ValueError, RecursionError):
            return {400}
    except (ValueError, RecursionError):
        return {400}  # -32700


def expected_status(value: Any, in_flight: str) -> int:
    """What the Streamable HTTP app answers a parsed POST body: by JSON-RPC framing alone."""
    if isinstance(value, list) or not isinstance(value, dict):
        return 400  # -32600: no batches from 2025-06-18 on
    items = [value]
    for item in items:
        if "id" in item and not (item["id"] is None or _valid_id(item["id"])):
            return 400
        if "method" in item and not isinstance(item["method"], str):
            return 400
        if item.get("jsonrpc") != "2.0":
            return 400  # not a JSON-RPC message
        if "method" in item:
            if "id" in item and item["id"] is None:
                return 400  # a request's id is never null
        elif item.get("id") is None or ("result" in item) == ("error" in item):
            return 400  # neither a request, a notification nor a response
    requests = [
        i["id"] for i in items if isinstance(i.get("method"), str) and _valid_id(i.get("id"))
    ]
    if any(i.get("method") == "initialize" for i in items) and len(items) > 1:
        return 400
    if not requests:
        return 202
    keys = [(type(r), r) for r in requests]
    if len(set(keys)) != len(keys) or (str, in_flight) in keys:
        return 400  # an id already in use
    return 200


_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
_ids = st.one_of(
    st.integers(-5, 5),
    st.sampled_from(["a", "b", "legit-0"]),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2]))}
    if draw(st.booleans()):
        message["id"] = draw(_ids)
    kind = draw(st.sampled_from(["method", "method", "result", "error", "junk"]))
    if kind == "method":
        message["method"] = draw(st.one_of(st.sampled_from(SAFE_METHODS), st.integers(), st.none()))
        if draw(st.booleans()):
            message["params"] = draw(_json)
    elif kind == "result":
        message["result"] = draw(_json)
    elif kind == "error":
        message["error"] = draw(
            st.one_of(
                st.fixed_dictionaries(
                    {"code": st.integers(-33000, 0), "message": st.text(max_size=5)}
                ),
                _json,
            )
        )
    else:
        message.update(draw(st.dictionaries(st.text(max_size=4), _json, max_size=2)))
    return message


requests = st.builds(
    lambda i, m: {"jsonrpc": "2.0", "id": i, "method": m},
    st.one_of(st.integers(0, 9), st.text(max_size=3)),
    st.sampled_from(SAFE_METHODS),
)
bodies = st.one_of(
    st.binary(max_size=120),
    requests.map(lambda m: json.dumps(m).encode()),
    st.sampled_from(
        ["notifications/initialized", "notifications/roots/list_changed", "notifications/unknown"]
    ).map(lambda m: json.dumps({"jsonrpc": "2.0", "method": m}).encode()),
    st.builds(
        lambda i, r: json.dumps({"jsonrpc": "2.0", "id": i, "result": r}).encode(),
        st.integers(0, 99),
        _json,
    ),
    st.lists(requests, min_size=1, max_size=3).map(lambda b: json.dumps(b).encode()),
    messages().map(lambda m: json.dumps(m).encode()),
    st.lists(messages(), max_size=4).map(lambda b: json.dumps(b).encode()),
    st.tuples(
        messages().map(lambda m: json.dumps(m).encode()), st.floats(0, 1, exclude_max=True)
    ).map(lambda t: t[0][: max(1, int(len(t[0]) * t[1]))]),
    st.builds(
        lambda d, o: (
            ("[" * d + "]" * d)
            if o
            else ('{"jsonrpc":"2.0","id":5,"method":"ping","params":' + "[" * d + "]" * d + "}")
        ).encode(),
        st.integers(10_000, 100_000),
        st.booleans(),
    ),
    st.sampled_from(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
            b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"\xff"}}',
            b'"\xff"',
            b"\xef\xbb\xbf{}",
        ]
    ),
)


def test_bad_post_bodies_never_break_the_app_and_the_request_in_flight_is_answered() -> None:
    tried: Counter[int] = Counter()
    loop = asyncio.new_event_loop()
    handlers = ReliabilityServer()
    app = http_app(reliability_server(handlers))

    async def start() -> tuple[dict[str, str], str]:
        answer = await asgi.request(
            app,
            "POST",
            "/mcp",
            {"accept": ACCEPT, "content-type": "application/json"},
            json.dumps(INIT).encode(),
        )
        session_id = answer.headers["mcp-session-id"]
        headers = {
            "accept": ACCEPT,
            "content-type": "application/json",
            "mcp-session-id": session_id,
            "mcp-protocol-version": LATEST,
        }
        stream = await asgi.request(
            app, "GET", "/sse", {"accept": "text/event-stream"}, leave_after_first_chunk=True
        )
        assert stream.status == 200
        return headers, session_id

    headers, _ = loop.run_until_complete(start())
    number = iter(range(10**9))

    async def exchange(body: bytes, token: str | None = None) -> None:
        token = token or f"legit-{next(number)}"
        call = {
            "jsonrpc": "2.0",
            "id": token,
            "method": "tools/call",
            "params": {"name": "gate", "arguments": {"token": token}},
        }
        legit = asyncio.ensure_future(
            asgi.request(app, "POST", "/mcp", headers, json.dumps(call).encode())
        )
        await asyncio.wait_for(handlers.wait_entered(token), 10)
        answer = await asgi.request(app, "POST", "/mcp", headers, body)
        assert answer.status in expected_statuses(body, token), (body[:200], answer)
        if token == "legit-dup":
            assert answer.json()["error"] == {
                "code": -32600,
                "message": "Invalid request: id 'legit-dup' is already in use",
            }
        if answer.status == 400:
            error = answer.json()["error"]
            assert error["code"] in (-32700, -32600), (body[:200], error)
        tried[answer.status] += 1
        handlers.release(token)
        legit_answer = await asyncio.wait_for(legit, 10)
        replies = [json.loads(e.data) for e in SSEParser().feed(legit_answer.body) if e.data]
        assert [r["result"]["content"][0]["text"] for r in replies if r.get("id") == token] == [
            token
        ], replies
        # The legacy endpoint takes the same bodies: 400 for what is not JSON, else 202 or 404.
        legacy = await asgi.request(
            app,
            "POST",
            "/messages",
            {"content-type": "application/json"},
            body,
            query="session_id=unknown",
        )
        assert legacy.status == 404

    try:

        @PROFILE
        @given(bodies)
        def every_body(body: bytes) -> None:
            loop.run_until_complete(exchange(body))

        every_body()
        # A request reusing the id of the one in flight: 400, and the one in flight is answered.
        duplicate = json.dumps({"jsonrpc": "2.0", "id": "legit-dup", "method": "ping"}).encode()
        loop.run_until_complete(exchange(duplicate, token="legit-dup"))
    finally:
        loop.run_until_complete(app.streamable.close())
        loop.close()
    assert tried[400] > 30 and tried[200] > 10 and tried[202] > 10, tried
    record(
        "bad_input.http_post_bodies",
        {
            "bodies_tried": sum(tried.values()),
            "by_status": {str(k): v for k, v in sorted(tried.items())},
        },
    )
