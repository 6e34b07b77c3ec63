"""Our Streamable HTTP server seen through raw HTTP (httpx): DNS-rebinding
protection, limits, session management, headers, status codes, and stream
replay with Last-Event-ID."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from support.http_servers import ThreadedServer, eventually, lowlevel_server, run, serving

from mcpbind._transports.http.client.streamable import SSEParser
from mcpbind.codec import encode
from mcpbind.http import HttpApp, HttpOptions, http_app

ACCEPT = "application/json, text/event-stream"
LIMIT = 64 * 1024
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, ThreadedServer]]:
    with (
        serving(
            http_app(lowlevel_server(), options=HttpOptions(retry_ms=200, max_body_size=LIMIT))
        ) as sse,
        serving(http_app(lowlevel_server(), json_response=True)) as json_mode,
        serving(http_app(lowlevel_server(), stateless=True)) as stateless,
        serving(
            http_app(
                lowlevel_server(),
                allowed_hosts=["mcp.example"],
                allowed_origins=["https://app.example"],
            )
        ) as public,
    ):
        yield {"sse": sse, "json": json_mode, "stateless": stateless, "public": public}


def headers(
    session_id: str | None = None, version: str | None = "2025-11-25", **extra: str
) -> dict[str, str]:
    result = {"accept": ACCEPT, "content-type": "application/json", **extra}
    if session_id is not None:
        result["mcp-session-id"] = session_id
    if version is not None:
        result["mcp-protocol-version"] = version
    return result


def messages(body: bytes) -> list[Any]:
    parser = SSEParser()
    return [json.loads(event.data) for event in parser.feed(body) if event.data]


async def initialize(raw: httpx.AsyncClient, url: str) -> str:
    response = await raw.post(url, json=INIT, headers=headers(version=None))
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    initialized = await raw.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=headers(session_id),
    )
    assert initialized.status_code == 202 and initialized.content == b""
    return session_id


def request(request_id: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def client() -> httpx.AsyncClient:
    return httpx.AsyncClient(timeout=10)


# ---------------------------------------------------------------- DNS rebinding


def test_foreign_host_and_origin_are_refused(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            for path in ("/mcp", "/sse"):
                target = servers["sse"].url(path)
                evil_host = await raw.post(target, json=INIT, headers=headers(host="evil.example"))
                assert evil_host.status_code == 403 and "host" in evil_host.text
                evil_origin = await raw.get(target, headers=headers(origin="http://evil.example"))
                assert evil_origin.status_code == 403 and "origin" in evil_origin.text
                rebound = await raw.post(
                    target,
                    json=INIT,
                    headers=headers(host="evil.example:80", origin="http://evil.example:80"),
                )
                assert rebound.status_code == 403
            local = await raw.post(
                url,
                json=INIT,
                headers=headers(origin="http://localhost:5173", host="localhost:8000"),
            )
            assert local.status_code == 200

    run(main())


def test_configured_hosts_and_origins(servers: dict[str, ThreadedServer]) -> None:
    url = servers["public"].url()

    async def main() -> None:
        async with client() as raw:
            assert (
                await raw.post(url, json=INIT, headers=headers())
            ).status_code == 403  # 127.0.0.1 not listed
            ok = await raw.post(
                url, json=INIT, headers=headers(host="mcp.example", origin="https://app.example")
            )
            assert ok.status_code == 200
            other = await raw.post(
                url, json=INIT, headers=headers(host="mcp.example", origin="https://evil.example")
            )
            assert other.status_code == 403

    run(main())


# ---------------------------------------------------------------- requests


def test_body_over_the_limit_is_413(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            big = request(2, "tools/call", {"name": "echo", "arguments": {"text": "x" * LIMIT}})
            response = await raw.post(url, json=big, headers=headers(session_id))
            assert response.status_code == 413
            assert response.json()["error"]["message"] == f"Request body larger than {LIMIT} bytes"
            fits = request(
                3, "tools/call", {"name": "echo", "arguments": {"text": "x" * (LIMIT // 2)}}
            )
            assert (await raw.post(url, json=fits, headers=headers(session_id))).status_code == 200

    run(main())


def test_session_header_rules(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            missing = await raw.post(url, json=request(2, "ping"), headers=headers())
            assert (
                missing.status_code == 400
                and "Mcp-Session-Id" in missing.json()["error"]["message"]
            )
            unknown = await raw.post(
                url, json=request(2, "ping"), headers=headers("no-such-session")
            )
            assert unknown.status_code == 404
            assert (await raw.get(url, headers=headers("no-such-session"))).status_code == 404
            assert (await raw.get(url, headers=headers())).status_code == 400
            bad_version = await raw.post(
                url, json=request(2, "ping"), headers=headers(session_id, "1999-01-01")
            )
            assert (
                bad_version.status_code == 400
                and "MCP-Protocol-Version" in bad_version.json()["error"]["message"]
            )
            assert (
                await raw.get(url, headers=headers(session_id, "1999-01-01"))
            ).status_code == 400
            fine = await raw.post(url, json=request(2, "ping"), headers=headers(session_id))
            assert fine.status_code == 200 and messages(fine.content)[-1] == {
                "jsonrpc": "2.0",
                "id": 2,
                "result": {},
            }
            no_version = await raw.post(
                url, json=request(3, "ping"), headers=headers(session_id, None)
            )
            assert no_version.status_code == 200

    run(main())


def test_accept_content_type_and_methods(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            assert (
                await raw.post(url, json=INIT, headers={"accept": "application/json"})
            ).status_code == 406
            wrong_type = await raw.post(
                url, content=b"{}", headers={"accept": ACCEPT, "content-type": "text/plain"}
            )
            assert wrong_type.status_code == 415
            bad_json = await raw.post(url, content=b"{nope", headers=headers())
            assert bad_json.status_code == 400 and bad_json.json()["error"]["code"] == -32700
            assert (await raw.put(url, json=INIT, headers=headers())).status_code == 405
            assert (
                await raw.post(servers["sse"].url("/elsewhere"), json=INIT, headers=headers())
            ).status_code == 404

    run(main())


def test_session_ids_are_long_random_and_distinct(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            ids = [await initialize(raw, url) for _ in range(5)]
        assert len(set(ids)) == 5
        for session_id in ids:
            assert all(0x21 <= ord(c) <= 0x7E for c in session_id)
            assert len(session_id) * 6 >= 128  # base64url: 6 bits a character

    run(main())


def test_delete_ends_the_session(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]
    url = server.url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            app = server.app
            assert isinstance(app, HttpApp) and session_id in app.streamable.sessions
            assert (await raw.delete(url, headers=headers(session_id))).status_code == 200
            assert session_id not in app.streamable.sessions
            assert (
                await raw.post(url, json=request(2, "ping"), headers=headers(session_id))
            ).status_code == 404
            assert (await raw.get(url, headers=headers(session_id))).status_code == 404
            assert (await raw.delete(url, headers=headers(session_id))).status_code == 404

    run(main())


def test_second_get_stream_is_409(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            async with raw.stream("GET", url, headers=headers(session_id)) as first:
                assert first.status_code == 200
                assert first.headers["content-type"] == "text/event-stream"
                chunks = first.aiter_bytes()  # keep it: a dropped iterator closes the connection
                priming = await anext(chunks)
                assert priming.startswith(b"id: ") and b"retry: 200" in priming
                second = await raw.get(url, headers=headers(session_id))
                assert second.status_code == 409
            await asyncio.sleep(0.1)  # the server notices the first one is gone
            async with raw.stream("GET", url, headers=headers(session_id)) as again:
                assert again.status_code == 200

    run(main())


def test_stateless_server_has_no_get_or_delete(servers: dict[str, ThreadedServer]) -> None:
    url = servers["stateless"].url()

    async def main() -> None:
        async with client() as raw:
            initialized = await raw.post(url, json=INIT, headers=headers(version=None))
            assert initialized.status_code == 200 and "mcp-session-id" not in initialized.headers
            assert (await raw.get(url, headers=headers())).status_code == 405
            assert (await raw.delete(url, headers=headers())).status_code == 405
            listed = await raw.post(url, json=request(2, "tools/list"), headers=headers())
            assert "echo" in [
                tool["name"] for tool in messages(listed.content)[-1]["result"]["tools"]
            ]

    run(main())


# ---------------------------------------------------------------- streams


def test_stream_replayed_after_last_event_id(servers: dict[str, ThreadedServer]) -> None:
    """The reconnect tool closes its POST stream; GET with the last event id
    seen gets the rest, response included, then the stream ends."""
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            call = request(
                7,
                "tools/call",
                {"name": "reconnect", "arguments": {"pause": 0.1}, "_meta": {"progressToken": "t"}},
            )
            first = await raw.post(url, json=call, headers=headers(session_id))
            parser = SSEParser()
            before = [json.loads(e.data) for e in parser.feed(first.content) if e.data]
            assert parser.retry == 200 and parser.last_event_id is not None
            assert [
                m["params"]["progress"]
                for m in before
                if m.get("method") == "notifications/progress"
            ] == [1]
            assert not any("result" in m for m in before)
            last = parser.last_event_id
            resumed = await raw.get(url, headers=headers(session_id, **{"last-event-id": last}))
            assert resumed.status_code == 200
            after = messages(resumed.content)
            assert [
                m["params"]["progress"]
                for m in after
                if m.get("method") == "notifications/progress"
            ] == [2, 3]
            assert after[-1]["id"] == 7 and after[-1]["result"]["content"][0]["text"] == "resumed"
            # Replaying again from the same point gives the same events.
            again = await raw.get(url, headers=headers(session_id, **{"last-event-id": last}))
            assert messages(again.content) == after
            unknown = await raw.get(url, headers=headers(session_id, **{"last-event-id": "nope:3"}))
            assert unknown.status_code == 400  # not 404: the session itself is fine

    run(main())


def test_first_get_stream_gets_what_was_sent_before_it(servers: dict[str, ThreadedServer]) -> None:
    server = servers["sse"]
    url = server.url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            app = server.app
            assert isinstance(app, HttpApp)
            http_session = app.streamable.sessions[session_id]

            async def notify() -> None:
                params = encode({"level": "info", "data": "early"})
                await http_session.session.send_raw_notification("notifications/message", params)

            await server.call(notify)
            async with raw.stream("GET", url, headers=headers(session_id)) as stream:
                parser = SSEParser()
                seen: list[Any] = []
                async for chunk in stream.aiter_bytes():
                    seen += [json.loads(e.data) for e in parser.feed(chunk) if e.data]
                    if seen:
                        break
            assert seen[0]["params"]["data"] == "early"

    run(main())


def test_json_mode_answers_with_json_and_cancelled_requests_end(
    servers: dict[str, ThreadedServer],
) -> None:
    server = servers["json"]
    url = server.url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            listed = await raw.post(url, json=request(2, "tools/list"), headers=headers(session_id))
            assert listed.headers["content-type"] == "application/json"
            assert listed.json()["id"] == 2
            sleeping = asyncio.ensure_future(
                raw.post(
                    url,
                    json=request(3, "tools/call", {"name": "sleep", "arguments": {"seconds": 30}}),
                    headers=headers(session_id),
                )
            )
            app = server.app
            assert isinstance(app, HttpApp)
            http_session = app.streamable.sessions[session_id]
            await eventually(lambda: 3 in http_session.session._in_flight, what="the call to start")
            cancel = {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": 3},
            }
            assert (
                await raw.post(url, json=cancel, headers=headers(session_id))
            ).status_code == 202
            answered = await asyncio.wait_for(sleeping, 5)
            assert answered.json() == {
                "jsonrpc": "2.0",
                "id": 3,
                "error": {"code": -32800, "message": "Request cancelled"},
            }
            await eventually(
                lambda: not http_session.session._in_flight, what="the handler to be cancelled"
            )

    run(main())


def test_sse_mode_cancelled_request_stream_ends(servers: dict[str, ThreadedServer]) -> None:
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            call = request(4, "tools/call", {"name": "sleep", "arguments": {"seconds": 30}})
            async with raw.stream("POST", url, json=call, headers=headers(session_id)) as stream:
                chunks = stream.aiter_bytes()
                await anext(chunks)  # the priming event: the call is under way
                cancel = {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": 4},
                }
                assert (
                    await raw.post(url, json=cancel, headers=headers(session_id))
                ).status_code == 202
                rest = b"".join([chunk async for chunk in chunks])
            assert messages(rest) == []  # no response for a cancelled request; the stream just ends

    run(main())


def test_an_answer_ready_at_once_goes_whole_and_a_slow_one_streams(
    servers: dict[str, ThreadedServer],
) -> None:
    """A request answered without waiting gets its priming event and its
    response in one body with a Content-Length (no chunked encoding, and no
    header asking proxies not to buffer what is not streamed); one still
    running gets the priming event at once, then the rest."""
    url = servers["sse"].url()

    async def main() -> None:
        async with client() as raw:
            session_id = await initialize(raw, url)
            quick = await raw.post(url, json=request(5, "tools/list"), headers=headers(session_id))
            assert quick.headers["content-type"] == "text/event-stream"
            assert int(quick.headers["content-length"]) == len(quick.content)
            assert "transfer-encoding" not in quick.headers
            assert quick.headers["cache-control"] == "no-cache, no-transform"
            assert "x-accel-buffering" not in quick.headers
            assert quick.headers["mcp-session-id"] == session_id
            parser = SSEParser()
            events = parser.feed(quick.content)
            assert events[0].data == "" and parser.retry == 200  # the priming event first
            assert json.loads(events[-1].data)["id"] == 5
            call = request(6, "tools/call", {"name": "sleep", "arguments": {"seconds": 1}})
            async with raw.stream("POST", url, json=call, headers=headers(session_id)) as stream:
                assert stream.headers.get("transfer-encoding") == "chunked"
                assert stream.headers["x-accel-buffering"] == "no"
                assert stream.headers["mcp-session-id"] == session_id
                chunks = stream.aiter_bytes()
                first = await asyncio.wait_for(
                    anext(chunks), 0.8
                )  # before the tool has slept its second
                assert SSEParser().feed(first)[0].data == ""
                rest = b"".join([chunk async for chunk in chunks])
            assert messages(first + rest)[-1]["id"] == 6

    run(main())


def test_idle_sessions_are_reaped_but_listening_ones_kept() -> None:
    """session_timeout drops a session nobody uses; an open GET stream (or a
    running request) is use, however long since the last HTTP request."""
    with serving(http_app(lowlevel_server(), options=HttpOptions(session_timeout=0.4))) as server:
        url = server.url()
        app = server.app
        assert isinstance(app, HttpApp)

        async def main() -> None:
            async with client() as raw:
                listening = await initialize(raw, url)
                idle = await initialize(raw, url)
                working = await initialize(raw, url)
                call = request(2, "tools/call", {"name": "sleep", "arguments": {"seconds": 1.5}})
                slow = asyncio.ensure_future(raw.post(url, json=call, headers=headers(working)))
                async with raw.stream("GET", url, headers=headers(listening)) as stream:
                    chunks = (
                        stream.aiter_bytes()
                    )  # keep it: a dropped iterator closes the connection
                    await anext(chunks)
                    await eventually(
                        lambda: idle not in app.streamable.sessions, what="the idle session to go"
                    )
                    await asyncio.sleep(1.0)
                    assert listening in app.streamable.sessions, "listening"
                    assert working in app.streamable.sessions, "working"
                assert (await slow).status_code == 200
                await eventually(
                    lambda: listening not in app.streamable.sessions,
                    what="the listener's session to go",
                )
                assert (
                    await raw.post(url, json=request(3, "ping"), headers=headers(idle))
                ).status_code == 404

        run(main())


# ---------------------------------------------------------------- broken connections, straight through ASGI


async def asgi(
    app: Any,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes = b"",
    broken: bool = False,
) -> list[Any]:
    """One request straight into an ASGI app; ``broken``: the connection
    fails on the first thing the app sends."""
    sent: list[Any] = []
    never = asyncio.Event()
    delivered = False

    async def receive() -> Any:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await never.wait()
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        if broken:
            raise OSError("connection reset")
        sent.append(message)

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "root_path": "",
        "query_string": b"",
        "headers": [(k.encode(), v.encode()) for k, v in {"host": "127.0.0.1", **headers}.items()],
    }
    try:
        await app(scope, receive, send)
    except OSError:
        pass
    return sent


def test_get_stream_broken_at_once_does_not_hold_the_session() -> None:
    async def main() -> None:
        app = http_app(lowlevel_server())
        sent = await asgi(app, "POST", "/mcp", headers(version=None), json.dumps(INIT).encode())
        session_id = dict(sent[0]["headers"])[b"mcp-session-id"].decode()
        standalone = app.streamable.sessions[session_id].transport.standalone
        await asgi(app, "GET", "/mcp", headers(session_id), broken=True)
        assert standalone.live is None  # else every later GET would be refused with 409
        assert not app.streamable.sessions[session_id].busy
        await app.streamable.close()

    run(main())


def test_legacy_stream_broken_at_once_ends_its_session() -> None:
    async def main() -> None:
        app = http_app(lowlevel_server())
        assert app.legacy is not None
        await asgi(app, "GET", "/sse", {"accept": "text/event-stream"}, broken=True)
        assert app.legacy.sessions == {}

    run(main())
