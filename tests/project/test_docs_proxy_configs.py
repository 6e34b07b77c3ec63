"""Every reverse-proxy configuration the documentation gives works with the real
proxy: HAProxy and nginx (Debian's binaries, installed where missing).

* A fenced block just after ``<!-- proxy-config: haproxy -->`` or
  ``<!-- proxy-config: nginx -->`` is a whole configuration: ``haproxy -c`` or
  ``nginx -t`` accepts it, and the first of each kind, run in front of a server
  of this runtime (its ports moved to free loopback ones), carries an MCP
  session through, appends the client's address to ``X-Forwarded-For`` and
  cuts a client that trickles its request head.
* A directive the prose names in passing (`` `option forwardfor` ``,
  `` `proxy_buffering off;` ``) is accepted by its proxy too, put into a
  configuration of its own. The hardening guide named ``option forwardedfor``,
  with which HAProxy refuses to start.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from support.everything_http import free_port
from support.http_servers import Recorder, lowlevel_server, run, serving
from support.proxies import check, running

from mcpbind.http import http_app

pytestmark = pytest.mark.peers

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKER = re.compile(r"^<!-- proxy-config: (?P<kind>haproxy|nginx) -->$")
KINDS = ("haproxy", "nginx")
# Directives named in passing: a code span that begins with one of these words (and has a value).
HAPROXY_INLINE = re.compile(r"`((?:option|timeout) [^`]+)`")
NGINX_INLINE = re.compile(r"`((?:proxy_|client_)\w+ [^`]+)`")
HAPROXY_AROUND = """global
  maxconn 64
defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
  {directive}
frontend check
  bind 127.0.0.1:{port}
  default_backend checked
backend checked
  server s1 127.0.0.1:{port}
"""
NGINX_AROUND = """events {{}}
http {{
  server {{
    listen 127.0.0.1:{port};
    {directive}
    location / {{
      proxy_pass http://127.0.0.1:{port};
    }}
  }}
}}
"""


def configurations() -> list[tuple[str, str, str]]:
    """Every marked block: (kind, where, text)."""
    found = []
    for document in DOCUMENTS:
        lines = document.read_text().splitlines()
        for number, line in enumerate(lines):
            marker = MARKER.match(line)
            if marker is None:
                continue
            assert lines[number + 1].startswith("```"), f"{document}:{number + 1}: no block follows"
            end = lines.index("```", number + 2)
            where = f"{document.relative_to(ROOT)}:{number + 1}"
            found.append((marker["kind"], where, "\n".join(lines[number + 2 : end]) + "\n"))
    return found


def named_in_passing() -> list[tuple[str, str]]:
    """Every directive a document names in a code span: (kind, directive)."""
    found: list[tuple[str, str]] = []
    for document in DOCUMENTS:
        text = document.read_text()
        found += [("haproxy", d) for d in HAPROXY_INLINE.findall(text)]
        found += [("nginx", d if d.endswith(";") else d + ";") for d in NGINX_INLINE.findall(text)]
    return found


def test_the_documentation_gives_a_whole_configuration_of_each_proxy() -> None:
    assert {kind for kind, _, _ in configurations()} == set(KINDS)


@pytest.mark.parametrize("kind, where, text", configurations(), ids=lambda v: str(v)[:40])
def test_every_documented_proxy_configuration_is_accepted_by_the_proxy(
    kind: str, where: str, text: str, tmp_path: Path
) -> None:
    config = tmp_path / f"{kind}.conf"
    config.write_text(text)
    checked = check(kind, config)
    assert checked.returncode == 0, f"{where}: {kind} refuses it:\n{checked.stderr}"


@pytest.mark.parametrize("kind, directive", named_in_passing())
def test_every_proxy_directive_the_documentation_names_is_accepted_by_the_proxy(
    kind: str, directive: str, tmp_path: Path
) -> None:
    config = tmp_path / f"{kind}.conf"
    around = HAPROXY_AROUND if kind == "haproxy" else NGINX_AROUND
    config.write_text(around.format(directive=directive, port=free_port()))
    checked = check(kind, config)
    assert checked.returncode == 0, f"{kind} refuses {directive!r}:\n{checked.stderr}"


def first_of(kind: str) -> str:
    return next(text for found, _, text in configurations() if found == kind)


def moved(kind: str, text: str, backend: int, front: int) -> str:
    """The configuration with its backend and listening ports moved to free ones."""
    assert "127.0.0.1:8000" in text
    text = text.replace("127.0.0.1:8000", f"127.0.0.1:{backend}")
    if kind == "haproxy":
        assert "bind :8080" in text
        return text.replace("bind :8080", f"bind 127.0.0.1:{front}")
    assert "listen 8080;" in text
    return text.replace("listen 8080;", f"listen 127.0.0.1:{front};")


@pytest.fixture(params=KINDS)
def proxied(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Recorder]]:
    """The URL of a server behind the documented proxy, and what the server received."""
    kind = request.param
    app = http_app(lowlevel_server())
    with serving(app) as server:
        front = free_port()
        config = tmp_path / f"{kind}.conf"
        config.write_text(moved(kind, first_of(kind), server.port, front))
        with running(kind, config, front):
            yield f"http://127.0.0.1:{front}/mcp", server.recorder


def test_a_documented_proxy_configuration_carries_an_mcp_session_to_the_server(
    proxied: tuple[str, Recorder],
) -> None:
    url, _ = proxied
    accept = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "behind-a-proxy", "version": "0"},
        },
    }
    with httpx.Client(timeout=30) as client:
        opened = client.post(url, content=json.dumps(initialize), headers=accept)
        assert opened.status_code == 200, opened.text
        session = {
            **accept,
            "mcp-session-id": opened.headers["mcp-session-id"],
            "mcp-protocol-version": "2025-11-25",
        }
        listed = client.post(
            url,
            content=json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            headers=session,
        )
        assert listed.status_code == 200 and '"tools"' in listed.text, listed.text


def test_a_documented_proxy_configuration_forwards_the_client_address(
    proxied: tuple[str, Recorder],
) -> None:
    url, recorder = proxied
    with httpx.Client(timeout=30) as client:
        client.get(url.replace("/mcp", "/elsewhere"))
    forwarded = [headers.get("x-forwarded-for", "") for _, _, headers in recorder.requests]
    assert forwarded and all(
        header.split(",")[-1].strip() == "127.0.0.1" for header in forwarded
    ), forwarded


def test_a_documented_proxy_configuration_cuts_a_trickled_request_head(
    proxied: tuple[str, Recorder],
) -> None:
    """The configurations bound request heads (10 s): a client sending its head a
    byte every 0.2 s is cut by the proxy (HAProxy answers 408; nginx closes)."""
    url, _ = proxied
    port = int(url.split(":")[2].split("/")[0])

    async def trickle() -> float:
        started = time.monotonic()
        reader, writer = await asyncio.open_connection("127.0.0.1", port)

        async def drip() -> None:
            with contextlib.suppress(ConnectionError, OSError):
                for byte in itertools.cycle(b"POST /mcp HTTP/1.1\r\nx-slow: "):
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(0.2)

        dripping = asyncio.ensure_future(drip())
        try:
            with contextlib.suppress(ConnectionError, OSError):
                async with asyncio.timeout(60):
                    while await reader.read(65536):
                        pass
        finally:
            dripping.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await dripping
            writer.close()
        return time.monotonic() - started

    held = run(trickle(), timeout=90)
    assert held < 30, f"a trickled head held its connection through the proxy {held:.0f} s"
