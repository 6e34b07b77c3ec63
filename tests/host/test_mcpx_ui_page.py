"""mcpx ui without a browser: the capability it declares, the CSP it builds
from a resource's metadata, what its page may ask of the session, and mcpx
dev --ui telling the page that the server changed."""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from support.browser import mcpx_page, mcpx_ui
from support.peers import SUPPORT
from test_host_cli import mcpx

from mcpbind.cli._ui import content_security_policy

APPS_SERVER = [sys.executable, str(SUPPORT / "apps_server.py")]


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    asked = urllib.request.Request(
        f"{url}api/request",
        data=json.dumps(body).encode(),
        headers=headers or {"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(asked, timeout=30) as answer:
            return json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    try:
        with urllib.request.urlopen(url, timeout=60) as answer:
            return answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def test_the_host_declares_the_apps_extension_when_it_connects() -> None:
    """MCP Apps: "Clients advertise MCP Apps support using the extensions field
    in ClientCapabilities", with the MIME types they render."""
    with mcpx_ui(*APPS_SERVER) as url:
        answer = post(url, {"method": "tools/call", "params": {"name": "host-capabilities"}})
    declared = answer["result"]["structuredContent"]["extensions"]
    assert declared == {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}


def test_an_apps_own_request_meta_does_not_break_its_tool_call() -> None:
    """The App's bridge sends _meta (a progress token) with its tools/call; the
    session writes the request's own _meta (at 2026-07-28, the client's
    capabilities), so the call is answered rather than refused as invalid."""
    with mcpx_ui(*APPS_SERVER) as url:
        answer = post(
            url,
            {
                "method": "tools/call",
                "params": {
                    "name": "count-letters",
                    "arguments": {"word": "abc"},
                    "_meta": {"progressToken": 1},
                },
            },
        )
    assert answer["result"]["content"][0]["text"] == "abc has 3 letters"


def test_the_page_reaches_only_the_methods_an_app_may_send() -> None:
    with mcpx_ui(*APPS_SERVER) as url:
        refused = post(url, {"method": "prompts/get", "params": {"name": "x"}})
        broken = post(url, {"params": {}})
        config = json.loads(get(f"{url}api/config")[2])
        # The sandbox proxy is served on its own port only, with the CSP header.
        host_port = url.rsplit(":", 1)[1].strip("/")
        assert get(f"{url}sandbox.html")[0] == 404
        sandbox = f"http://127.0.0.1:{config['sandboxPort']}/sandbox.html"
        csp = json.dumps({"connectDomains": ["https://api.example.com"]})
        status, headers, _ = get(f"{sandbox}?csp={urllib.request.quote(csp)}")
        assert get(f"http://127.0.0.1:{config['sandboxPort']}/api/config")[0] == 404
    assert refused["error"]["code"] == -32602 and broken["error"]["code"] == -32602
    assert config["sandboxPort"] != int(host_port)
    assert status == 200
    assert "connect-src 'self' https://api.example.com" in headers["content-security-policy"]


def test_only_the_page_reaches_the_session() -> None:
    """A web site open in the same browser, or an App whose CSP lets it connect to the
    page's port, cannot call the server's tools: a simple (form-like) POST, one from
    another origin and one to a rebound DNS name are refused (403)."""
    call = {"method": "tools/call", "params": {"name": "model-only"}}
    with mcpx_ui(*APPS_SERVER) as url:
        port = url.rsplit(":", 1)[1].strip("/")
        json_type = {"content-type": "application/json"}
        assert post(url, call, {"content-type": "text/plain"}) == 403
        assert post(url, call, {**json_type, "origin": "http://evil.example"}) == 403
        assert post(url, call, {**json_type, "host": f"rebound.example:{port}"}) == 403
        own = post(url, call, {**json_type, "origin": url.rstrip("/")})
        by_name = post(url.replace("127.0.0.1", "localhost"), call, json_type)
    assert own["result"]["content"][0]["text"] == "for the model"
    assert by_name["result"]["content"][0]["text"] == "for the model"


def test_the_csp_allows_only_what_the_resource_declares() -> None:
    """MCP Apps: "If ui.csp is omitted, Host MUST use" a restrictive default (no
    connections, no frames); the declared domains are added to their directives;
    an entry that could end a directive or add a keyword is dropped."""
    default = content_security_policy(None).split("; ")
    assert "connect-src 'self'" in default
    assert "frame-src 'none'" in default
    assert "base-uri 'none'" in default
    assert "object-src 'none'" in default
    declared = content_security_policy(
        {
            "connectDomains": ["https://api.example.com"],
            "resourceDomains": [
                "https://cdn.example.com",
                "https://x; script-src *",
                "'unsafe-hashes'",
            ],
            "frameDomains": ["https://www.youtube.com"],
            "baseUriDomains": ["https://base.example.com"],
        }
    ).split("; ")
    assert "connect-src 'self' https://api.example.com" in declared
    assert "img-src 'self' data: blob: https://cdn.example.com" in declared
    assert "frame-src https://www.youtube.com" in declared
    assert "base-uri https://base.example.com" in declared
    assert not any(
        "script-src *" in directive or "unsafe-hashes" in directive for directive in declared
    )


def test_a_port_in_use_is_one_line() -> None:
    with mcpx_ui(*APPS_SERVER) as url:
        port = url.rsplit(":", 1)[1].strip("/")
        done = mcpx("ui", "--port", port, "--", *APPS_SERVER, expect=2)
    assert done.stderr.startswith(f"mcpx: error: --port {port}: ") and done.stderr.count("\n") == 1


SERVER_V1 = '''from mcpbind.app import App

app = App("dev-ui", "1")


@app.tool()
def version() -> str:
    """Which edition of the file is served."""
    return "first"
'''


def test_dev_relays_a_server_message_larger_than_64_kib(tmp_path: Path) -> None:
    """An App's HTML with its scripts inlined easily passes 64 KiB, on one line
    of stdio: mcpx dev relays it whole to its client (here mcpx ui)."""
    source = tmp_path / "server.py"
    source.write_text(
        SERVER_V1
        + '\n\n@app.resource("ui://big/app.html", mime_type="text/html;profile=mcp-app")\n'
        + 'def big() -> str:\n    return "<p>" + "x" * 300_000 + "</p>"\n'
    )
    with mcpx_page("dev", "--ui", "--ui-port", "0", str(source)) as url:
        read = post(url, {"method": "resources/read", "params": {"uri": "ui://big/app.html"}})
    assert len(read["result"]["contents"][0]["text"]) == 300_007


def test_dev_ui_tells_the_page_when_the_server_changed(tmp_path: Path) -> None:
    """mcpx dev --ui: an edit of the server's file restarts it; the page, long-polling
    /api/changes, hears of it and lists the new tools."""
    source = tmp_path / "server.py"
    source.write_text(SERVER_V1)
    with mcpx_page("dev", "--ui", "--ui-port", "0", str(source)) as url:
        first = json.loads(get(f"{url}api/changes?since=-1")[2])["generation"]
        listed = post(url, {"method": "tools/list"})["result"]["tools"]
        assert [tool["name"] for tool in listed] == ["version"]
        source.write_text(
            SERVER_V1
            + '\n\n@app.tool()\ndef bye() -> str:\n    """Say goodbye."""\n    return "bye"\n'
        )
        deadline = time.monotonic() + 120
        generation = first
        while generation == first:
            assert time.monotonic() < deadline, "the page never heard of the change"
            generation = json.loads(get(f"{url}api/changes?since={first}")[2])["generation"]
        names: list[str] = []
        while names != ["bye", "version"] and time.monotonic() < deadline:
            time.sleep(0.2)  # the listings after a restart may arrive one kind at a time
            names = sorted(
                tool["name"] for tool in post(url, {"method": "tools/list"})["result"]["tools"]
            )
    assert names == ["bye", "version"]
