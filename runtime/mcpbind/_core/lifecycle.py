"""Protocol revisions, version negotiation and capabilities.

The generated packages (``mcpbind_protocol.v2024_11_05`` ..., or those a project
generates for itself) are the source of truth for what each revision has and
which revisions there are; this module finds them, decides which
revision a session speaks, and derives the capabilities a side declares from
the handler methods it overrides.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, cached_property
from types import ModuleType
from typing import Any, Final, NamedTuple

import msgspec
from msgspec import UNSET

from ..methods import MethodSpec, Selective
from . import jsonrpc
from .jsonrpc import McpError

# The _meta members of 2026-07-28, where a request carries what the handshake
# negotiated before and a result names its server.
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel"
SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo"
SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId"


DEFAULT_PACKAGE = "mcpbind_protocol"
"""The generated package this distribution ships; a project may generate its own."""


@dataclass(frozen=True)
class Revision:
    """One generated protocol revision package."""

    version: str
    package: ModuleType

    @property
    def root(self) -> str:
        """The generated package this revision belongs to (``mcpbind_protocol``)."""
        return self.package.__name__.rpartition(".")[0]

    @property
    def status(self) -> str:
        """``released``, ``draft`` or ``unpinned`` (packages generated before
        STATUS existed say only whether they are the draft)."""
        status: str = getattr(
            self.package,
            "STATUS",
            "draft" if getattr(self.package, "UNSTABLE", False) else "released",
        )
        return status

    @property
    def methods(self) -> ModuleType:
        module: ModuleType = self.package.methods
        return module

    @property
    def all_methods(self) -> Mapping[str, MethodSpec[Any, Any]]:
        table: Mapping[str, MethodSpec[Any, Any]] = self.package.methods.METHODS
        return table

    @property
    def has_handshake(self) -> bool:
        return "initialize" in self.all_methods

    def table(self, name: str) -> Mapping[str, MethodSpec[Any, Any]]:
        """A method table of the revision; empty where the revision has none (INPUT_REQUESTS before 2026-07-28)."""
        table: Mapping[str, MethodSpec[Any, Any]] = getattr(self.package.methods, name, {})
        return table

    def input_request_type(self, method: str) -> type[Any]:
        """The message type of the input request ``method`` (2026-07-28 on),
        which an input-required result carries."""
        types: Mapping[str, type[Any]] = self.package.methods.INPUT_REQUEST_TYPES
        return types[method]

    def type(self, name: str) -> Any:
        return getattr(self.package, name)


class ListChange(NamedTuple):
    """A list whose changes a server announces."""

    notification: str
    """The notification announcing a change (``notifications/tools/list_changed``)."""
    listen_filter: str | None
    """The ``subscriptions/listen`` filter member asking for it (None: no revision has one)."""
    stales: tuple[str, ...]
    """The list requests whose results a change makes stale."""


@dataclass(frozen=True)
class Bindings:
    """The revisions of one generated package, found by looking into it: a
    revision is spoken as soon as its package is generated (the draft only
    when asked for by name), with no list to edit."""

    root: str
    revisions: Mapping[str, Revision]
    """Every generated revision, oldest first."""

    def revision(self, version: str) -> Revision:
        try:
            return self.revisions[version]
        except KeyError:
            raise ValueError(
                f"no generated package for protocol revision {version!r} in {self.root}"
            ) from None

    @cached_property  # read for every request on the HTTP transports
    def handshake_versions(self) -> tuple[str, ...]:
        """Revisions negotiated with initialize, oldest first (not the draft)."""
        return tuple(
            v for v, r in self.revisions.items() if r.status != "draft" and r.has_handshake
        )

    @cached_property
    def stateless_versions(self) -> tuple[str, ...]:
        """Revisions without a handshake (2026-07-28 on), oldest first (not
        the draft): every request carries its protocol version and client
        capabilities in ``_meta``."""
        return tuple(
            v for v, r in self.revisions.items() if r.status != "draft" and not r.has_handshake
        )

    # ------------------------------------------------ protocol facts (schema/protocol_facts.toml)

    @cached_property
    def every_spec(self) -> tuple[MethodSpec[Any, Any], ...]:
        """Every method of every revision and extension package, newest revision last."""
        specs = [spec for r in self.revisions.values() for spec in r.all_methods.values()]
        index = importlib.import_module(self.root)
        for package in getattr(index, "EXTENSIONS", {}).values():
            specs += importlib.import_module(f"{package}.methods").METHODS.values()
        return tuple(specs)

    @cached_property  # read for every 2026-07-28 request on the HTTP transports
    def name_fields(self) -> Mapping[str, str]:
        """The params member ``Mcp-Name`` mirrors, by method."""
        return {s.method: s.name_field for s in self.every_spec if s.name_field is not None}

    @cached_property
    def stales(self) -> Mapping[str, tuple[str, ...]]:
        """The requests whose cached results each notification makes stale."""
        return {s.method: s.stales for s in self.every_spec if s.stales}

    @cached_property
    def cacheable(self) -> frozenset[str]:
        """The requests some notification makes stale: those whose results may be kept."""
        return frozenset(method for stale in self.stales.values() for method in stale)

    @cached_property
    def list_changes(self) -> Mapping[str, ListChange]:
        """Each list a server announces changes of, by the capability that
        declares it (``tools``, ``prompts``, ``resources``)."""
        found: dict[str, ListChange] = {}
        for spec in self.every_spec:
            path = spec.sender_capability
            if spec.direction == "server_to_client" and path[1:] == ("listChanged",):
                before = found.get(path[0])
                listen = spec.listen_filter or (before.listen_filter if before else None)
                found[path[0]] = ListChange(spec.method, listen, spec.stales)
        return found

    @property
    def newest(self) -> str:
        """What a client asks for unless told: the newest released revision, else
        (a package of unpinned revisions only) the newest it speaks."""
        spoken = self.handshake_versions + self.stateless_versions
        released = [v for v in spoken if self.revisions[v].status == "released"]
        if not spoken:
            raise ValueError(f"{self.root} has no generated revision to speak")
        return max(released or spoken)


@cache
def bindings(root: str = DEFAULT_PACKAGE) -> Bindings:
    """The revisions generated into the package ``root``."""
    index = importlib.import_module(root)
    found = {}
    for entry in pkgutil.iter_modules(getattr(index, "__path__", [])):
        if not entry.ispkg or not entry.name.startswith("v"):
            continue
        package = importlib.import_module(f"{root}.{entry.name}")
        version = getattr(package, "PROTOCOL_VERSION", None)
        if isinstance(version, str):
            found[version] = Revision(version, package)
    return Bindings(root, dict(sorted(found.items())))


def revisions() -> Mapping[str, Revision]:
    """Every revision of the shipped package, oldest first."""
    return bindings().revisions


def revision(version: str) -> Revision:
    return bindings().revision(version)


def handshake_versions() -> tuple[str, ...]:
    """The shipped package's revisions negotiated with initialize, oldest first."""
    return bindings().handshake_versions


def stateless_versions() -> tuple[str, ...]:
    """The shipped package's revisions without a handshake (2026-07-28 on)."""
    return bindings().stateless_versions


@cache
def _generated_revision(cls: type) -> str | None:
    """The protocol version of the generated package that defines ``cls``, if one does."""
    package = sys.modules.get(cls.__module__.rpartition(".")[0])
    version = getattr(package, "PROTOCOL_VERSION", None)
    return version if isinstance(version, str) and hasattr(package, "methods") else None


def _is_generated_base(cls: type, base: str) -> bool:
    return cls.__name__ == base and _generated_revision(cls) is not None


BATCHES_REMOVED: Final = "2025-06-18"
"""The first revision without JSON-RPC batches; from it on a batch is an invalid request."""


def allows_batches(version: str) -> bool:
    """Whether a peer speaking ``version`` may send a JSON-RPC batch (true
    while no revision is known yet: the first message decides)."""
    return not version or version < BATCHES_REMOVED


PRIMING_EVENTS_FROM: Final = "2025-11-25"
"""The first revision whose SSE streams start with a priming event (an event id
and empty data); clients of the earlier ones read every event's data as a
JSON-RPC message (the official Python SDK 1.x logs an error for each empty one)."""


def primes_streams(version: str) -> bool:
    """Whether an SSE stream to a peer speaking ``version`` starts with a
    priming event (false while no revision is known yet)."""
    return version >= PRIMING_EVENTS_FROM


def revision_of_handlers(handlers: object, base: str) -> Revision:
    """The revision whose generated ``base`` class (ServerHandlers/ClientHandlers)
    ``handlers`` extends, from whichever generated package defines it."""
    for cls in type(handlers).__mro__:
        if _is_generated_base(cls, base):
            version = _generated_revision(cls)
            assert version is not None
            return bindings(cls.__module__.rsplit(".", 2)[0]).revision(version)
    raise TypeError(f"{type(handlers).__name__} does not extend a generated {base} class")


def negotiate(requested: str, supported: Iterable[str]) -> str:
    """The version a server answers: the requested one if supported, else its latest."""
    offered = list(supported)
    if requested in offered:
        return requested
    return max(offered)


def overridden(handlers: object, base: str, name: str) -> bool:
    """Whether ``handlers`` overrides the generated default of method ``name``."""
    if isinstance(handlers, Selective) and not handlers.serves(name):
        return False
    for cls in type(handlers).__mro__:
        if name in cls.__dict__:
            return not _is_generated_base(cls, base)
    return False


def capabilities(
    handlers: object | None,
    base: str,
    handler_revision: Revision | None,
    incoming_tables: str | tuple[str, ...],
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The capabilities object a side declares: one entry per capability whose
    methods its handlers implement, merged with what the user adds."""
    declared: dict[str, Any] = {}
    tables = (incoming_tables,) if isinstance(incoming_tables, str) else incoming_tables
    specs = (
        [spec for name in tables for spec in handler_revision.table(name).values()]
        if handler_revision
        else []
    )
    if handlers is not None:
        for spec in specs:
            if not spec.capability or not overridden(handlers, base, spec.handler):
                continue
            entry = declared.setdefault(spec.capability[0], {})
            if len(spec.capability) > 1:
                entry[spec.capability[1]] = True
    for key, value in (extra or {}).items():
        if isinstance(value, Mapping) and isinstance(declared.get(key), dict):
            declared[key] = {**declared[key], **value}
        else:
            declared[key] = value
    return declared


def has_capability(capabilities: Any, path: tuple[str, ...]) -> bool:
    """Whether a decoded capabilities object declares ``path`` (("resources", "subscribe"))."""
    node: Any = capabilities
    for index, key in enumerate(path):
        if node is None:
            return False
        if isinstance(node, msgspec.Struct):  # first: Mapping's test is an ABC's, slow
            value = getattr(node, _attr(key), None)
        else:
            value = node.get(key) if isinstance(node, Mapping) else getattr(node, _attr(key), None)
        if value is None or value is False or _is_unset(value):
            return False
        if index == len(path) - 1:
            return True
        node = value
    return True


def missing_capabilities(paths: Iterable[tuple[str, ...]], why: str = "") -> McpError:
    """The error for a request the client's capabilities do not allow: each
    path (("extensions", "io.modelcontextprotocol/tasks")) nested as
    ``requiredCapabilities`` the way a capabilities object would declare it."""
    required: dict[str, Any] = {}
    names = []
    for path in paths:
        node = required
        for key in path:
            node = node.setdefault(key, {})
        names.append(".".join(path))
    return McpError(
        jsonrpc.MISSING_REQUIRED_CLIENT_CAPABILITY,
        f"Missing required client capability: {why or ', '.join(sorted(names))}",
        {"requiredCapabilities": required},
    )


@cache  # called for every capability check, i.e. on every request a client sends
def _attr(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _is_unset(value: Any) -> bool:
    return value is UNSET
