"""``mcpx ui``: a host of MCP Apps (``io.modelcontextprotocol/ui``) in the browser.

mcpx connects to the server as a host that declares the extension, and serves
two loopback origins (two ports): the host page, which lists the server's
tools, calls one with a form built from its input schema and renders the UI
resource its ``_meta.ui.resourceUri`` names; and the sandbox proxy, the page
the specification puts between the host and the App: an iframe on another
origin whose Content-Security-Policy header is built from the resource's
``_meta.ui.csp``, which writes the App's HTML into an inner sandboxed iframe
and relays the App's JSON-RPC messages (``postMessage``) to the host page.

The host page reaches the MCP session through ``POST /api/request`` (the
methods an App may send: tools, resources), and hears list changes (``mcpx dev
--ui`` restarting the server) by long-polling ``/api/changes``. The page's
scripts are the files next to this module (``ui_page/``); no bundler, no npm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import webbrowser
from collections.abc import Mapping
from importlib import resources
from typing import Any
from urllib.parse import parse_qs

import click

from .. import codec
from .._core.extras import MissingExtra
from .._core.jsonrpc import INVALID_PARAMS, ConnectionClosed, McpError
from .._transports.http.asgi import Receive, Scope, Send
from ..host import Host, HostError
from ._commands import Options, main, run_work, target_options
from ._output import Failed, Terminal

EXTENSION = "io.modelcontextprotocol/ui"
MIME_TYPE = "text/html;profile=mcp-app"
# What the host declares when it connects: it renders HTML Apps.
CAPABILITIES = {"extensions": {EXTENSION: {"mimeTypes": [MIME_TYPE]}}}
# What the page may ask of the session: the requests an App may send to its server.
FORWARDED = frozenset(
    {
        "tools/call",
        "tools/list",
        "resources/read",
        "resources/list",
        "resources/templates/list",
    }
)
# A CSP source that could end its directive or add a keyword is dropped.
_UNSAFE_SOURCE = re.compile(r"[;,\s'\"]")
STOP_GRACE = 10.0
"""Seconds mcpx ui has to exit once asked, before it is killed."""
CHANGES_WAIT = 25.0
"""Seconds a long-poll of /api/changes is held before it is answered unchanged."""

_PAGE_FILES = {
    "/": ("host.html", "text/html; charset=utf-8"),
    "/host.js": ("host.js", "text/javascript; charset=utf-8"),
    "/host.css": ("host.css", "text/css; charset=utf-8"),
}
_SANDBOX_FILES = {
    "/sandbox.html": ("sandbox.html", "text/html; charset=utf-8"),
    "/sandbox.js": ("sandbox.js", "text/javascript; charset=utf-8"),
}


def content_security_policy(csp: Mapping[str, Any] | None) -> str:
    """The CSP header of the sandbox from a resource's ``_meta.ui.csp``: no
    network, frame or base URI beyond what the resource declares (the
    specification's restrictive default); inline scripts and styles allowed,
    as Apps are single HTML documents."""
    csp = csp or {}

    def sources(key: str) -> str:
        values = csp.get(key)
        if not isinstance(values, list):
            return ""
        kept = [v for v in values if isinstance(v, str) and v and not _UNSAFE_SOURCE.search(v)]
        return " ".join(kept)

    resource, connect = sources("resourceDomains"), sources("connectDomains")
    frame, base = sources("frameDomains"), sources("baseUriDomains")
    scripts = "'self' 'unsafe-inline' 'unsafe-eval' blob: data:"
    directives = [
        "default-src 'self' 'unsafe-inline'",
        f"script-src {scripts} {resource}",
        f"style-src 'self' 'unsafe-inline' blob: data: {resource}",
        f"img-src 'self' data: blob: {resource}",
        f"font-src 'self' data: blob: {resource}",
        f"media-src 'self' data: blob: {resource}",
        f"connect-src 'self' {connect}",
        f"worker-src 'self' blob: {resource}",
        f"frame-src {frame}" if frame else "frame-src 'none'",
        "object-src 'none'",
        f"base-uri {base}" if base else "base-uri 'none'",
    ]
    return "; ".join(directive.strip() for directive in directives)


def _page_file(name: str) -> bytes:
    return resources.files(__package__).joinpath("ui_page", name).read_bytes()


class Changes:
    """Counts the changes of the server's lists (``mcpx dev --ui`` restarting it:
    the host lists everything again), for the page to render anew."""

    def __init__(self) -> None:
        self.generation = 0
        self.changed = asyncio.Event()

    async def watch(self, host: Host) -> None:
        while True:
            seen = _listed(host)
            # A new listing is new objects, even when equal: the App's HTML may have changed.
            await host.wait_until(lambda h: _listed(h) != seen)
            self.generation += 1
            self.wake()

    def wake(self) -> None:
        """Answer the pending long-polls (at a change, or when mcpx exits)."""
        self.changed.set()
        self.changed = asyncio.Event()


def _listed(host: Host) -> list[int]:
    return [id(entry) for entry in (*host.tools, *host.resources)]


class HostPage:
    """The ASGI application of both origins: the host page and its API on one,
    the sandbox proxy on the other (told apart by the port it was reached on)."""

    def __init__(self, host: Host, server: str, changes: Changes, sandbox_port: int) -> None:
        self.host = host
        self.server = server
        self.changes = changes
        self.sandbox_port = sandbox_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        path: str = scope["path"]
        port = scope["server"][1]
        if port == self.sandbox_port:
            await self._sandbox(scope, path, send)
            return
        if not _own(scope, port):
            await _answer(send, 403, b"not this page's request", "text/plain")
            return
        if path in _PAGE_FILES and scope["method"] == "GET":
            name, kind = _PAGE_FILES[path]
            await _answer(send, 200, _page_file(name), kind)
        elif path == "/api/config" and scope["method"] == "GET":
            await _json(send, {"sandboxPort": self.sandbox_port, "server": self.server})
        elif path == "/api/changes" and scope["method"] == "GET":
            query = parse_qs(scope.get("query_string", b"").decode())
            seen = (query.get("since") or [""])[0]
            if seen == str(self.changes.generation):
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.changes.changed.wait(), CHANGES_WAIT)
            await _json(send, {"generation": self.changes.generation})
        elif path == "/api/request" and scope["method"] == "POST":
            await self._request(await _body(receive), send)
        elif path == "/favicon.ico":
            await _answer(send, 204, b"", "image/x-icon")
        else:
            await _answer(send, 404, b"not found", "text/plain")

    async def _sandbox(self, scope: Scope, path: str, send: Send) -> None:
        if path not in _SANDBOX_FILES or scope["method"] != "GET":
            await _answer(send, 404, b"not found", "text/plain")
            return
        name, kind = _SANDBOX_FILES[path]
        headers = []
        if name == "sandbox.html":
            query = parse_qs(scope.get("query_string", b"").decode())
            try:
                csp = json.loads((query.get("csp") or ["{}"])[0])
            except ValueError:
                csp = {}
            policy = content_security_policy(csp if isinstance(csp, dict) else None)
            headers.append((b"content-security-policy", policy.encode()))
        await _answer(send, 200, _page_file(name), kind, headers)

    async def _request(self, body: bytes, send: Send) -> None:
        try:
            asked = json.loads(body)
            method, params = asked["method"], asked.get("params") or {}
            if method not in FORWARDED or not isinstance(params, dict):
                raise ValueError(method)
        except (ValueError, KeyError, TypeError):
            await _json(send, {"error": {"code": INVALID_PARAMS, "message": "not a request"}})
            return
        # The App's own _meta (its progress token) is not this session's: the
        # session writes the request's _meta the revision needs.
        params.pop("_meta", None)
        try:
            result = await self.host.request(self.server, method, params)
        except McpError as error:
            await _json(send, {"error": {"code": error.code, "message": error.message}})
            return
        except (HostError, ConnectionClosed, ValueError) as error:
            # msgspec's ValidationError is a ValueError: params the revision cannot carry.
            await _json(send, {"error": {"code": INVALID_PARAMS, "message": str(error)}})
            return
        await _answer(send, 200, b'{"result":' + codec.encode(result) + b"}", "application/json")


def _own(scope: Scope, port: int) -> bool:
    """Whether a request is the page's own: addressed to this loopback port by
    name (not a rebound DNS name), and a POST sent as JSON from the page's origin.
    A JSON POST from another origin (a web site, the App's sandbox) needs a CORS
    preflight this server never grants, so only the page reaches the session."""
    headers: dict[str, str] = {
        name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope["headers"]
    }
    authorities = {f"127.0.0.1:{port}", f"localhost:{port}"}
    if headers.get("host") not in authorities:
        return False
    if scope["method"] != "POST":
        return True
    origin: str | None = headers.get("origin")
    if origin is not None and origin.removeprefix("http://") not in authorities:
        return False
    return headers.get("content-type", "").split(";")[0].strip() == "application/json"


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


async def _json(send: Send, value: Any) -> None:
    await _answer(send, 200, json.dumps(value).encode(), "application/json")


async def _answer(
    send: Send,
    status: int,
    body: bytes,
    kind: str,
    headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind.encode()),
                (b"cache-control", b"no-store"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _listen(port: int) -> socket.socket:
    try:
        return socket.create_server(("127.0.0.1", port))
    except OSError as error:
        raise click.UsageError(f"--port {port}: {error.strerror}") from None


@main.command()
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=6280,
    show_default=True,
    help="The host page's loopback port (0: any free one); the sandbox takes another.",
)
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@target_options
def ui(options: Options, port: int, open_browser: bool) -> int:
    """Host the server's MCP Apps in the browser: its tools, called from forms,
    with their UI resources rendered in a sandboxed iframe (prints the page's URL)."""
    try:
        import uvicorn
    except ImportError as error:
        raise click.ClickException(str(MissingExtra("mcpx ui", "http", error.name))) from None
    page_socket, sandbox_socket = _listen(port), _listen(0)

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        changes = Changes()
        watching = asyncio.create_task(changes.watch(host))
        app = HostPage(host, name, changes, sandbox_socket.getsockname()[1])
        loop = asyncio.get_running_loop()

        class Serving(uvicorn.Server):
            def handle_exit(self, sig: int, frame: Any) -> None:
                super().handle_exit(sig, frame)
                # A page's pending long-poll of /api/changes does not hold up the exit.
                loop.call_soon_threadsafe(changes.wake)

        web = Serving(
            uvicorn.Config(
                app,
                log_level="warning",
                access_log=False,
                lifespan="off",
                timeout_graceful_shutdown=5,
            )
        )
        serving = asyncio.create_task(web.serve(sockets=[page_socket, sandbox_socket]))
        try:
            while not web.started:
                if serving.done():
                    raise Failed(f"cannot serve on 127.0.0.1:{port}")
                await asyncio.sleep(0.05)
            url = f"http://127.0.0.1:{page_socket.getsockname()[1]}/"
            click.echo(f"mcpx ui: {url}")
            sys.stdout.flush()
            if open_browser:
                webbrowser.open(url)
            await serving
        finally:
            web.should_exit = True
            watching.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving
        return 0

    return run_work(options, work, CAPABILITIES)


def run_ui_on(server: list[str], port: int, open_browser: bool) -> int:
    """``mcpx ui`` on the server that ``server`` (a command) serves over stdio:
    ``mcpx dev --ui``, whose server is ``mcpx dev TARGET``, which restarts it
    as its files change and tells mcpx ui that its lists changed."""
    command = [sys.executable, "-m", "mcpbind.cli", "ui", "--port", str(port)]
    ui = subprocess.Popen([*command, *(["--open"] if open_browser else []), "--", *server])
    # Stopped by a signal, mcpx takes mcpx ui (and so the server) along.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    try:
        return ui.wait()
    except KeyboardInterrupt:
        return 130
    finally:
        if ui.poll() is None:
            ui.terminate()
            try:
                ui.wait(STOP_GRACE)
            except subprocess.TimeoutExpired:
                ui.kill()
                ui.wait()
