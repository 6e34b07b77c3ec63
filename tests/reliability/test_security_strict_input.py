"""Strict input: what is not a message of the revision spoken is refused,
whatever its spelling.

* JSON-RPC batches on the revisions that removed them (2025-06-18 on): -32600
  (HTTP 400), over Streamable HTTP (in a session, stateless, and 2026-07-28)
  and over stdio, before any handler starts; the older revisions still
  answer them.
* A POST of a request with a null id, or of anything that is not a JSON-RPC
  message: 400 and -32600, never 202.
* ``Last-Event-ID`` values that are not ASCII digits of bounded length: 400,
  never 500.
* Peer text in log lines: quoted (no raw line breaks) and truncated.
* ``requestState``: only canonical base64url opens; keys under 32 bytes are
  refused; ``encrypt_state`` hides the state from the client; a state sealed
  for one principal does not open for another.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import logging
import sys
from collections import Counter
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import asgi
from support.figures import record
from support.http_servers import run
from support.rawstdio import RawServer
from support.reliability_server import ReliabilityServer, reliability_server
from support.transports import MemoryTransport, memory_pair
from typing_extensions import override

from mcpbind._core import jsonrpc
from mcpbind._core.limits import local_client
from mcpbind._core.logsafe import LIMIT, quoted
from mcpbind._core.request_state import StateError, StateSealer
from mcpbind._core.wire import RequestExtra
from mcpbind._server.server import Server, ServerSession
from mcpbind._transports.http.server.streamable import StreamableHTTPApp
from mcpbind.auth._principal import Principal
from mcpbind.http import http_app
from mcpbind.methods import RequestContext
from mcpbind_protocol import v2026_07_28 as m

RELIABILITY_SERVER = Path(__file__).resolve().parents[1] / "support" / "reliability_server.py"
ACCEPT = "application/json, text/event-stream"
PROFILE = settings(
    max_examples=150,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
WITH_BATCHES = ("2024-11-05", "2025-03-26")
WITHOUT_BATCHES = ("2025-06-18", "2025-11-25")


def init(version: str) -> bytes:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "strict", "version": "0"},
    }
    return json.dumps(
        {"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": params}
    ).encode()


def post_headers(session_id: str | None = None, version: str | None = None) -> dict[str, str]:
    headers = {"accept": ACCEPT, "content-type": "application/json"}
    if session_id is not None:
        headers["mcp-session-id"] = session_id
    if version is not None:
        headers["mcp-protocol-version"] = version
    return headers


def calls(count: int, start: int = 0) -> list[dict[str, Any]]:
    return [
        {
            "jsonrpc": "2.0",
            "id": start + i,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": str(i)}},
        }
        for i in range(count)
    ]


async def open_session(app: Any, version: str) -> str:
    answer = await asgi.request(app, "POST", "/mcp", post_headers(), init(version))
    assert answer.status == 200, answer
    session_id: str = answer.headers["mcp-session-id"]
    done = await asgi.request(
        app,
        "POST",
        "/mcp",
        post_headers(session_id, version),
        b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
    )
    assert done.status == 202
    return session_id


class Counting(ReliabilityServer):
    """Counts the tool calls that reached a handler."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    @override
    async def call_tool(self, params: Any, ctx: RequestContext) -> Any:
        self.calls += 1
        return await super().call_tool(params, ctx)


# ------------------------------------------------------------------ batches over HTTP


def test_batches_are_refused_over_http_on_the_revisions_without_them() -> None:
    """Batches of 1, 2 and 500 tool calls, in a session of each handshake
    revision, in the stateless mode (by header) and at 2026-07-28: 400 and
    -32600 from 2025-06-18 on with no handler started; answered before."""
    tried: Counter[str] = Counter()

    async def scenario() -> None:
        handlers = Counting()
        app = http_app(reliability_server(handlers))
        stateless = StreamableHTTPApp(
            reliability_server(handlers), stateless=True, json_response=True
        )
        try:
            for version in (*WITH_BATCHES, *WITHOUT_BATCHES):
                session_id = await open_session(app, version)
                for size in (1, 2, 500):
                    before = handlers.calls
                    body = json.dumps(calls(size, 1000 * size)).encode()
                    answer = await asgi.request(
                        app, "POST", "/mcp", post_headers(session_id, version), body
                    )
                    # The older revisions may name no header: the session's revision decides.
                    bare = await asgi.request(
                        app,
                        "POST",
                        "/mcp",
                        post_headers(session_id),
                        json.dumps(calls(size, 5000 + size)).encode(),
                    )
                    state = await asgi.request(
                        stateless, "POST", "/mcp", post_headers(None, version), body
                    )
                    if version in WITH_BATCHES:
                        assert answer.status == bare.status == state.status == 200, (
                            version,
                            size,
                            answer,
                            bare,
                            state,
                        )
                        assert handlers.calls == before + 3 * size
                        tried["answered"] += 3
                    else:
                        for refused in (answer, bare, state):
                            assert refused.status == 400, (version, size, refused)
                            assert refused.json()["error"]["code"] == jsonrpc.INVALID_REQUEST
                            assert "batches" in refused.json()["error"]["message"]
                        assert handlers.calls == before, "a refused batch started a handler"
                        tried["refused"] += 3
            # 2026-07-28: no session, the header names the revision.
            modern = http_app(Server(m.ServerHandlers(), name="modern", version="1"))
            body = json.dumps(calls(3)).encode()
            answer = await asgi.request(
                modern, "POST", "/mcp", post_headers(None, "2026-07-28"), body
            )
            assert (
                answer.status == 400 and answer.json()["error"]["code"] == jsonrpc.INVALID_REQUEST
            )
            tried["refused"] += 1
            await modern.streamable.close()
        finally:
            await app.streamable.close()
            await stateless.close()

    run(scenario())
    record("security.strict_input.http_batches", dict(tried))


# ------------------------------------------------------------------ batches over stdio


def test_batches_are_refused_over_stdio_on_the_revisions_without_them() -> None:
    """A real stdio server process: at 2025-03-26 a batch is answered
    message by message; at 2025-11-25 every batch (of requests, of
    notifications, of responses, mixed, of 300) gets one -32600 under a null
    id, no handler runs, and the session goes on."""
    batches: list[list[Any]] = [
        calls(1),
        calls(300, 10),
        [{"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}],
        [{"jsonrpc": "2.0", "id": 77, "result": {}}],
        [
            *calls(2, 900),
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 900}},
        ],
        [[{"jsonrpc": "2.0", "id": 5, "method": "ping"}]],
    ]

    async def scenario() -> dict[str, int]:
        refused = 0
        old = await RawServer.start([sys.executable, str(RELIABILITY_SERVER), "stdio"])
        try:
            await old.initialize("2025-03-26")
            await old.send(json.dumps(calls(3, 40)).encode())
            seen = {json.loads((await old.receive_line())).get("id") for _ in range(3)}
            assert seen == {40, 41, 42}
        finally:
            await old.close()
        new = await RawServer.start([sys.executable, str(RELIABILITY_SERVER), "stdio"])
        try:
            await new.initialize("2025-11-25")
            for batch in batches:
                await new.send(json.dumps(batch).encode())
                answer = await new.receive()
                assert (
                    answer.get("id") is None and answer["error"]["code"] == jsonrpc.INVALID_REQUEST
                ), (batch, answer)
                refused += 1
            # Nothing else came (no handler ran): the next answer is the ping's.
            assert (await new.request("after", "ping"))["result"] == {}
        finally:
            await new.close()
        return {"batches_refused": refused, "revision": 20251125}

    record("security.strict_input.stdio_batches", run(scenario()))


# ------------------------------------------------------------------ POSTs of what is not a message

NOT_MESSAGES: list[Any] = [
    {"jsonrpc": "2.0", "id": None, "method": "ping"},
    {
        "jsonrpc": "2.0",
        "id": None,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": "x"}},
    },
    {"jsonrpc": "2.0", "id": None, "method": "notifications/initialized"},
    {},
    {"foo": 1},
    {"jsonrpc": "2.0"},
    {"jsonrpc": "2.0", "id": 1},
    {"jsonrpc": "2.0", "id": "x", "params": {}},
    {"jsonrpc": "2.0", "result": {}},
    {"jsonrpc": "2.0", "id": None, "result": {}},
    {"jsonrpc": "2.0", "id": 3, "result": {}, "error": {"code": 1, "message": "both"}},
    {"jsonrpc": "1.0", "method": "notifications/initialized"},
    {"jsonrpc": 2, "id": 4, "method": "ping"},
    {"id": 5, "method": "ping"},
    {"method": "notifications/initialized"},
    {"jsonrpc": None, "id": 6, "result": {}},
]
_junk_keys = st.text(max_size=6).filter(
    lambda k: k not in ("jsonrpc", "id", "method", "result", "error", "params")
)
_values = st.one_of(
    st.none(), st.booleans(), st.integers(), st.text(max_size=8), st.just({}), st.just([])
)


def test_a_post_of_a_null_id_request_or_a_non_message_is_400() -> None:
    """The listed shapes and hundreds of generated objects with no method
    and no response members (or a null id, or another jsonrpc): 400 and
    -32600, never 202; a real notification and response stay 202."""
    tried: Counter[int] = Counter()

    async def scenario() -> None:
        app = http_app(reliability_server())
        session_id = await open_session(app, "2025-11-25")
        headers = post_headers(session_id, "2025-11-25")

        async def refused(value: Any) -> None:
            answer = await asgi.request(app, "POST", "/mcp", headers, json.dumps(value).encode())
            assert answer.status == 400, (value, answer)
            assert answer.json()["error"]["code"] == jsonrpc.INVALID_REQUEST, (value, answer)
            tried[answer.status] += 1

        for value in NOT_MESSAGES:
            await refused(value)
        for value in (
            {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
            {"jsonrpc": "2.0", "id": 99, "result": {}},
            {"jsonrpc": "2.0", "id": 98, "error": {"code": -1, "message": "no"}},
        ):
            answer = await asgi.request(app, "POST", "/mcp", headers, json.dumps(value).encode())
            assert answer.status == 202, (value, answer)
            tried[202] += 1
        await app.streamable.close()

    run(scenario())

    # The generated shapes, on a loop of their own (hypothesis calls synchronously).
    loop = asyncio.new_event_loop()
    app = http_app(reliability_server())
    try:
        session_id = loop.run_until_complete(open_session(app, "2025-11-25"))
        headers = post_headers(session_id, "2025-11-25")

        @PROFILE
        @given(
            st.dictionaries(_junk_keys, _values, max_size=4),
            st.sampled_from(
                [
                    {},
                    {"id": None},
                    {"id": None, "method": "ping", "jsonrpc": "2.0"},
                    {"jsonrpc": "1.0", "method": "ping", "id": 1},
                    {"jsonrpc": "2.0", "id": 2},
                ]
            ),
        )
        def generated(junk: dict[str, Any], framing: dict[str, Any]) -> None:
            value = {**junk, **framing}
            answer = loop.run_until_complete(
                asgi.request(app, "POST", "/mcp", headers, json.dumps(value).encode())
            )
            assert (
                answer.status == 400 and answer.json()["error"]["code"] == jsonrpc.INVALID_REQUEST
            ), (value, answer)
            tried[400] += 1

        generated()
    finally:
        loop.run_until_complete(app.streamable.close())
        loop.close()
    assert tried[400] > 100
    record(
        "security.strict_input.non_messages",
        {"refused_400": tried[400], "accepted_202": tried[202]},
    )


# ------------------------------------------------------------------ Last-Event-ID

# Header values arrive as bytes, read as latin-1: other scripts' digits come as their UTF-8 bytes.
BAD_SEQUENCES = [
    *(
        "",
        "²",
        "³¹",
        "-1",
        "+1",
        " 1",
        "1 ",
        "1e3",
        "0x10",
        "1_000",
        "9" * 16,
        "9" * 5000,
        "NaN",
        "1\x00",
    ),
    *(digits.encode().decode("latin-1") for digits in ("١٢", "１", "߁")),
]


def test_last_event_ids_that_are_not_short_ascii_digits_are_400() -> None:
    """A real stream id with each bad sequence (Unicode digits int() refuses
    or takes, signs, spaces, exponents, 5,000 digits), generated text, and
    no stream id at all: 400, never an exception (a 500); a good one resumes."""
    tried = 0

    async def scenario() -> None:
        nonlocal tried
        app = http_app(reliability_server())
        session_id = await open_session(app, "2025-11-25")
        headers = post_headers(session_id, "2025-11-25")
        answer = await asgi.request(
            app,
            "POST",
            "/mcp",
            headers,
            json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode(),
        )
        stream_id = answer.body.split(b"id: ", 1)[1].split(b":", 1)[0].decode()

        async def resume(last: str) -> asgi.Response:
            get = {
                "accept": "text/event-stream",
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-11-25",
                "last-event-id": last,
            }
            return await asgi.request(app, "GET", "/mcp", get, leave_after_first_chunk=True)

        for sequence in BAD_SEQUENCES:
            for last in (f"{stream_id}:{sequence}", sequence, f"nostream:{sequence}"):
                refused = await resume(last)
                assert refused.status == 400, (last, refused)
                tried += 1
        good = await resume(f"{stream_id}:0")
        assert good.status == 200 and b'"id":1' in good.body
        await app.streamable.close()

    run(scenario())

    loop = asyncio.new_event_loop()
    app = http_app(reliability_server())
    try:
        session_id = loop.run_until_complete(open_session(app, "2025-11-25"))

        @PROFILE
        @given(
            st.text(
                alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF), max_size=40
            ).filter(lambda t: not t.isascii() or not t.split(":")[-1].isdigit())
        )
        def generated(last: str) -> None:
            nonlocal tried
            get = {
                "accept": "text/event-stream",
                "mcp-session-id": session_id,
                "mcp-protocol-version": "2025-11-25",
                "last-event-id": last,
            }
            answer = loop.run_until_complete(
                asgi.request(app, "GET", "/mcp", get, leave_after_first_chunk=True)
            )
            assert answer.status == 400, (last, answer)
            tried += 1

        generated()
    finally:
        loop.run_until_complete(app.streamable.close())
        loop.close()
    record("security.strict_input.last_event_id", {"values_tried": tried, "status": 400})


# ------------------------------------------------------------------ peer text in logs


@pytest.mark.parametrize(
    "text",
    [
        "plain",
        "two\nlines",
        "INFO forged\r\nCRITICAL root: forged",
        "\x1b[31mred\x1b[0m",
        "é\u2028\u2029x",
        "x" * 10_000,
        "\x00" * 300,
    ],
)
def test_quoted_peer_text_has_no_line_breaks_and_is_bounded(text: str) -> None:
    shown = quoted(text)
    assert "\n" not in shown and "\r" not in shown and "\x1b" not in shown and "\u2028" not in shown
    assert len(shown) <= 4 * LIMIT + 60
    assert shown.startswith(("'", '"'))


def test_peer_text_reaches_the_log_quoted_and_truncated(caplog: pytest.LogCaptureFixture) -> None:
    """An error message with a forged log line and 100,000 more characters,
    sent to a server session: one log record, on one line, bounded."""
    forged = "ok\nCRITICAL mcpbind: the server was compromised\r\n" + "A" * 100_000

    async def scenario() -> None:
        client_end, server_end = memory_pair("client", "server")
        task = asyncio.create_task(ServerSession(reliability_server(), server_end).run())
        client_end.send({"jsonrpc": "2.0", "error": {"code": -1, "message": forged}})
        client_end.send(
            {
                "jsonrpc": "2.0",
                "id": "p",
                "method": "initialize",
                "params": json.loads(init("2025-11-25"))["params"],
            }
        )
        assert (await client_end.receive()) is not None
        await client_end.close()
        await asyncio.wait_for(task, 10)

    with caplog.at_level(logging.DEBUG, logger="mcpbind"):
        run(scenario())
    lines = [r.getMessage() for r in caplog.records if "peer reported an error" in r.getMessage()]
    assert len(lines) == 1
    assert "\n" not in lines[0] and "\r" not in lines[0] and len(lines[0]) < 1000
    assert "more characters" in lines[0]
    record(
        "security.strict_input.log_quoting",
        {"peer_text_chars": len(forged), "logged_chars": len(lines[0])},
    )


# ------------------------------------------------------------------ requestState


def _variants(token: str) -> list[str]:
    """Other spellings of the same bytes, and near misses."""
    prefix, _, rest = token.partition(".")
    parts = rest.split(".")
    out = [
        token + "=",
        token + "==",
        token + "\n",
        " " + token,
        token.replace("-", "+").replace("_", "/"),
    ]
    for index, part in enumerate(parts):
        padded = parts.copy()
        padded[index] = part + "=" * (-len(part) % 4 or 4)
        out.append(prefix + "." + ".".join(padded))
        stray = parts.copy()
        stray[index] = part[:3] + "!" + part[3:]
        out.append(prefix + "." + ".".join(stray))
        alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        if len(part) % 4 in (2, 3):
            # The last character carries unused bits: set them.
            last = alphabet.index(part[-1])
            for low in range(1, 16 if len(part) % 4 == 2 else 4):
                if last | low != last:
                    changed = parts.copy()
                    changed[index] = part[:-1] + alphabet[last | low]
                    out.append(prefix + "." + ".".join(changed))
                    break
    return [v for v in out if v != token]


@pytest.mark.parametrize("encrypt", [False, True])
def test_request_state_opens_only_from_its_canonical_spelling(encrypt: bool) -> None:
    sealer = StateSealer(b"k" * 32, encrypt=encrypt)
    tried = 0
    for state in ("", "s", "round-1", "x" * 1000, "é\n\x00"):
        token = sealer.seal(state, ("tools/call", "ask"))
        assert sealer.open(token, ("tools/call", "ask")) == state
        for variant in _variants(token):
            with pytest.raises(StateError):
                sealer.open(variant, ("tools/call", "ask"))
            tried += 1
    assert tried > 30
    record(
        f"security.request_state.canonical.{'aes_gcm' if encrypt else 'hmac'}",
        {"variants_refused": tried},
    )


@pytest.mark.parametrize("size", [0, 1, 16, 31])
def test_request_state_keys_under_32_bytes_are_refused(size: int) -> None:
    with pytest.raises(ValueError, match="at least 32 bytes"):
        StateSealer(b"k" * size)
    with pytest.raises(ValueError, match="at least 32 bytes"):
        Server(m.ServerHandlers(), name="s", version="1", state_key=b"k" * size)
    StateSealer(b"k" * 32)  # the least that is taken


def test_encrypted_request_state_hides_the_state_and_refuses_tampering() -> None:
    sealer = StateSealer(b"k" * 32, encrypt=True)
    secret = "db-password=hunter2;cursor=42"
    token = sealer.seal(secret, ("tools/call", "ask"))
    raw = base64.urlsafe_b64decode(token.removeprefix("v4.") + "=" * (-len(token) % 4))
    assert b"hunter2" not in raw and "hunter2" not in token
    assert sealer.seal(secret, ("tools/call", "ask")) != token  # a fresh nonce every time
    body = token.removeprefix("v4.")
    flipped = 0
    for position in range(0, len(body), max(1, len(body) // 25)):
        character = "A" if body[position] != "A" else "B"
        altered = "v4." + body[:position] + character + body[position + 1 :]
        with pytest.raises(StateError):
            sealer.open(altered, ("tools/call", "ask"))
        flipped += 1
    for binding in (
        ("tools/call", "other"),
        ("prompts/get", "ask"),
        ("tools/call", "ask", "sub:mallory"),
    ):
        with pytest.raises(StateError):
            sealer.open(token, binding)
    with pytest.raises(StateError):
        StateSealer(b"j" * 32, encrypt=True).open(token, ("tools/call", "ask"))
    with pytest.raises(StateError):  # a signed state is not taken where states are encrypted
        sealer.open(
            StateSealer(b"k" * 32).seal(secret, ("tools/call", "ask")), ("tools/call", "ask")
        )
    record(
        "security.request_state.encrypted",
        {"tampered_tokens_refused": flipped, "plaintext_visible": False},
    )


class Asking(m.ServerHandlers):
    @override
    async def call_tool(
        self, params: m.CallToolRequestParams, ctx: RequestContext
    ) -> m.CallToolResultResponseResult:
        if not isinstance(params.request_state, str):
            schema = m.ElicitRequestFormParamsRequestedSchema(
                type="object", properties={"name": m.StringSchema(type="string")}
            )
            ask = m.ElicitRequest(
                params=m.ElicitRequestFormParams(message="Name?", requested_schema=schema)
            )
            return m.InputRequiredResult(
                input_requests={"name": ask}, request_state=f"secret state of {params.name}"
            )
        return m.CallToolResult(content=[m.TextContent(text=f"opened: {params.request_state}")])


META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}


@contextlib.asynccontextmanager
async def as_principal(
    server: Server, principal: Principal | None
) -> AsyncIterator[MemoryTransport]:
    """A connection whose transport verified ``principal`` (what an auth gate sets)."""
    client_end, server_end = memory_pair("client", "server")
    server_end.extra = RequestExtra(principal, local_client(principal))  # as an auth gate would
    task = asyncio.create_task(ServerSession(server, server_end).run())
    try:
        yield client_end
    finally:
        await client_end.close()
        await asyncio.wait_for(task, 10)


async def tool_call(
    wire: MemoryTransport, request_id: int, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    wire.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "ask", "_meta": META, **(extra or {})},
        }
    )
    while True:
        answer = await wire.receive()
        assert answer is not None
        if answer.get("id") == request_id:
            return answer


@pytest.mark.parametrize("encrypt", [False, True])
def test_request_state_sealed_for_one_principal_is_refused_to_another(encrypt: bool) -> None:
    """alice's state opens for alice (on another connection too), not for
    bob, not for a client of the same OAuth client id with another subject,
    and not without a principal; with encryption the client never sees it."""
    server = Server(Asking(), name="asking", version="1", encrypt_state=encrypt)
    alice = Principal("alice", client_id="app")
    answers = {"name": {"action": "accept", "content": {"name": "Ada"}}}

    async def scenario() -> int:
        async with as_principal(server, alice) as wire:
            state = (await tool_call(wire, 1))["result"]["requestState"]
        assert (
            "secret state"
            in base64.urlsafe_b64decode(state.split(".")[1] + "===").decode("latin-1")
        ) is not encrypt
        retry = {"requestState": state, "inputResponses": answers}
        async with as_principal(server, Principal("alice", client_id="app")) as wire:
            opened = await tool_call(wire, 2, retry)
            assert opened["result"]["content"][0]["text"] == "opened: secret state of ask"
        refused = 0
        for other in (
            Principal("bob", client_id="app"),
            Principal(None, client_id="app"),
            Principal("alice ", client_id="app"),
            None,
        ):
            async with as_principal(server, other) as wire:
                answer = await tool_call(wire, 3, retry)
                assert answer["error"]["code"] == jsonrpc.INVALID_PARAMS, (other, answer)
                refused += 1
        return refused

    refused = run(scenario())
    record(
        f"security.request_state.principal_binding.{'aes_gcm' if encrypt else 'hmac'}",
        {"replays_refused": refused},
    )
