"""``mcpx run TARGET``: serve a server (see :mod:`.targets`) over stdio, or
Streamable HTTP with ``--http``; ``mcpx dev TARGET``: the same, started again
whenever a Python file of its directory changes (:mod:`.reload`), with the
MCP Inspector in front of it on ``--inspector``."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from ..app import App, Audit, LifespanError, PinError, Pins
from ..serving import run_http, run_stdio
from ..stores import Store
from ._commands import main
from ._inspector import run_inspector
from ._reload import proxy_stdio, restart_http
from ._targets import Target, load_server, parse_target, server_of
from ._ui import run_ui_on

F = TypeVar("F", bound=Callable[..., Any])


def http_options(command: F) -> F:
    for option in reversed(
        (
            click.option(
                "--http", "use_http", is_flag=True, help="Serve Streamable HTTP, not stdio."
            ),
            click.option("--host", default="127.0.0.1", show_default=True, help="For --http."),
            click.option("--port", type=int, default=8000, show_default=True, help="For --http."),
            click.option("--path", default="/mcp", show_default=True, help="For --http."),
            click.option(
                "--cwd",
                type=click.Path(file_okay=False, exists=True),
                help="Run in this directory.",
            ),
        )
    ):
        command = option(command)
    return command


@main.command(name="run")
@click.argument("target")
@http_options
def run_command(
    target: str, use_http: bool, host: str, port: int, path: str, cwd: str | None
) -> int:
    """Serve TARGET: a file (server.py, server.py:app), a module (pkg.server[:app]) or a
    configuration entry (mcp.json:name). Over stdio unless --http; prints where it listens."""
    if cwd is not None:
        os.chdir(cwd)
    chosen = parse_target(target)
    if chosen.entry is not None:
        return _run_entry(chosen, use_http)
    found = load_server(chosen)
    name = found.name if isinstance(found, App) else chosen.name
    if not use_http:
        click.echo(f"{name}: serving MCP over stdio", err=True)
    if isinstance(found, App):  # through the app, so that its lifespan runs around serving
        found.run("http" if use_http else "stdio", host=host, port=port, path=path)
    elif use_http:
        run_http(server_of(found), host=host, port=port, path=path, name=name)
    else:
        run_stdio(server_of(found))
    return 0


def _run_entry(target: Target, use_http: bool) -> int:
    entry = target.entry
    assert entry is not None
    if entry.transport != "stdio" or entry.command is None:
        raise click.UsageError(
            f"{target.spec}: a server reached by URL runs elsewhere ({entry.url})"
        )
    if use_http:
        raise click.UsageError(
            "--http is for Python servers; a configuration entry runs as written"
        )
    if entry.cwd is not None:
        os.chdir(entry.cwd)
    environment = {**os.environ, **entry.env}
    try:
        os.execvpe(entry.command, [entry.command, *entry.args], environment)
    except OSError as error:
        raise click.UsageError(f"cannot run {entry.command!r}: {error.strerror or error}") from None


@main.command(name="serve")
@click.argument("config", type=click.Path(dir_okay=False))
@http_options
@click.option(
    "--pin",
    "pin",
    type=click.Path(dir_okay=False),
    help="Serve only the tool, prompt and template definitions approved in this pin file.",
)
@click.option(
    "--approve",
    is_flag=True,
    help="With --pin: connect to every server, write what each lists as the pins, and exit.",
)
@click.option(
    "--audit",
    "audit_to",
    metavar="FILE",
    help="Append a JSON line per proxied call to FILE ('-': the mcpbind.audit logger).",
)
@click.option(
    "--audit-arguments", is_flag=True, help="With --audit: write each call's arguments too."
)
@click.option(
    "--redact-secrets",
    is_flag=True,
    help="Replace each entry's env and headers values in what its server's answers, errors, "
    "progress and log messages carry with [redacted].",
)
@click.option(
    "--auth-issuer",
    metavar="URL",
    help="With --http: accept only access tokens of this OAuth authorization server (JWT).",
)
@click.option(
    "--resource",
    metavar="URL",
    help="With --auth-issuer: the resource the tokens must name (default: the endpoint's URL).",
)
@click.option(
    "--required-scope",
    "required_scopes",
    multiple=True,
    metavar="SCOPE",
    help="With --auth-issuer: a scope every request needs (repeatable).",
)
def serve_command(
    config: str,
    use_http: bool,
    host: str,
    port: int,
    path: str,
    cwd: str | None,
    pin: str | None,
    approve: bool,
    audit_to: str | None,
    audit_arguments: bool,
    redact_secrets: bool,
    auth_issuer: str | None,
    resource: str | None,
    required_scopes: tuple[str, ...],
) -> int:
    """Serve every server of the mcpServers file CONFIG as one server (a gateway):
    each entry's tools, prompts and resources under the entry's name as prefix
    (tool echo of entry everything: everything_echo). Over stdio unless --http.
    An entry's "scopes" (a list, or an object of tool patterns and lists) are the
    OAuth scopes a caller needs for its tools (with --auth-issuer)."""
    if cwd is not None:
        os.chdir(cwd)
    if auth_issuer is not None and not use_http:
        raise click.UsageError("--auth-issuer protects the HTTP endpoint: add --http")
    if approve and pin is None:
        raise click.UsageError("--approve writes the pins of --pin FILE: give --pin")
    pins = _pins(pin, approve)
    audit = None
    if audit_to is not None:
        audit = Audit(None if audit_to == "-" else audit_to, arguments=audit_arguments)
    gateway, names = gateway_app(config, pins=pins, audit=audit, redact=redact_secrets)
    if approve:
        assert pins is not None
        return _approve(gateway, pins, names)
    if not use_http:
        click.echo(f"{gateway.name}: serving {len(names)} servers over stdio", err=True)
    options: dict[str, Any] = {}
    if auth_issuer is not None:
        options["auth"] = _resource_server(
            auth_issuer, resource or f"http://{host}:{port}{path}", required_scopes
        )
    try:
        gateway.run("http" if use_http else "stdio", host=host, port=port, path=path, **options)
    finally:
        if audit is not None:
            audit.close()
    return 0


def gateway_app(
    config: str,
    *,
    pins: Pins | None = None,
    audit: Audit | None = None,
    store: Store | None = None,
    state_key: bytes | None = None,
    redact: bool = False,
) -> tuple[App, list[str]]:
    """The gateway over the mcpServers file ``config`` and its entries' names.
    ``store`` and ``state_key`` are the app's (see :class:`~mcpbind.app.App`):
    a gateway on several workers shares its sessions through ``store``, each
    worker keeping its own backend connections. ``redact``: each entry's
    ``env`` and ``headers`` values are taken out of what its server relays."""
    from ..host._config import ConfigError, load_config

    try:
        entries = load_config(config)
    except ConfigError as error:
        raise click.UsageError(str(error)) from None
    gateway: App = App(Path(config).stem or "gateway", store=store, state_key=state_key)
    scopes = _entry_scopes(config)
    for entry in entries.servers:
        try:
            gateway.proxy(
                entry,
                prefix=entry.name,
                allow_tools=entry.allow_tools,
                deny_tools=entry.deny_tools,
                pins=pins,
                audit=audit,
                scopes=scopes.get(entry.name),
                redact=redact,
            )
        except ValueError as error:
            raise click.UsageError(f"{config}: {error}") from None
    return gateway, [entry.name for entry in entries.servers]


def _entry_scopes(config: str) -> dict[str, dict[str, list[str]]]:
    """Each entry's ``scopes``: tool pattern -> scopes (a list stands for every tool)."""
    document = json.loads(Path(config).read_text(encoding="utf-8"))
    entries = document.get("mcpServers") or document.get("servers") or {}
    found: dict[str, dict[str, list[str]]] = {}
    for name, entry in entries.items():
        scopes = entry.get("scopes") if isinstance(entry, dict) else None
        if scopes is None:
            continue
        if isinstance(scopes, list):
            scopes = {"*": scopes}
        if not isinstance(scopes, dict) or not all(
            isinstance(needed, list) and all(isinstance(each, str) for each in needed)
            for needed in scopes.values()
        ):
            raise click.UsageError(
                f"{config}: server {name!r}: scopes is a list of scopes, or an object of "
                "tool patterns and lists of scopes"
            )
        found[name] = scopes
    return found


def _resource_server(issuer: str, resource: str, required: tuple[str, ...]) -> Any:
    from ..auth.server import JWTVerifier, ResourceServer

    try:
        verifier = JWTVerifier(issuer, resource)
        return ResourceServer(resource, [issuer], verifier, required_scopes=required)
    except ValueError as error:
        raise click.UsageError(f"--auth-issuer: {error}") from None


def _pins(pin: str | None, approve: bool) -> Pins | None:
    if pin is None:
        return None
    try:
        return Pins.load(pin, approving=approve)
    except PinError as error:
        raise click.ClickException(str(error)) from None


def _approve(gateway: App, pins: Pins, names: list[str]) -> int:
    async def listed() -> list[str]:
        lifespan = gateway.services.lifespan
        await lifespan.start()
        try:
            # Approving what a backend lists needs every backend listing it.
            unconnected = gateway.unconnected()
            if unconnected:
                raise click.ClickException(
                    "; ".join(f"{name}: {why}" for name, why in unconnected.items())
                    + " (no pins written)"
                )
            return pins.save(names)
        finally:
            await lifespan.stop()

    try:
        changes = asyncio.run(listed())
    except LifespanError as error:
        raise click.ClickException(str(error)) from None
    for line in changes:
        click.echo(line)
    click.echo(f"{pins.path}: pins of {len(names)} servers written ({len(changes)} changes)")
    return 0


@main.command()
@click.argument("target")
@http_options
@click.option(
    "--inspector",
    is_flag=True,
    help="Start the MCP Inspector (npx) on the server, which it runs through mcpx dev.",
)
@click.option(
    "--ui",
    "ui",
    is_flag=True,
    help="Host the server's MCP Apps in the browser (mcpx ui), reloaded as the server changes.",
)
@click.option(
    "--ui-port",
    type=click.IntRange(0, 65535),
    default=6280,
    show_default=True,
    help="For --ui: the page's loopback port (0: any free one).",
)
@click.option("--open", "open_browser", is_flag=True, help="For --ui: open the page.")
def dev(
    target: str,
    use_http: bool,
    host: str,
    port: int,
    path: str,
    cwd: str | None,
    inspector: bool,
    ui: bool,
    ui_port: int,
    open_browser: bool,
) -> int:
    """Serve TARGET and start it again when one of its Python files changes.

    Over stdio, mcpx stays the client's process: the new server is initialized
    as the old one was, in-flight requests get an error, and the client is told
    its lists changed. Over --http, clients open a new session. With --ui, the
    client is mcpx ui, whose page shows the changed server at once."""
    if ui and (use_http or inspector):
        raise click.UsageError(
            "--ui serves the server to mcpx ui over stdio: no --http, --inspector"
        )
    if (ui_port != 6280 or open_browser) and not ui:
        raise click.UsageError("--ui-port and --open are for --ui")
    if cwd is not None:
        os.chdir(cwd)
    chosen = parse_target(target)
    if chosen.file is None and chosen.module is None:
        raise click.UsageError("mcpx dev reloads Python servers: a file or a module")
    sources = chosen.sources
    if sources is None:
        raise click.UsageError(f"cannot find the sources of {target}")
    run_args = [
        "run",
        *(["--http", "--host", host, "--port", str(port), "--path", path] if use_http else []),
    ]
    child = [sys.executable, "-m", "mcpbind.cli", *run_args, chosen.portable()]
    if ui:
        return run_ui_on(
            [sys.executable, "-m", "mcpbind.cli", "dev", chosen.portable()],
            ui_port,
            open_browser,
        )
    if inspector:
        if use_http:
            url = f"http://{host}:{port}{path}"
            return run_inspector([], url, lambda: restart_http(child, sources))
        return run_inspector([sys.executable, "-m", "mcpbind.cli", "dev", chosen.portable()], None)
    if use_http:
        return restart_http(child, sources)
    return proxy_stdio(child, sources)
