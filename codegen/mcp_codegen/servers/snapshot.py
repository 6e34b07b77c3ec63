"""A server's published contract, fetched once and saved: its info, the
revision it negotiated and every page of its ``tools/list``, ``prompts/list``
and ``resources/templates/list`` answers.

Snapshots are written canonically (entries sorted by name, keys in the order
the server gives them, so that parameters keep their order), so the same
contract is the same bytes and the same sha256, which the generated
module's header names. Fetching uses the project's own client runtime: a
stdio command, a URL, or an entry of an ``mcpServers`` file through a Host.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import GenerationError

FORMAT = "mcp-codegen server snapshot 1"

# list method, result field, capability the server must declare
_LISTS = (
    ("tools/list", "tools", "tools"),
    ("prompts/list", "prompts", "prompts"),
    ("resources/templates/list", "resourceTemplates", "resources"),
)


@dataclass
class Snapshot:
    server: dict[str, Any]
    revision: str
    tools: list[dict[str, Any]] = field(default_factory=list)
    prompts: list[dict[str, Any]] = field(default_factory=list)
    resource_templates: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tools.sort(key=lambda t: str(t.get("name")))
        self.prompts.sort(key=lambda p: str(p.get("name")))
        self.resource_templates.sort(key=lambda t: str(t.get("uriTemplate")))

    @property
    def name(self) -> str:
        return str(self.server.get("name") or "server")

    @property
    def version(self) -> str:
        return str(self.server.get("version") or "")

    def document(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "server": self.server,
            "protocolVersion": self.revision,
            "tools": self.tools,
            "prompts": self.prompts,
            "resourceTemplates": self.resource_templates,
        }

    def to_json(self) -> str:
        return json.dumps(self.document(), indent=2, ensure_ascii=False) + "\n"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_json().encode()).hexdigest()


def parse(document: Any, where: str) -> Snapshot:
    if not isinstance(document, Mapping) or document.get("format") != FORMAT:
        raise GenerationError(f"{where} is not a server snapshot (no format {FORMAT!r})")

    def entries(key: str) -> list[dict[str, Any]]:
        value = document.get(key, [])
        if not isinstance(value, list) or not all(isinstance(e, dict) for e in value):
            raise GenerationError(f"{where}: {key} is not a list of objects")
        return [dict(e) for e in value]

    server = document.get("server")
    revision = document.get("protocolVersion")
    if not isinstance(server, dict) or not isinstance(revision, str):
        raise GenerationError(f"{where}: server and protocolVersion are required")
    snapshot = Snapshot(
        dict(server),
        revision,
        entries("tools"),
        entries("prompts"),
        entries("resourceTemplates"),
    )
    for kind, items, key in (
        ("tool", snapshot.tools, "name"),
        ("prompt", snapshot.prompts, "name"),
        ("resource template", snapshot.resource_templates, "uriTemplate"),
    ):
        for item in items:
            if not isinstance(item.get(key), str):
                raise GenerationError(f"{where}: a {kind} without a {key}")
    return snapshot


def load(path: Path) -> Snapshot:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GenerationError(f"cannot read {path}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise GenerationError(f"{path} is not JSON: {error}") from None
    return parse(document, str(path))


# ---------------------------------------------------------------- fetching


@dataclass(frozen=True)
class Source:
    """Where a live server is: ``command`` (stdio), ``url``, or ``config`` + ``entry``."""

    command: Sequence[str] = ()
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    config: Path | None = None
    entry: str | None = None

    def describe(self) -> str:
        if self.command:
            return " ".join(self.command)
        if self.url is not None:
            return self.url
        return f"{self.entry} in {self.config}"


async def fetch(source: Source, *, settle: float = 0.0, timeout: float = 60.0) -> Snapshot:
    """Connect to the server, wait ``settle`` seconds (servers that register
    tools after initialization announce them with a list change), list."""
    from mcp_runtime.jsonrpc import McpError

    try:
        async with asyncio.timeout(timeout), _session(source) as session:
            if settle > 0:
                await asyncio.sleep(settle)
            return await _listed(session)
    except McpError as error:
        raise GenerationError(f"{source.describe()}: {error}") from None
    except TimeoutError:
        raise GenerationError(
            f"{source.describe()}: no snapshot within {timeout:g} seconds"
        ) from None
    except OSError as error:
        raise GenerationError(f"{source.describe()}: {error.strerror or error}") from None


@contextlib.asynccontextmanager
async def _session(source: Source) -> AsyncIterator[Any]:
    from mcp_runtime.client import Client, connect_stdio

    client = Client(name="mcp-codegen", version="0.1.0")
    if source.command:
        from mcp_runtime.stdio import StdioServerParameters

        parameters = StdioServerParameters(
            command=source.command[0],
            args=list(source.command[1:]),
            stderr=asyncio.subprocess.DEVNULL,
        )
        async with connect_stdio(client, parameters) as session:
            yield session
    elif source.url is not None:
        from mcp_runtime.http import connect_http

        async with connect_http(client, source.url, headers=dict(source.headers)) as session:
            yield session
    else:
        async with _host_session(source) as session:
            yield session


@contextlib.asynccontextmanager
async def _host_session(source: Source) -> AsyncIterator[Any]:
    from mcp_runtime.host import ConfigError, Host, HostConfig, HostError, RetryPolicy, load_config

    assert source.config is not None and source.entry is not None
    try:
        entry = load_config(source.config)[source.entry]
    except ConfigError as error:
        raise GenerationError(str(error)) from None
    oauth = None
    if entry.oauth is not None:
        from mcp_runtime.auth.client import LoopbackRedirect
        from mcp_runtime.host.authorization import HostAuthorization

        oauth = HostAuthorization(LoopbackRedirect(), client_name="mcp-codegen")
    host = Host(
        HostConfig(servers=(entry,)),
        name="mcp-codegen",
        retry=RetryPolicy(max_attempts=1),
        oauth=oauth,
        server_stderr=asyncio.subprocess.DEVNULL,
    )
    async with host:
        try:
            session = host.session(entry.name)
        except HostError as error:
            raise GenerationError(f"{source.describe()}: {error}") from None
        yield session


async def _listed(session: Any) -> Snapshot:
    from mcp_runtime import lifecycle

    revision = session.client.bindings.revision(session.protocol_version)
    lists: dict[str, list[dict[str, Any]]] = {}
    for method, key, capability in _LISTS:
        lists[key] = []
        if not lifecycle.has_capability(session.server_capabilities, (capability,)):
            continue
        spec = revision.all_methods.get(method)
        if spec is None:
            continue
        cursor: Any = None
        while True:
            params = spec.params(cursor=cursor) if cursor is not None else spec.params()
            page = await session.request(spec, params)
            wire = json.loads(_encode(page))
            lists[key] += wire.get(key, [])
            cursor = wire.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                break
    info = _builtins(session.server_info) if session.server_info is not None else {}
    info = {k: v for k, v in info.items() if k in ("name", "title", "version")}
    return Snapshot(
        info,
        session.protocol_version,
        [_contract(t) for t in lists["tools"]],
        [_contract(p) for p in lists["prompts"]],
        [_contract(t) for t in lists["resourceTemplates"]],
    )


def _contract(entry: dict[str, Any]) -> dict[str, Any]:
    # Icons and _meta change without changing the contract; they are left out
    # so that they neither churn the snapshot nor fail --check.
    return {k: v for k, v in entry.items() if k not in ("icons", "_meta")}


def _encode(value: Any) -> bytes:
    from mcp_runtime import codec

    return codec.encode(value)


def _builtins(value: Any) -> dict[str, Any]:
    loaded = json.loads(_encode(value))
    return loaded if isinstance(loaded, dict) else {}


def write(path: Path, snapshot: Snapshot) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(snapshot.to_json(), encoding="utf-8")
    os.replace(temporary, path)
