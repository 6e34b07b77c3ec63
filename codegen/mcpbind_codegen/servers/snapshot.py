"""A server's published contract, fetched once and saved: its info, the
revision it negotiated and every page of its ``tools/list``, ``prompts/list``
and ``resources/templates/list`` answers.

Snapshots are written canonically (entries sorted by name, keys in the order
the server gives them, so that parameters keep their order), so the same
contract is the same bytes and the same sha256, which the generated
module's header names. Fetching uses the project's own client runtime: a
stdio command, a URL, or an entry of an ``mcpServers`` file through a Host.

Servers may list some tools only to clients that declare a capability
(sampling, elicitation, roots): the client that fetches declares the
capabilities the bindings' users will have (``--capability``), and the
snapshot records them so that ``--check`` lists the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..model import GenerationError

FORMAT = "mcp-codegen server snapshot 1"

# The client capabilities servers gate tools on, as the fetching client declares them,
# and the Host handler that declares each one for a config entry.
CLIENT_CAPABILITIES = {"elicitation": "elicit", "roots": "list_roots", "sampling": "create_message"}
# How long a server being listed may take to exit once its stdin is closed (and
# after SIGTERM): it has nothing to save, and --timeout bounds the fetch.
_STOP_GRACE = 0.25
# How much of a failed server's stderr an error quotes.
_STDERR_TAIL = 2000

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
    capabilities: list[str] = field(default_factory=list)
    """The client capabilities declared when listing (sorted names)."""

    def __post_init__(self) -> None:
        self.capabilities = sorted(set(self.capabilities))
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
        found: dict[str, Any] = {
            "format": FORMAT,
            "server": self.server,
            "protocolVersion": self.revision,
        }
        if self.capabilities:  # absent when none: older snapshots keep their bytes
            found["clientCapabilities"] = self.capabilities
        found.update(
            tools=self.tools, prompts=self.prompts, resourceTemplates=self.resource_templates
        )
        return found

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
    capabilities = document.get("clientCapabilities", [])
    if not isinstance(capabilities, list) or not set(capabilities) <= set(CLIENT_CAPABILITIES):
        raise GenerationError(
            f"{where}: clientCapabilities is not a list of {', '.join(CLIENT_CAPABILITIES)}"
        )
    snapshot = Snapshot(
        dict(server),
        revision,
        entries("tools"),
        entries("prompts"),
        entries("resourceTemplates"),
        list(capabilities),
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


async def fetch(
    source: Source,
    *,
    settle: float = 0.0,
    timeout: float = 60.0,
    capabilities: Sequence[str] = (),
) -> Snapshot:
    """Connect to the server declaring ``capabilities`` (names of
    :data:`CLIENT_CAPABILITIES`), wait ``settle`` seconds (servers that
    register tools after initialization announce them with a list change),
    list. A server that fails is reported with the end of its stderr."""
    from mcpbind import McpError

    with tempfile.TemporaryFile() as stderr:
        try:
            async with (
                asyncio.timeout(timeout),
                _session(source, capabilities, stderr.fileno()) as session,
            ):
                if settle > 0:
                    await asyncio.sleep(settle)
                listed = await _listed(session)
                listed.capabilities = sorted(capabilities)
                return listed
        except McpError as error:
            raise GenerationError(f"{source.describe()}: {error}{_said(stderr)}") from None
        except TimeoutError:
            raise GenerationError(
                f"{source.describe()}: no snapshot within {timeout:g} seconds{_said(stderr)}"
            ) from None
        except OSError as error:
            raise GenerationError(
                f"{source.describe()}: {error.strerror or error}{_said(stderr)}"
            ) from None


def _said(stderr: Any) -> str:
    """The end of what the server wrote to stderr, to follow an error."""
    stderr.seek(0, os.SEEK_END)
    size = stderr.tell()
    stderr.seek(max(0, size - _STDERR_TAIL))
    text = stderr.read().decode("utf-8", "replace").strip()
    if not text:
        return ""
    return f"; its stderr: {'...' if size > _STDERR_TAIL else ''}{text}"


@contextlib.asynccontextmanager
async def _session(source: Source, capabilities: Sequence[str], stderr: int) -> AsyncIterator[Any]:
    from mcpbind import Client, connect_stdio

    client = Client(
        name="mcp-codegen",
        version="0.1.0",
        capabilities={name: {} for name in capabilities},
    )
    if source.command:
        from mcpbind import StdioServerParameters

        parameters = StdioServerParameters(
            command=source.command[0],
            args=list(source.command[1:]),
            stderr=stderr,
            terminate_timeout=_STOP_GRACE,
        )
        async with connect_stdio(client, parameters) as session:
            yield session
    elif source.url is not None:
        from mcpbind.http import connect_http

        async with connect_http(client, source.url, headers=dict(source.headers)) as session:
            yield session
    else:
        async with _host_session(source, capabilities, stderr) as session:
            yield session


@contextlib.asynccontextmanager
async def _host_session(
    source: Source, capabilities: Sequence[str], stderr: int
) -> AsyncIterator[Any]:
    from mcpbind.host import (
        ConfigError,
        Host,
        HostConfig,
        HostError,
        HostHandlers,
        RetryPolicy,
        load_config,
    )

    assert source.config is not None and source.entry is not None
    try:
        entry = load_config(source.config)[source.entry]
    except ConfigError as error:
        raise GenerationError(str(error)) from None
    oauth = None
    if entry.oauth is not None:
        from mcpbind.auth.client import LoopbackRedirect
        from mcpbind.host import HostAuthorization

        oauth = HostAuthorization(LoopbackRedirect(), client_name="mcp-codegen")
    # A host's clients declare the capabilities whose handlers it overrides; these
    # refuse what they are asked (-32601): the generator only lists.
    handlers = type(
        "ListingHandlers",
        (HostHandlers,),
        {
            CLIENT_CAPABILITIES[name]: _refusing(getattr(HostHandlers, CLIENT_CAPABILITIES[name]))
            for name in capabilities
        },
    )()
    host = Host(
        HostConfig(servers=(entry,)),
        handlers,
        name="mcp-codegen",
        retry=RetryPolicy(max_attempts=1),
        oauth=oauth,
        server_stderr=stderr,
    )
    async with host:
        try:
            session = host.session(entry.name)
        except HostError as error:
            raise GenerationError(f"{source.describe()}: {error}") from None
        yield session


def _refusing(refuse: Any) -> Any:
    """An override of a HostHandlers request that refuses as the base does."""

    async def handler(self: Any, server: str, params: Any, ctx: Any) -> Any:
        return await refuse(self, server, params, ctx)

    return handler


def _declares(capabilities: Any, name: str) -> bool:
    """Whether the server's capabilities (a decoded struct or a mapping) declare ``name``."""
    import msgspec

    plain = msgspec.to_builtins(capabilities) if capabilities is not None else {}
    return isinstance(plain, dict) and plain.get(name) is not None


async def _listed(session: Any) -> Snapshot:
    revision = session.client.bindings.revision(session.protocol_version)
    lists: dict[str, list[dict[str, Any]]] = {}
    for method, key, capability in _LISTS:
        lists[key] = []
        if not _declares(session.server_capabilities, capability):
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
    from mcpbind import codec

    return codec.encode(value)


def _builtins(value: Any) -> dict[str, Any]:
    loaded = json.loads(_encode(value))
    return loaded if isinstance(loaded, dict) else {}


def write(path: Path, snapshot: Snapshot) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(snapshot.to_json(), encoding="utf-8")
    os.replace(temporary, path)
