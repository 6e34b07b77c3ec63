"""Bad input, property-based: a ServerSession (over the in-memory transport)
takes random bytes, truncated JSON, deep nesting, huge numbers and strings,
wrong types at every params field of every method, duplicate request ids,
responses to unknown ids, notifications carrying ids and batches.

Every input is sent while a legitimate request (the ``gate`` tool) is in
flight. Each input gets exactly the replies JSON-RPC asks for: -32700 for
what is not JSON, -32600 for what is not a request, -32601 for an unknown
method, -32602 naming the field path for params of the wrong type; nothing for
responses to unknown ids and for notifications. The session never ends, and
the in-flight request then gets exactly its own result. What is expected is
worked out from the parsed input by the rules of JSON-RPC 2.0 and MCP (see
:func:`expect_for_value`), and the params types of the generated method
table. A last test sends a sample over a real stdio server process.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import params as P
from support.figures import record
from support.peers import no_leaked_processes  # noqa: F401  (a fixture)
from support.rawstdio import RawServer
from support.reliability_server import ReliabilityServer
from support.reliability_server import __file__ as RELIABILITY_SERVER
from support.transports import Message, memory_pair

from mcpbind import codec
from mcpbind._core import lifecycle
from mcpbind._server.server import Server, ServerSession
from mcpbind_protocol.v2025_11_25 import methods as v2025

CLIENT_REQUESTS = v2025.CLIENT_REQUESTS
NOTIFICATION_METHODS = sorted({*v2025.CLIENT_NOTIFICATIONS, *v2025.SERVER_NOTIFICATIONS})
SERVER_REQUEST_METHODS = sorted(set(v2025.SERVER_REQUESTS) - set(CLIENT_REQUESTS))
LATEST = "2025-11-25"
PARSE, INVALID, NOT_FOUND, PARAMS = -32700, -32600, -32601, -32602
PREFIXES = {
    PARSE: "Parse error",
    INVALID: "Invalid request",
    NOT_FOUND: "Method not found",
    PARAMS: "Invalid params",
}
EXAMPLES = int(os.environ.get("RELIABILITY_EXAMPLES", "400"))
MISSING: Any = object()

PROFILE = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)


# ------------------------------------------------------------------ the server


def _answer_minimal(spec: Any) -> Callable[..., Any]:
    async def handler(self: Any, params: Any, ctx: Any) -> Any:
        return codec.convert(P.minimal(spec.result), spec.result)

    handler.__name__ = spec.handler
    return handler


class _AllMethodsBase(ReliabilityServer):
    async def call_tool(self, params: Any, ctx: Any) -> Any:
        arguments = params.arguments if isinstance(params.arguments, dict) else {}
        if params.name == "echo" or (
            params.name == "gate" and str(arguments.get("token", "")).startswith("legit-")
        ):
            return await super().call_tool(params, ctx)
        spec = CLIENT_REQUESTS["tools/call"]
        return codec.convert(P.minimal(spec.result), spec.result)


# Every client request answered (with the smallest valid result), so that
# every method decodes its params; tools/call keeps the gate and echo tools.
AllMethods: type[_AllMethodsBase] = type(
    "AllMethods",
    (_AllMethodsBase,),
    {
        spec.handler: _answer_minimal(spec)
        for method, spec in CLIENT_REQUESTS.items()
        if method not in ("initialize", "ping", "logging/setLevel", "tools/call")
    },
)


def request(request_id: Any, method: str, params: Any = MISSING) -> Message:
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not MISSING:
        message["params"] = params
    return message


def initialize_params() -> dict[str, Any]:
    return {
        "protocolVersion": LATEST,
        "capabilities": {},
        "clientInfo": {"name": "bad-input", "version": "0"},
    }


# ------------------------------------------------------------------ expectations


@dataclass
class Expect:
    """One reply: ``code`` None for a result; ``ids`` the acceptable ids
    (None: any); ``contains`` a text the error message must hold."""

    code: int | None
    ids: tuple[Any, ...] | None
    contains: str | None = None


def _key(request_id: Any) -> tuple[str, Any]:
    return (type(request_id).__name__, request_id)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _shape_ok(message: Any) -> bool:
    """Whether a JSON value has the members of a JSON-RPC message, with their types."""
    if not isinstance(message, dict):
        return False
    if "jsonrpc" in message and not isinstance(message["jsonrpc"], str):
        return False
    if "id" in message and not (message["id"] is None or _valid_id(message["id"])):
        return False
    if "method" in message and not isinstance(message["method"], str):
        return False
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict) or not isinstance(error.get("message"), str):
            return False
        code = error.get("code")
        if not isinstance(code, int) or isinstance(code, bool):
            return False
    return True


def _ambiguous(value: Any) -> bool:
    """Values where decoders may differ within JSON's leeway: lone surrogates
    (RFC 8259: unpredictable) and numbers out of the double range."""
    if isinstance(value, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    if isinstance(value, float):
        return value in (float("inf"), float("-inf"))
    if isinstance(value, list):
        return any(_ambiguous(v) for v in value)
    if isinstance(value, dict):
        return any(_ambiguous(k) or _ambiguous(v) for k, v in value.items())
    return False


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def expect_for_bytes(data: bytes, in_flight: set[tuple[str, Any]]) -> list[Expect] | None:
    """The replies ``data`` must get; None where JSON's leeway leaves it open."""
    try:
        value = json.loads(data.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return [Expect(PARSE, None)]
    if _ambiguous(value):
        return None
    return expect_for_value(value, in_flight)


def expect_for_value(value: Any, in_flight: set[tuple[str, Any]]) -> list[Expect]:
    """The replies to one parsed JSON value (a message or a batch).

    JSON-RPC 2.0: what is not an object with the members' types is an invalid
    request (id null); a batch is answered message by message, but one
    holding anything else, or nothing, is one invalid request, and so is any
    batch on the revisions that removed them (2025-06-18 on); a request (a
    method and an id) is answered under its id; a notification (no id) and a
    response (result or error, no method) are never answered. MCP: the
    session is initialized, so initialize is refused; ping and every client
    request of the method table decode their params with its types.
    """
    if isinstance(value, list):
        return [
            Expect(INVALID, (None,))
        ]  # the session speaks LATEST: no batches from 2025-06-18 on
    if not _shape_ok(value):
        return [Expect(INVALID, (None,))]
    return _expect_for_message(value, set(in_flight), [])


def _expect_for_message(
    message: dict[str, Any], pending: set[tuple[str, Any]], so_far: list[Expect]
) -> list[Expect]:
    request_id = message.get("id", MISSING)
    has_id = request_id is not MISSING and request_id is not None
    if message.get("jsonrpc", MISSING) != "2.0":
        if "method" not in message and has_id and ("result" in message or "error" in message):
            return []  # a response: the call waiting for it (none here) fails instead
        return [Expect(INVALID, (None if request_id is MISSING else request_id,))]
    if "method" in message:
        method, params = message["method"], message.get("params", MISSING)
        if request_id is MISSING:
            if method == "notifications/cancelled":
                _cancel(params, pending, so_far)
            return []
        if request_id is None:
            return [Expect(INVALID, (None,))]
        if _key(request_id) in pending:
            return [Expect(INVALID, (request_id,), "already in use")]
        return _expect_for_request(request_id, method, params, pending)
    if has_id:
        return (
            [] if ("result" in message or "error" in message) else [Expect(INVALID, (request_id,))]
        )
    if "error" in message:
        return []  # an error for nobody: logged
    return [Expect(INVALID, (None,))]


def _expect_for_request(
    request_id: Any, method: str, params: Any, pending: set[tuple[str, Any]]
) -> list[Expect]:
    if method == "ping":
        ok = params is MISSING or P.valid(params, CLIENT_REQUESTS["ping"].params)
        return [Expect(None if ok else PARAMS, (request_id,))]
    if method == "initialize":
        return [Expect(INVALID, (request_id,), "already initialized")]
    spec = CLIENT_REQUESTS.get(method)
    if spec is None:
        return [Expect(NOT_FOUND, (request_id,))]
    if params is MISSING:
        if spec.params_required:
            return [Expect(PARAMS, (request_id,), f"Invalid params for {method}")]
        params = {}
    if not P.valid(params, spec.params):
        return [Expect(PARAMS, (request_id,), f"Invalid params for {method}")]
    pending.add(_key(request_id))  # answered by a handler task, after the whole batch
    return [Expect(None, (request_id,))]


def _cancel(params: Any, pending: set[tuple[str, Any]], so_far: list[Expect]) -> None:
    """A cancellation of a request of the same batch: its handler never runs."""
    if not isinstance(params, dict) or not _valid_id(params.get("requestId")):
        return
    if "reason" in params and not isinstance(params["reason"], str):
        return
    key = _key(params["requestId"])
    for index, expect in enumerate(so_far):
        if (
            expect.code is None
            and expect.ids is not None
            and _key(expect.ids[0]) == key
            and key in pending
        ):
            del so_far[index]
            pending.discard(key)
            return


# ------------------------------------------------------------------ the harness


class Harness:
    """A ServerSession serving AllMethods over an in-memory pair; the test
    writes raw bytes as the client and reads the replies."""

    def __init__(self, initialized: bool = True) -> None:
        self.loop = asyncio.new_event_loop()
        self.initialized = initialized
        self.inputs: Counter[str] = Counter()
        self.replies = 0
        self.legit_answered = 0
        self._run(self._start())

    def _run(self, coroutine: Any, timeout: float = 30.0) -> Any:
        return self.loop.run_until_complete(asyncio.wait_for(coroutine, timeout))

    async def _start(self) -> None:
        self.handlers = AllMethods()
        self.wire, end = memory_pair("peer", "server")
        self.session = ServerSession(Server(self.handlers, name="bad-input", version="0"), end)
        self.session.start()
        if self.initialized:
            self.wire.send(request("init", "initialize", initialize_params()))
            answer = await self.wire.receive()
            assert answer is not None and "result" in answer, answer
            self.wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        self._run(self.session.close())
        self.loop.close()

    @property
    def total(self) -> int:
        return sum(self.inputs.values())

    def check(
        self, kind: str, data: bytes | Message, expected: list[Expect] | None, legit: bool = True
    ) -> list[Message]:
        """Send ``data`` (with a legitimate request in flight, unless told
        otherwise) and check the replies; the replies to ``data``."""
        raw = data if isinstance(data, bytes) else json.dumps(data).encode()
        if expected is None and not isinstance(data, bytes):
            expected = expect_for_value(data, set())
        return self._run(self._exchange(kind, raw, expected, legit))  # type: ignore[no-any-return]

    async def _exchange(
        self, kind: str, data: bytes, expected: list[Expect] | None, legit: bool
    ) -> list[Message]:
        self.inputs[kind] += 1
        number = self.total
        legit_id = f"legit-{number}" if legit else None
        if legit_id is not None:
            self.wire.send(
                request(legit_id, "tools/call", {"name": "gate", "arguments": {"token": legit_id}})
            )
            await asyncio.wait_for(self.handlers.wait_entered(legit_id), 10)
        self.wire.send(data)
        first = f"sentinel-{number}"
        self.wire.send(request(first, "ping"))
        seen = await self._read_until(lambda got: first in _ids(got), data)
        if legit_id is not None:
            self.handlers.release(legit_id)
        results_due = [e.ids[0] for e in (expected or []) if e.code is None and e.ids]
        seen += await self._read_until(
            lambda got: (legit_id is None or legit_id in _ids(seen + got))
            and all(_counted(due, seen + got) for due in results_due),
            data,
        )
        last = f"closing-{number}"
        self.wire.send(request(last, "ping"))
        seen += await self._read_until(lambda got: last in _ids(got), data)
        assert not self.session.is_closed, f"the session ended after {data[:200]!r}"

        replies = [m for m in seen if m.get("id") not in (first, last)]
        assert sorted(m["id"] for m in seen if m.get("id") in (first, last)) == sorted(
            [first, last]
        )
        if legit_id is not None:
            legit_results = [m for m in replies if m.get("id") == legit_id and "result" in m]
            assert (
                len(legit_results) == 1
            ), f"the in-flight request got {legit_results} after {data[:200]!r}"
            assert legit_results[0]["result"]["content"][0]["text"] == legit_id
            replies.remove(legit_results[0])
            self.legit_answered += 1
        self.replies += len(replies)
        for reply in replies:
            assert reply.get("jsonrpc") == "2.0" and ("result" in reply) != (
                "error" in reply
            ), reply
            if "error" in reply:
                code, message = reply["error"]["code"], reply["error"]["message"]
                assert message.startswith(PREFIXES[code]), reply
        if expected is not None:
            _match(replies, expected, data)
        return replies

    async def _read_until(
        self, done: Callable[[list[Message]], bool], data: bytes
    ) -> list[Message]:
        got: list[Message] = []
        try:
            while not done(got):
                message = await self.wire.receive(timeout=10)
                assert message is not None, "the session closed the connection"
                got.append(message)
        except asyncio.TimeoutError:
            raise AssertionError(f"no complete answer to {data[:300]!r}; got {got}") from None
        return got


def _ids(messages: list[Message]) -> list[Any]:
    return [m.get("id") for m in messages if "method" not in m]


def _counted(request_id: Any, messages: list[Message]) -> bool:
    return any(
        m.get("id") == request_id and type(m.get("id")) is type(request_id) for m in messages
    )


def _match(replies: list[Message], expected: list[Expect], data: bytes) -> None:
    left = list(replies)
    for expect in expected:
        for reply in left:
            code = reply["error"]["code"] if "error" in reply else None
            rid = reply.get("id")
            if code != expect.code:
                continue
            if expect.ids is not None and not any(
                rid == i and type(rid) is type(i) for i in expect.ids
            ):
                continue
            if expect.contains is not None and expect.contains not in reply["error"]["message"]:
                continue
            left.remove(reply)
            break
        else:
            raise AssertionError(f"{data[:300]!r}: expected {expect}, got {replies}")
    assert not left, f"{data[:300]!r}: unexpected replies {left} (expected {expected})"


@pytest.fixture(scope="module")
def harness() -> Iterator[Harness]:
    harness = Harness()
    yield harness
    record(
        "bad_input.in_memory_session",
        {
            "inputs_tried": harness.total,
            "inputs_by_kind": dict(sorted(harness.inputs.items())),
            "replies_checked": harness.replies,
            "in_flight_requests_answered": harness.legit_answered,
        },
    )
    harness.close()


# ------------------------------------------------------------------ strategies

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**20), max_value=10**20),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)
json_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
valid_ids = st.one_of(
    st.integers(min_value=-(10**20), max_value=10**20), st.text(alphabet="abcxyz0123_", max_size=8)
)
any_ids = st.one_of(
    valid_ids,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)
methods = st.one_of(
    st.sampled_from(sorted(CLIENT_REQUESTS)),
    st.sampled_from(NOTIFICATION_METHODS + SERVER_REQUEST_METHODS),
    st.sampled_from(["unknown/method", "", "tools/call ", "TOOLS/CALL", "rpc.discover", "tools"]),
    st.text(max_size=10),
)


@st.composite
def params_for(draw: st.DrawFn, method: str) -> Any:
    spec = CLIENT_REQUESTS.get(method)
    choice = draw(st.sampled_from(["minimal", "minimal", "wrong", "wrong", "missing", "random"]))
    if spec is None or choice == "random":
        return draw(json_values)
    if choice == "missing":
        return MISSING
    baseline = P.minimal(spec.params)
    fields = list(P.fields(spec.params))
    if choice == "minimal" or not fields:
        return baseline
    field = draw(st.sampled_from(fields))
    wrong = P.wrong_values(field.type)
    return P.with_value(baseline, field, draw(st.sampled_from(wrong))) if wrong else baseline


@st.composite
def messages(draw: st.DrawFn, ids: st.SearchStrategy[Any] = any_ids) -> Message:
    message: Message = {}
    version = draw(st.sampled_from(["2.0"] * 8 + ["1.0", "", MISSING, 2.0, None]))
    if version is not MISSING:
        message["jsonrpc"] = version
    shape = draw(st.sampled_from(["request"] * 5 + ["notification", "response", "error", "other"]))
    if shape in ("request", "response", "error") or draw(st.booleans()):
        message["id"] = draw(ids)
    if shape in ("request", "notification"):
        method = draw(methods)
        message["method"] = method
        params = draw(params_for(method))
        if params is not MISSING:
            message["params"] = params
    elif shape == "response":
        message["result"] = draw(json_values)
    elif shape == "error":
        message["error"] = draw(
            st.one_of(
                st.fixed_dictionaries(
                    {"code": st.integers(-33000, 1000), "message": st.text(max_size=8)}
                ),
                json_values,
            )
        )
    else:
        extra = draw(
            st.dictionaries(
                st.sampled_from(["method", "params", "result", "error", "x"]),
                json_values,
                max_size=3,
            )
        )
        message.update(extra)
    return message


# ------------------------------------------------------------------ the properties


def test_random_bytes(harness: Harness) -> None:
    jsonish = st.text(alphabet='{}[]",:0123456789.-eE+tfrualsn \\u', max_size=48).map(str.encode)

    @PROFILE
    @given(st.one_of(st.binary(max_size=200), jsonish))
    def check(data: bytes) -> None:
        harness.check("random bytes", data, expect_for_bytes(data, set()))

    check()


def test_truncated_json(harness: Harness) -> None:
    @PROFILE
    @given(
        messages(ids=valid_ids).filter(lambda m: "method" in m),
        st.floats(0.0, 1.0, exclude_max=True),
    )
    def check(message: Message, where: float) -> None:
        data = json.dumps(message).encode()
        cut = data[: max(1, int(len(data) * where))]
        rid = message.get("id", None)
        harness.check(
            "truncated JSON", cut, [Expect(PARSE, (None, rid) if _valid_id(rid) else (None,))]
        )

    check()


def test_structured_messages(harness: Harness) -> None:
    @settings(PROFILE, max_examples=EXAMPLES * 3)
    @given(messages())
    def check(message: Message) -> None:
        harness.check("structured messages", message, None)

    check()


def test_batches(harness: Harness) -> None:
    small_ids = st.sampled_from([1, 2, "a", "b"])  # collisions: duplicate ids inside a batch

    @PROFILE
    @given(st.lists(st.one_of(messages(ids=small_ids), messages(), json_values), max_size=5))
    def check(batch: list[Any]) -> None:
        harness.check("batches", batch, None)  # type: ignore[arg-type]

    check()


def test_deep_nesting(harness: Harness) -> None:
    @settings(PROFILE, max_examples=max(EXAMPLES // 4, 10))
    @given(
        st.integers(10_000, 100_000),  # beyond any recursion limit (hypothesis raises it by 2,000)
        st.sampled_from(["[", "{"]),
        st.sampled_from(["top", "params", "id", "batch", "result", "notification"]),
    )
    def check(depth: int, opener: str, where: str) -> None:
        nest = (
            ("[" * depth + "]" * depth) if opener == "[" else ('{"a":' * depth + "1" + "}" * depth)
        )
        request_id = depth
        expected = [Expect(PARSE, (None,), "nested too deeply")]
        if where == "top":
            text = nest
        elif where == "params":
            text = f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{nest}}}}}}}'
            expected = [Expect(PARSE, (request_id,), "nested too deeply")]
        elif where == "id":
            text = f'{{"jsonrpc":"2.0","id":{nest},"method":"ping"}}'
        elif where == "batch":
            text = f'[{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":{nest}}}]'
        elif where == "result":
            text = f'{{"jsonrpc":"2.0","id":{request_id},"result":{nest}}}'
            expected = []  # a response to an unknown id, unreadable or not, is dropped
        else:
            text = f'{{"jsonrpc":"2.0","method":"notifications/progress","params":{nest}}}'
        harness.check("deep nesting", text.encode(), expected)

    check()
    # The issue's own figure: 100,000 nested arrays, at the top and inside params.
    harness.check("deep nesting", b"[" * 100_000 + b"]" * 100_000, [Expect(PARSE, (None,))])
    inside = (
        b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}"
    )
    harness.check("deep nesting", inside, [Expect(PARSE, ("deep",), "nested too deeply")])


def test_huge_numbers(harness: Harness) -> None:
    @PROFILE
    @given(
        st.integers(min_value=10**19, max_value=10**4000)
        | st.integers(max_value=-(10**19), min_value=-(10**4000))
    )
    def big_ids(number: int) -> None:
        harness.check("huge numbers", request(number, "ping"), [Expect(None, (number,))])

    big_ids()
    cases: list[tuple[bytes, list[Expect]]] = [
        # Beyond Python's (and msgspec's) 4300 digits: an id the decoder refuses as out of range.
        (
            b'{"jsonrpc":"2.0","id":' + b"9" * 5000 + b',"method":"ping"}',
            [Expect(INVALID, (None,))],
        ),
        (b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}', [Expect(INVALID, (None,))]),
        (b'{"jsonrpc":"2.0","id":-1e-400,"method":"ping"}', [Expect(INVALID, (None,))]),
        (
            b'{"jsonrpc":"2.0","id":"n1","method":"tools/call","params":{"name":"echo","arguments":{"text":1e400}}}',
            [Expect(PARAMS, ("n1",), "`$.arguments[...]`")],
        ),
        (
            b'{"jsonrpc":"2.0","id":"n2","method":"tools/call","params":{"name":"echo","arguments":{"text":'
            + b"7" * 4000
            + b"}}}",
            [Expect(None, ("n2",))],
        ),
        (
            b'{"jsonrpc":"2.0","id":"n3","method":"tools/call","params":{"name":"echo","arguments":{"text":1.7976931348623157e308}}}',
            [Expect(None, ("n3",))],
        ),
        (
            b'{"jsonrpc":"2.0","id":"n4","method":"tools/call","params":{"name":"x","task":{"ttl":'
            + b"9" * 30
            + b"}}}",
            [Expect(None, ("n4",))],
        ),
        (
            b'{"jsonrpc":"2.0","id":"n5","method":"tools/call","params":{"name":"x","task":{"ttl":1e400}}}',
            [Expect(PARAMS, ("n5",), "`$.task.ttl`")],
        ),
        (b'{"jsonrpc":"2.0","id":77,"result":{"a":1e400}}', []),
        (b'{"jsonrpc":"2.0","id":"n6","error":{"code":' + b"9" * 40 + b',"message":"m"}}', []),
    ]
    for data, expected in cases:
        harness.check("huge numbers", data, expected)


def test_huge_strings(harness: Harness) -> None:
    for size in (64 * 1024, 1024 * 1024, 4 * 1024 * 1024):
        text = "é" * (size // 2)  # two bytes each in UTF-8
        echoed = harness.check(
            "huge strings",
            request(f"s{size}", "tools/call", {"name": "echo", "arguments": {"text": text}}),
            [Expect(None, (f"s{size}",))],
        )
        assert echoed[0]["result"]["content"][0]["text"] == text
        harness.check("huge strings", request("m" * size, "ping"), [Expect(None, ("m" * size,))])
        harness.check(
            "huge strings", request(f"u{size}", "x" * size), [Expect(NOT_FOUND, (f"u{size}",))]
        )
        harness.check(
            "huge strings",
            request(f"p{size}", "tools/call", {"name": 5, "pad": "y" * size}),
            [Expect(PARAMS, (f"p{size}",), "`$.name`")],
        )


def test_wrong_types_at_every_params_field_of_every_method(harness: Harness) -> None:
    """Derived from the generated method table: for each method, each field
    of its params type (nested ones too), each JSON kind the field does not
    accept is -32602 naming the field's path; so is each required field left
    out, and params that are not an object. The baseline (required fields
    only) is answered with a result."""
    fresh = Harness(
        initialized=False
    )  # initialize is only decoded before the session is initialized
    tried = Counter[str]()
    try:
        for method, spec in sorted(CLIENT_REQUESTS.items()):
            target, legit = (fresh, False) if method == "initialize" else (harness, True)
            baseline = P.minimal(spec.params)
            number = iter(range(10**6))

            def send(params: Any, expected: list[Expect]) -> None:
                rid = f"{method}#{next(number)}"
                target.check(
                    "params: wrong types",
                    request(rid, method, params),
                    [Expect(e.code, (rid,), e.contains) for e in expected],
                    legit,
                )
                tried[method] += 1

            if method != "initialize":
                send(baseline, [Expect(None, None)])
            for field in P.fields(spec.params):
                for wrong in P.wrong_values(field.type):
                    send(
                        P.with_value(baseline, field, wrong),
                        [Expect(PARAMS, None, f"`{field.dotted}`")],
                    )
                if field.required:
                    missing = P.without(baseline, field)
                    send(missing, [Expect(PARAMS, None, f"`{field.path[-1]}`")])
            for not_an_object in ([baseline], "params", 3, True):
                send(not_an_object, [Expect(PARAMS, None, f"Invalid params for {method}")])
        # After all that, the fresh session still initializes.
        fresh.check(
            "params: wrong types",
            request("init", "initialize", initialize_params()),
            [Expect(None, ("init",))],
            False,
        )
        harness.inputs.update(fresh.inputs)
    finally:
        fresh.close()
    record(
        "bad_input.params_fields",
        {"methods": len(tried), "inputs_tried": sum(tried.values()), "by_method": dict(tried)},
    )


def test_duplicate_request_ids(harness: Harness) -> None:
    """A request reusing the id of the one in flight is refused under that
    id; the one in flight still gets its own result, once."""

    @PROFILE
    @given(st.sampled_from(sorted(CLIENT_REQUESTS)))
    def check(method: str) -> None:
        legit_id = (
            f"legit-{harness.total + 1}"  # the id the next exchange gives its in-flight request
        )
        params = P.minimal(CLIENT_REQUESTS[method].params)
        harness.check(
            "duplicate ids",
            request(legit_id, method, params),
            [Expect(INVALID, (legit_id,), "already in use")],
        )

    check()


def test_responses_to_unknown_ids_are_ignored(harness: Harness) -> None:
    @PROFILE
    @given(
        valid_ids,
        st.one_of(
            json_values.map(lambda v: {"result": v}),
            st.builds(
                lambda c, m: {"error": {"code": c, "message": m}},
                st.integers(-33000, 0),
                st.text(max_size=10),
            ),
        ),
    )
    def check(request_id: Any, outcome: dict[str, Any]) -> None:
        harness.check(
            "responses to unknown ids", {"jsonrpc": "2.0", "id": request_id, **outcome}, []
        )

    check()


def test_notification_methods_sent_as_requests(harness: Harness) -> None:
    """A notification method with an id is a request for a method the server
    does not have: -32601, and nothing the notification would do happens."""
    for method in NOTIFICATION_METHODS:
        for request_id, params in (
            (1, MISSING),
            ("n", {}),
            (2, {"requestId": "legit-0", "progressToken": 1, "progress": 1}),
        ):
            harness.check(
                "notifications with ids",
                request(request_id, method, params),
                [Expect(NOT_FOUND, (request_id,), method)],
            )


# ------------------------------------------------------------------ a real process


@pytest.mark.usefixtures("no_leaked_processes")
def test_a_sample_over_a_stdio_server_process() -> None:
    """The same kinds of input, one per line, to tests/support/reliability_server.py
    over stdio (the example server's tools plus gate/open), each with a
    legitimate gated call in flight that a later ``open`` call releases."""
    import random

    rng = random.Random(7)
    samples: list[bytes] = []
    for _ in range(40):
        samples.append(
            bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80))).replace(b"\n", b" ")
        )
    implemented = ReliabilityServer()
    for method in sorted(CLIENT_REQUESTS):
        spec = CLIENT_REQUESTS[method]
        if method not in ("initialize", "ping", "logging/setLevel") and not lifecycle.overridden(
            implemented, "ServerHandlers", spec.handler
        ):
            continue  # the example server answers -32601 before looking at the params
        for field in list(P.fields(spec.params))[:4]:
            for wrong in P.wrong_values(field.type)[:2]:
                samples.append(
                    json.dumps(
                        request(
                            f"w-{len(samples)}",
                            method,
                            P.with_value(P.minimal(spec.params), field, wrong),
                        )
                    ).encode()
                )
    samples += [
        b'{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":'
        + b"[" * 100_000
        + b"]" * 100_000
        + b"}",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"jsonrpc":"2.0","id":"t1","method":"tools/call","params":{"name":"ec',
        json.dumps(
            [
                request("b1", "ping"),
                request("b1", "tools/list"),
                {"jsonrpc": "2.0", "id": 99, "result": {}},
            ]
        ).encode(),
        json.dumps({"jsonrpc": "2.0", "id": 12345, "result": {"late": True}}).encode(),
        json.dumps(request("n1", "notifications/initialized")).encode(),
        b'{"jsonrpc":"2.0","id":"bad-utf8","method":"tools/call","params":{"name":"\xff"}}',
    ]

    async def scenario() -> dict[str, Any]:
        server = await RawServer.start([sys.executable, str(RELIABILITY_SERVER), "stdio"])
        try:
            await server.initialize()
            checked = 0
            for index, data in enumerate(samples):
                legit = f"legit-{index}"
                await server.send(
                    request(legit, "tools/call", {"name": "gate", "arguments": {"token": legit}})
                )
                await server.send(data)
                await server.send(
                    request(
                        f"open-{index}",
                        "tools/call",
                        {"name": "open", "arguments": {"token": legit}},
                    )
                )
                await server.send(request(f"sentinel-{index}", "ping"))
                seen: list[Message] = []
                while not (
                    _counted(f"sentinel-{index}", seen)
                    and _counted(legit, seen)
                    and _counted(f"open-{index}", seen)
                ):
                    seen.append(await server.receive(timeout=20))
                legit_replies = [m for m in seen if m.get("id") == legit]
                assert (
                    len(legit_replies) == 1
                    and legit_replies[0]["result"]["content"][0]["text"] == legit
                ), (data[:100], seen)
                expected = (
                    expect_for_bytes(data, {_key(legit)})
                    if not data.startswith(b'{"jsonrpc":"2.0","id":"deep"')
                    else [Expect(PARSE, ("deep",))]
                )
                if data == b"[" * 100_000 + b"]" * 100_000:
                    expected = [Expect(PARSE, (None,))]
                if b"\xff" in data and data.startswith(b'{"jsonrpc":"2.0","id":"bad-utf8"'):
                    expected = [Expect(PARSE, ("bad-utf8",), "UTF-8")]
                if data.startswith(b'{"jsonrpc":"2.0","id":"t1"'):
                    expected = [Expect(PARSE, ("t1", None))]
                if not data.strip():
                    expected = []  # a blank line is no message at all on stdio
                replies = [
                    m
                    for m in seen
                    if m.get("id") not in (legit, f"open-{index}", f"sentinel-{index}")
                ]
                if expected is not None:
                    _match(replies, expected, data)
                    checked += 1
            assert server.process.returncode is None, "the server process ended"
            return {"inputs_tried": len(samples), "replies_matched_to_expectations": checked}
        finally:
            assert await server.close() == 0

    record("bad_input.stdio_process", asyncio.run(asyncio.wait_for(scenario(), 120)))
