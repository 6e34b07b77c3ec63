"""Security of the HTTP servers: DNS-rebinding protection (foreign Host and
Origin refused with 403 on the Streamable HTTP app and on the legacy SSE
app), unguessable session ids, session ids that were never issued, were
DELETEd or expired (404), per-session limits (413 for bodies, 429 for
requests in flight) and loopback binding by default (examples and test
helpers). Many requests go straight into the ASGI apps (no network), a few
over uvicorn on 127.0.0.1; the figures go to build/reliability/figures.json.
"""

from __future__ import annotations

import ast
import asyncio
import json
import math
import re
import secrets
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import asgi
from support.figures import record
from support.http_servers import ThreadedServer, eventually, run, serving
from support.reliability_server import ReliabilityServer, reliability_server

from mcpbind._transports.http.client.streamable import SSEParser
from mcpbind.http import HttpApp, HttpOptions, http_app

REPO = Path(__file__).resolve().parents[2]
ACCEPT = "application/json, text/event-stream"
LATEST = "2025-11-25"
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST,
        "capabilities": {},
        "clientInfo": {"name": "security", "version": "0"},
    },
}
PROFILE = settings(
    max_examples=300,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
LOCAL = re.compile(r"(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?")


def headers(session_id: str | None = None, **extra: str) -> dict[str, str]:
    result = {"accept": ACCEPT, "content-type": "application/json", **extra}
    if session_id is not None:
        result["mcp-session-id"] = session_id
        result["mcp-protocol-version"] = LATEST
    return result


def request(request_id: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def is_local_host(host: str) -> bool:
    return LOCAL.fullmatch(host.strip().lower()) is not None


def is_local_origin(origin: str) -> bool:
    scheme, separator, rest = origin.strip().lower().rstrip("/").partition("://")
    return bool(separator) and scheme in ("http", "https") and LOCAL.fullmatch(rest) is not None


# ------------------------------------------------------------------ DNS rebinding

_label = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)
_domain = st.lists(_label, min_size=1, max_size=4).map(".".join)
_local = st.sampled_from(["localhost", "127.0.0.1", "[::1]", "LOCALHOST", "LocalHost", "[::1]"])
_port = st.one_of(
    st.just(""),
    st.integers(0, 65535).map(lambda p: f":{p}"),
    st.sampled_from([":", ":abc", ":80:80", ":-1"]),
)
_glue = st.sampled_from(
    [".", "-", "@", ":80@", "]", "", "/", "#", "%2e", "\\", "..", ":80/", "?", "_"]
)
_ascii = st.text(alphabet=st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=24)
hosts = st.one_of(
    st.builds(str.__add__, _domain, _port),
    st.builds(str.__add__, _local, _port),
    st.builds(lambda local, glue, domain: f"{local}{glue}{domain}", _local, _glue, _domain),
    st.builds(lambda domain, glue, local: f"{domain}{glue}{local}", _domain, _glue, _local),
    st.builds(str.__add__, st.ip_addresses(v=4).map(str), _port),
    st.builds(str.__add__, st.ip_addresses(v=6).map(lambda a: f"[{a}]"), _port),
    _ascii,
)
origins = st.builds(
    lambda scheme, host: f"{scheme}{host}",
    st.sampled_from(
        [
            "http://",
            "https://",
            "ws://",
            "file://",
            "chrome-extension://",
            "",
            "null",
            "http:/",
            "HTTP://",
        ]
    ),
    hosts,
)


def test_foreign_host_or_origin_is_refused_with_403_on_both_apps() -> None:
    """Thousands of Host and Origin values, straight into http_app's ASGI app:
    only a local name (localhost, 127.0.0.1, [::1]) with at most a numeric
    port is let through, on /mcp (Streamable HTTP), /sse and /messages
    (legacy SSE); everything else is 403 before any session is touched."""
    tried: Counter[str] = Counter()

    async def check_host(app: HttpApp, host: str) -> None:
        local = is_local_host(host)
        answer = await asgi.request(
            app, "POST", "/mcp", headers(), json.dumps(INIT).encode(), host=host
        )
        assert answer.status == (200 if local else 403), (host, answer)
        if not local:
            assert b"host" in answer.body
        stream = await asgi.request(
            app,
            "GET",
            "/sse",
            {"accept": "text/event-stream"},
            host=host,
            leave_after_first_chunk=True,
        )
        assert stream.status == (200 if local else 403), (host, stream)
        message = await asgi.request(
            app, "POST", "/messages", headers(), b"{}", query="session_id=x", host=host
        )
        assert message.status == (404 if local else 403), (host, message)
        tried["hosts"] += 1
        tried["local hosts" if local else "foreign hosts"] += 1

    async def check_origin(app: HttpApp, origin: str) -> None:
        local = is_local_origin(origin)
        answer = await asgi.request(
            app, "POST", "/mcp", headers(origin=origin), json.dumps(INIT).encode()
        )
        assert answer.status == (200 if local else 403), (origin, answer)
        stream = await asgi.request(
            app,
            "GET",
            "/sse",
            {"accept": "text/event-stream", "origin": origin},
            leave_after_first_chunk=True,
        )
        assert stream.status == (200 if local else 403), (origin, stream)
        tried["origins"] += 1
        tried["local origins" if local else "foreign origins"] += 1

    loop = asyncio.new_event_loop()
    app = http_app(reliability_server())
    try:

        @PROFILE
        @given(hosts.filter(lambda h: "\r" not in h and "\n" not in h))
        def every_host(host: str) -> None:
            loop.run_until_complete(check_host(app, host))

        @PROFILE
        @given(origins)
        def every_origin(origin: str) -> None:
            loop.run_until_complete(check_origin(app, origin))

        every_host()
        every_origin()
        for host in (
            "",
            "[::1]evil.example",
            "localhost:80@evil.example",
            "localhost.",
            "127.0.0.1.nip.io",
            "0.0.0.0",
            "[::]",
            "127.0.0.2",
        ):
            loop.run_until_complete(check_host(app, host))
        missing = loop.run_until_complete(
            asgi.request(app, "POST", "/mcp", headers(), json.dumps(INIT).encode(), host=None)
        )
        assert missing.status == 403  # no Host header at all
        assert (
            app.streamable.allowed_hosts is None
            and app.legacy is not None
            and app.legacy.allowed_hosts is None
        )
    finally:
        loop.run_until_complete(app.streamable.close())
        loop.close()
    assert (
        tried["local hosts"] > 20 and tried["foreign hosts"] > 200 and tried["local origins"] > 10
    )

    # And end to end, through uvicorn: the same answers over a real connection.
    with serving(http_app(reliability_server())) as server:

        async def over_http() -> None:
            async with httpx.AsyncClient(timeout=10) as raw:
                for path in ("/mcp", "/sse", "/messages"):
                    foreign = await raw.post(
                        server.url(path), json=INIT, headers=headers(host="evil.example")
                    )
                    assert foreign.status_code == 403, path
                    rebound = await raw.post(
                        server.url(path), json=INIT, headers=headers(origin="http://evil.example")
                    )
                    assert rebound.status_code == 403, path
                allowed = await raw.post(
                    server.url(),
                    json=INIT,
                    headers=headers(origin=f"http://localhost:{server.port}"),
                )
                assert allowed.status_code == 200

        run(over_http())
    record(
        "security.dns_rebinding",
        {**dict(sorted(tried.items())), "requests": 3 * tried["hosts"] + 2 * tried["origins"]},
    )


# ------------------------------------------------------------------ session ids


def _entropy_per_character(ids: list[str]) -> float:
    counts = Counter("".join(ids))
    total = sum(counts.values())
    return -sum(n / total * math.log2(n / total) for n in counts.values())


def test_session_ids_are_unguessable(monkeypatch: pytest.MonkeyPatch) -> None:
    """1,000 Streamable HTTP session ids and 1,000 legacy SSE session ids:
    all distinct, made by the ``secrets`` module (the OS CSPRNG) from at
    least 16 random bytes (128 bits), and their characters as evenly spread
    as random ones."""
    made: list[tuple[str, int, str]] = []
    token_urlsafe, token_hex = secrets.token_urlsafe, secrets.token_hex

    def recording_urlsafe(nbytes: int | None = None) -> str:
        value = token_urlsafe(nbytes)
        made.append(("urlsafe", nbytes or 32, value))
        return value

    def recording_hex(nbytes: int | None = None) -> str:
        value = token_hex(nbytes)
        made.append(("hex", nbytes or 32, value))
        return value

    monkeypatch.setattr(secrets, "token_urlsafe", recording_urlsafe)
    monkeypatch.setattr(secrets, "token_hex", recording_hex)

    async def collect() -> tuple[list[str], list[str]]:
        app = http_app(reliability_server())
        assert app.legacy is not None
        streamable: list[str] = []
        legacy: list[str] = []
        for _ in range(1000):
            answer = await asgi.request(app, "POST", "/mcp", headers(), json.dumps(INIT).encode())
            assert answer.status == 200
            streamable.append(answer.headers["mcp-session-id"])
            stream = await asgi.request(
                app, "GET", "/sse", {"accept": "text/event-stream"}, leave_after_first_chunk=True
            )
            endpoint = stream.body.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
            legacy.append(endpoint.split("session_id=", 1)[1])
        await app.streamable.close()
        assert app.legacy.sessions == {}
        return streamable, legacy

    streamable, legacy = run(collect())
    origin = {value: (kind, nbytes) for kind, nbytes, value in made}
    figures: dict[str, Any] = {}
    for name, ids, alphabet in (
        (
            "streamable_http",
            streamable,
            set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
        ),
        ("legacy_sse", legacy, set("0123456789abcdef")),
    ):
        assert len(set(ids)) == len(ids) == 1000, name
        assert all(set(i) <= alphabet for i in ids), name
        sources = {origin.get(i) for i in ids}
        assert None not in sources, f"{name}: an id that the secrets module did not make"
        bits = min(nbytes for _, nbytes in sources) * 8  # type: ignore[misc]
        assert bits >= 128, name
        per_character = _entropy_per_character(ids)
        assert per_character >= 0.98 * math.log2(len(alphabet)), (name, per_character)
        figures[name] = {
            "ids": len(ids),
            "distinct": len(set(ids)),
            "length": len(ids[0]),
            "random_bits": bits,
            "measured_entropy_bits_per_character": round(per_character, 3),
            "source": f"secrets.token_{next(iter(sources))[0]}",  # type: ignore[index]
        }
    record("security.session_ids", figures)


# ------------------------------------------------------------------ foreign, deleted and expired sessions


def sse_messages(body: bytes) -> list[Any]:
    return [json.loads(event.data) for event in SSEParser().feed(body) if event.data]


async def initialize(raw: httpx.AsyncClient, url: str) -> str:
    answer = await raw.post(url, json=INIT, headers=headers())
    assert answer.status_code == 200, answer.text
    session_id: str = answer.headers["mcp-session-id"]
    done = await raw.post(
        url,
        json={"jsonrpc": "2.0", "method": "notifications/initialized"},
        headers=headers(session_id),
    )
    assert done.status_code == 202
    return session_id


async def refused_everywhere(raw: httpx.AsyncClient, url: str, session_id: str) -> None:
    """Every method naming ``session_id`` gets 404."""
    post = await raw.post(url, json=request(9, "ping"), headers=headers(session_id))
    assert post.status_code == 404, post.text
    assert (
        await raw.get(url, headers={"accept": "text/event-stream", "mcp-session-id": session_id})
    ).status_code == 404
    assert (await raw.delete(url, headers={"mcp-session-id": session_id})).status_code == 404


def test_session_ids_never_issued_deleted_or_expired_are_404() -> None:
    app = http_app(reliability_server(), options=HttpOptions(session_timeout=0.5, retry_ms=100))
    with serving(app) as server:
        url = server.url()

        async def scenario() -> dict[str, Any]:
            async with httpx.AsyncClient(timeout=10) as raw:
                # Never issued: a well-formed id, and some that are not.
                for never in (
                    secrets.token_urlsafe(32),
                    "",
                    "x" * 4096,
                    "../../etc",
                    "' OR 1=1 --",
                ):
                    await refused_everywhere(raw, url, never)
                # Another session's stream cannot be resumed from this one.
                mine, theirs = await initialize(raw, url), await initialize(raw, url)
                answer = await raw.post(url, json=request(2, "ping"), headers=headers(theirs))
                stream_id = SSEParser().feed(answer.content)[0].id
                assert stream_id is not None
                crossed = await raw.get(
                    url,
                    headers={
                        "accept": "text/event-stream",
                        "mcp-session-id": mine,
                        "last-event-id": stream_id,
                        "mcp-protocol-version": LATEST,
                    },
                )
                assert crossed.status_code == 400
                # DELETEd: then every method is 404, and the other session is untouched.
                assert (await raw.delete(url, headers={"mcp-session-id": mine})).status_code == 200
                await refused_everywhere(raw, url, mine)
                # Expired: an idle session is reaped after session_timeout, then 404.
                await eventually(
                    lambda: theirs not in app.streamable.sessions,
                    timeout=10,
                    what="the idle session to be reaped",
                )
                await refused_everywhere(raw, url, theirs)
                # Legacy SSE: an unknown session, and one whose stream has ended.
                assert (
                    await raw.post(
                        server.url("/messages"),
                        params={"session_id": secrets.token_hex(16)},
                        json=request(1, "ping"),
                    )
                ).status_code == 404
                async with raw.stream(
                    "GET", server.url("/sse"), headers={"accept": "text/event-stream"}
                ) as stream:
                    chunks = stream.aiter_bytes()
                    first = await anext(chunks)
                    endpoint = first.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
                    alive = await raw.post(server.url(endpoint), json=INIT)
                    assert alive.status_code == 202
                await eventually(lambda: not app.legacy or not app.legacy.sessions, what="the legacy session to end")  # type: ignore[union-attr]
                assert (
                    await raw.post(server.url(endpoint), json=request(2, "ping"))
                ).status_code == 404
            return {"never_issued_ids_tried": 5, "deleted": 1, "expired": 1, "legacy_ended": 1}

        record("security.unknown_sessions", run(scenario()))


# ------------------------------------------------------------------ per-session limits


def test_per_session_limits_on_body_size_and_requests_in_flight() -> None:
    """max_body_size=64 KiB: a larger body is 413 (Streamable HTTP and legacy
    SSE), and the session goes on. max_concurrent_requests=4: a fifth request
    in flight is 429 for that session only;
    once the four are answered, the session takes requests again."""
    handlers = ReliabilityServer()
    app = http_app(
        reliability_server(handlers),
        options=HttpOptions(max_body_size=64 * 1024, max_concurrent_requests=4),
    )
    with serving(app) as server:
        url = server.url()

        async def release(tokens: list[str]) -> None:
            for token in tokens:
                handlers.release(token)

        async def scenario() -> dict[str, Any]:
            async with httpx.AsyncClient(timeout=20) as raw:
                mine, other = await initialize(raw, url), await initialize(raw, url)
                big = request(
                    2, "tools/call", {"name": "echo", "arguments": {"text": "x" * 70_000}}
                )
                too_big = await raw.post(url, json=big, headers=headers(mine))
                assert too_big.status_code == 413
                assert too_big.json()["error"] == {
                    "code": -32600,
                    "message": "Request body larger than 65536 bytes",
                }
                small = await raw.post(
                    url,
                    json=request(3, "tools/call", {"name": "echo", "arguments": {"text": "ok"}}),
                    headers=headers(mine),
                )
                assert sse_messages(small.content)[-1]["result"]["content"][0]["text"] == "ok"
                async with raw.stream(
                    "GET", server.url("/sse"), headers={"accept": "text/event-stream"}
                ) as stream:
                    chunks = (
                        stream.aiter_bytes()
                    )  # keep it: a dropped iterator closes the connection
                    first = await anext(chunks)
                    endpoint = first.split(b"data: ", 1)[1].split(b"\n", 1)[0].decode()
                    assert (await raw.post(server.url(endpoint), json=big)).status_code == 413
                    assert (await raw.post(server.url(endpoint), json=INIT)).status_code == 202

                tokens = [f"gate-{i}" for i in range(4)]
                gated = [
                    asyncio.ensure_future(
                        raw.post(
                            url,
                            json=request(
                                10 + i,
                                "tools/call",
                                {"name": "gate", "arguments": {"token": token}},
                            ),
                            headers=headers(mine),
                        )
                    )
                    for i, token in enumerate(tokens)
                ]
                await eventually(
                    lambda: all(t in handlers.entered for t in tokens),
                    timeout=10,
                    what="four calls in flight",
                )
                fifth = await raw.post(url, json=request(20, "ping"), headers=headers(mine))
                assert fifth.status_code == 429
                assert (
                    fifth.json()["error"]["message"]
                    == "Too many requests in flight for this session"
                )
                batch = await raw.post(
                    url, json=[request(21, "ping"), request(22, "ping")], headers=headers(mine)
                )
                assert (
                    batch.status_code == 400
                )  # 2025-06-18 removed batches: refused before any limit
                notification = await raw.post(
                    url,
                    json={"jsonrpc": "2.0", "method": "notifications/roots/list_changed"},
                    headers=headers(mine),
                )
                assert notification.status_code == 202  # notifications are not requests in flight
                elsewhere = await raw.post(url, json=request(23, "ping"), headers=headers(other))
                assert elsewhere.status_code == 200  # the limit is per session
                await server.call(lambda: release(tokens))
                answers = await asyncio.gather(*gated)
                assert [
                    sse_messages(a.content)[-1]["result"]["content"][0]["text"] for a in answers
                ] == tokens
                again = await raw.post(url, json=request(24, "ping"), headers=headers(mine))
                assert again.status_code == 200
            return {
                "max_body_size": 65536,
                "body_over_limit_status": 413,
                "max_concurrent_requests": 4,
                "fifth_request_status": 429,
            }

        record("security.per_session_limits", run(scenario()))


# ------------------------------------------------------------------ loopback by default

_DRIVER = """
import os, runpy, sys, uvicorn
def fake_run(app, **options):
    print("HOST", options.get("host", "127.0.0.1"), flush=True)
def fake_serve(self, sockets=None):
    print("HOST", self.config.host, flush=True)
uvicorn.run = fake_run
uvicorn.Server.run = fake_serve
path = sys.argv[1]
sys.path.insert(0, os.path.dirname(path))
sys.argv = [path]
runpy.run_path(path, run_name="__main__")
"""


@pytest.mark.parametrize("example", ["http_server.py", "everything_server.py"])
def test_the_http_examples_bind_127_0_0_1_unless_told_otherwise(example: str) -> None:
    """Run with no arguments (uvicorn.run, and uvicorn.Server.run which run_http
    uses, replaced by stubs that report what they were asked to bind): 127.0.0.1.
    --help says --host is an option."""
    path = REPO / "examples" / example
    ran = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(path)], capture_output=True, text=True, timeout=60
    )
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["HOST", "127.0.0.1"], ran.stdout
    helped = subprocess.run(
        [sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=60
    )
    assert helped.returncode == 0 and "--host" in helped.stdout
    record(f"security.loopback_default.{example}", {"default_host": "127.0.0.1"})


_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def _host_arguments(tree: ast.AST) -> list[tuple[int, str, Any]]:
    """(line, call, host) for every place a socket or server is bound: bind
    and start_server calls, uvicorn.run and uvicorn.Config, and the default
    of an argparse --host option."""
    found: list[tuple[int, str, Any]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = (
            func.attr
            if isinstance(func, ast.Attribute)
            else func.id if isinstance(func, ast.Name) else ""
        )
        keywords = {k.arg: k.value for k in node.keywords}
        if (
            name == "bind"
            and node.args
            and isinstance(node.args[0], ast.Tuple)
            and node.args[0].elts
        ):
            found.append((node.lineno, name, node.args[0].elts[0]))
        elif name in ("start_server", "create_server") and len(node.args) >= 2:
            found.append((node.lineno, name, node.args[1]))
        elif name in ("run", "Config", "start_server", "create_server") and "host" in keywords:
            found.append((node.lineno, name, keywords["host"]))
        elif (
            name == "add_argument"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value == "--host"
        ):
            found.append((node.lineno, "--host default", keywords.get("default")))
    return found


def test_servers_started_by_the_examples_and_test_helpers_bind_loopback() -> None:
    """Every bind, start_server, uvicorn.run/Config and --host default in
    examples/ and tests/support/ names a loopback address (or the --host
    option, whose default is loopback); none binds all interfaces."""
    checked = 0
    for path in sorted(
        [*(REPO / "examples").glob("*.py"), *(REPO / "tests" / "support").glob("*.py")]
    ):
        for line, call, host in _host_arguments(ast.parse(path.read_text(), str(path))):
            where = f"{path.relative_to(REPO)}:{line} ({call})"
            if isinstance(host, ast.Constant):
                assert host.value in _LOOPBACK, f"{where} binds {host.value!r}"
            else:
                assert (
                    isinstance(host, ast.Attribute) and host.attr == "host"
                ), f"{where}: host {ast.dump(host) if host else None}"
            checked += 1
    assert checked >= 5
    with serving(http_app(reliability_server())) as server:
        assert isinstance(server, ThreadedServer) and server._socket.getsockname()[0] == "127.0.0.1"
    record("security.loopback_binds", {"bind_sites_checked": checked})
