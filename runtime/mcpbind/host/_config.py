"""Reading a host configuration: which servers to run and how to reach them.

Two shapes are read, the one most hosts use::

    {"mcpServers": {"files": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}, "cwd": "/x"},
                    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}

and the one with an explicit ``type`` (``stdio``, ``http`` for Streamable
HTTP, ``sse`` for the legacy HTTP+SSE transport)::

    {"servers": {"files": {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]}}}

A ``url`` entry without a ``type`` is tried as Streamable HTTP and falls back
to HTTP+SSE (``mcpbind._transports.http.client.streamable.connect_http``). Strings in
``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers`` expand
``${VAR}`` and ``${VAR:-default}`` from the environment (``${env:VAR}`` too, as
some editors write it); ``$$`` is a literal ``$``. Every entry may also set
``connectTimeout`` and ``requestTimeout`` (seconds), ``pingInterval`` (seconds
between health checks; by default 30 for servers reached by URL, whose loss
nothing else reveals, and none for stdio servers; 0 turns them off),
``healthTimeout`` (seconds a health check waits for its answer, 10 by
default), ``disabled`` and ``auth``
(handed, untouched, to the host's authorization hook; for a server reached
by URL, ``{"type": "oauth", ...}`` has the host authorize with the OAuth
client, see :class:`OAuthEntry`). Keys of other hosts
are ignored. A bad configuration raises :class:`ConfigError` naming the entry
and the field.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._names import clashing_servers

TransportKind = Literal["stdio", "http", "sse", "auto"]
"""``auto``: Streamable HTTP, falling back to HTTP+SSE."""

DEFAULT_CONNECT_TIMEOUT = 30.0
DEFAULT_PING_INTERVAL = 30.0
DEFAULT_HEALTH_TIMEOUT = 10.0

# What an explicit "type" may say, as the common hosts spell it.
_TYPES: dict[str, TransportKind] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamablehttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
_VARIABLE = re.compile(r"\$\$|\$\{(?:env:)?([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the entry and field."""


@dataclass(frozen=True)
class ServerConfig:
    """One server of a host configuration, variables expanded."""

    name: str
    transport: TransportKind
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    """Seconds for starting the server and negotiating a revision."""
    request_timeout: float | None = None
    """Default seconds for each request to it (None: no limit)."""
    ping_interval: float | None = None
    """Seconds between health checks while connected (None: none)."""
    health_timeout: float = DEFAULT_HEALTH_TIMEOUT
    """Seconds a health check waits for the server's answer: a server hung
    for longer is taken as lost (its own bound, not ``connect_timeout``)."""
    auth: Any = None
    """The entry's ``auth`` value, for :attr:`mcpbind.host.Host` ``authorize``."""
    oauth: OAuthEntry | None = None
    """What an ``auth`` of type ``oauth`` says."""
    allow_tools: tuple[str, ...] | None = None
    """``allowTools``: the only tools the host offers (names or fnmatch patterns); None: all."""
    deny_tools: tuple[str, ...] = ()
    """``denyTools``: tools the host never offers (names or fnmatch patterns)."""

    def permits(self, tool: str) -> bool:
        """Whether the host offers the server's tool ``tool``."""
        if any(fnmatch.fnmatchcase(tool, pattern) for pattern in self.deny_tools):
            return False
        return self.allow_tools is None or any(
            fnmatch.fnmatchcase(tool, pattern) for pattern in self.allow_tools
        )


@dataclass(frozen=True)
class OAuthEntry:
    """``"auth": {"type": "oauth", "clientId": ..., "clientSecret": ..., "scopes": [...]}``:
    the host authorizes with the OAuth client (:mod:`mcpbind.host._authorization`).
    Without ``clientId`` the client registers itself where the authorization
    server allows it; ``scopes`` are asked for beside those the server names."""

    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class HostConfig:
    """The servers of a configuration, in the order the file lists them.

    ``broken`` holds the entries that could not be read (an unset variable, a
    field of the wrong type), by name, with the error naming the entry and
    field; only :func:`parse_config` with ``keep_broken=True`` fills it."""

    servers: tuple[ServerConfig, ...]
    broken: Mapping[str, str] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ServerConfig:
        for server in self.servers:
            if server.name == name:
                return server
        if name in self.broken:
            raise ConfigError(self.broken[name])
        known = ", ".join(self.names) or "none"
        raise ConfigError(f"no server named {name!r} in the configuration (servers: {known})")

    @property
    def names(self) -> list[str]:
        """Every entry's name, the broken ones included."""
        return [server.name for server in self.servers] + [
            name for name in self.broken if name not in {s.name for s in self.servers}
        ]


def load_config(
    path: str | os.PathLike[str],
    environ: Mapping[str, str] | None = None,
    *,
    keep_broken: bool = False,
) -> HostConfig:
    """Read a configuration file (JSON); see :func:`parse_config` for ``keep_broken``."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise ConfigError(f"cannot read {os.fspath(path)}: {error.strerror or error}") from None
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{os.fspath(path)} is not JSON: {error}") from None
    return parse_config(document, environ, keep_broken=keep_broken)


def parse_config(
    document: Any, environ: Mapping[str, str] | None = None, *, keep_broken: bool = False
) -> HostConfig:
    """Read a configuration already decoded from JSON.

    An entry that cannot be read raises :class:`ConfigError`, unless
    ``keep_broken``: then it is left out of ``servers`` and its error kept in
    :attr:`HostConfig.broken`, so that one entry (an unset ``${TOKEN}``, say)
    does not stop the others. A document of the wrong shape always raises."""
    env = os.environ if environ is None else environ
    if not isinstance(document, Mapping):
        raise ConfigError("a configuration is a JSON object with 'mcpServers' or 'servers'")
    key = "mcpServers" if "mcpServers" in document else "servers" if "servers" in document else None
    if key is None:
        raise ConfigError("a configuration needs an 'mcpServers' (or 'servers') object")
    entries = document[key]
    if not isinstance(entries, Mapping):
        raise ConfigError(f"{key} must be an object of server entries")
    servers = []
    broken: dict[str, str] = {}
    for name, entry in entries.items():
        where = f"{key}.{name}"
        try:
            if not isinstance(entry, Mapping):
                raise ConfigError(f"{where}: an entry must be an object")
            if _get(entry, where, "disabled", bool, False):
                continue
            servers.append(_server(name, entry, where, env))
        except ConfigError as error:
            if not keep_broken or not name:
                raise
            broken[name] = str(error)
    for first, second in clashing_servers([server.name for server in servers] + list(broken)):
        raise ConfigError(
            f"{key}.{second}: the name gives the same tool prefix as {first!r} (see mcpbind.host._names)"
        )
    return HostConfig(tuple(servers), broken)


def _server(
    name: str, entry: Mapping[str, Any], where: str, env: Mapping[str, str]
) -> ServerConfig:
    if not name:
        raise ConfigError(f"{where}: a server needs a non-empty name")
    transport = _transport(entry, where)
    expand = _Expander(where, env)
    connect_timeout = _timeout(entry, where, "connectTimeout", DEFAULT_CONNECT_TIMEOUT)
    assert connect_timeout is not None
    request_timeout = _timeout(entry, where, "requestTimeout", None)
    health_timeout = _timeout(entry, where, "healthTimeout", DEFAULT_HEALTH_TIMEOUT)
    assert health_timeout is not None
    if transport == "stdio":
        if _oauth(entry, where, expand) is not None:
            raise ConfigError(f"{where}.auth: OAuth is for servers reached by URL, not stdio ones")
        for other in ("url", "headers"):
            if other in entry:
                raise ConfigError(
                    f"{where}.{other}: a stdio server (one with 'command') takes no {other}"
                )
        command = expand("command", _get(entry, where, "command", str, ""))
        if not command:
            raise ConfigError(f"{where}.command: a stdio server needs a command")
        args = _get(entry, where, "args", list, [])
        cwd = _get(entry, where, "cwd", str, None)
        return ServerConfig(
            name=name,
            transport="stdio",
            ping_interval=_ping_interval(entry, where, None),
            command=command,
            args=tuple(
                expand(f"args[{i}]", _string(arg, f"{where}.args[{i}]"))
                for i, arg in enumerate(args)
            ),
            env=_strings(entry, where, "env", expand),
            cwd=expand("cwd", cwd) if cwd is not None else None,
            auth=entry.get("auth"),
            connect_timeout=connect_timeout,
            request_timeout=request_timeout,
            health_timeout=health_timeout,
            **_tool_lists(entry, where),
        )
    for other in ("command", "args", "env", "cwd"):
        if other in entry:
            raise ConfigError(f"{where}.{other}: a server reached by URL takes no {other}")
    url_key = "serverUrl" if "serverUrl" in entry else "url"  # serverUrl: as some editors write it
    url = expand(url_key, _get(entry, where, url_key, str, ""))
    if not url:
        raise ConfigError(f"{where}.{url_key}: an HTTP server needs a url")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.{url_key}: {url!r} is not an http:// or https:// URL")
    return ServerConfig(
        name=name,
        transport=transport,
        ping_interval=_ping_interval(entry, where, DEFAULT_PING_INTERVAL),
        url=url,
        headers=_strings(entry, where, "headers", expand),
        auth=entry.get("auth"),
        oauth=_oauth(entry, where, expand),
        connect_timeout=connect_timeout,
        request_timeout=request_timeout,
        health_timeout=health_timeout,
        **_tool_lists(entry, where),
    )


def _tool_lists(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    lists: dict[str, Any] = {}
    for key, attribute in (("allowTools", "allow_tools"), ("denyTools", "deny_tools")):
        if key in entry:
            values = _get(entry, where, key, list, [])
            lists[attribute] = tuple(
                _string(value, f"{where}.{key}[{i}]") for i, value in enumerate(values)
            )
    return lists


def changed_entries(old: HostConfig, new: HostConfig) -> tuple[list[str], list[ServerConfig]]:
    """What turns ``old`` into ``new``: the names to stop, and the entries to start
    (a changed entry is both); an entry left as it was is in neither."""
    before = {server.name: server for server in old.servers}
    after = {server.name: server for server in new.servers}
    stop = [name for name, server in before.items() if after.get(name) != server]
    start = [server for name, server in after.items() if before.get(name) != server]
    return stop, start


_OAUTH_KEYS = frozenset({"type", "clientId", "clientSecret", "scopes"})


def _oauth(entry: Mapping[str, Any], where: str, expand: _Expander) -> OAuthEntry | None:
    auth = entry.get("auth")
    if not isinstance(auth, Mapping) or auth.get("type") != "oauth":
        return None
    where = f"{where}.auth"
    for key in auth:
        if key not in _OAUTH_KEYS:
            raise ConfigError(
                f"{where}.{key}: not an OAuth setting (known: {', '.join(sorted(_OAUTH_KEYS))})"
            )
    client_id = _get(auth, where, "clientId", str, None)
    secret = _get(auth, where, "clientSecret", str, None)
    if secret is not None and client_id is None:
        raise ConfigError(f"{where}.clientSecret: a client secret needs its clientId")
    scopes = _get(auth, where, "scopes", list, [])
    return OAuthEntry(
        client_id=expand("auth.clientId", client_id) if client_id is not None else None,
        client_secret=expand("auth.clientSecret", secret) if secret is not None else None,
        scopes=tuple(_string(scope, f"{where}.scopes[{i}]") for i, scope in enumerate(scopes)),
    )


def _transport(entry: Mapping[str, Any], where: str) -> TransportKind:
    declared = entry.get("type", entry.get("transport"))
    if declared is not None:
        if not isinstance(declared, str) or declared.lower() not in _TYPES:
            raise ConfigError(f"{where}.type: {declared!r} is not one of stdio, http, sse")
        return _TYPES[declared.lower()]
    if "command" in entry:
        return "stdio"
    if "url" in entry or "serverUrl" in entry:
        return "auto"
    raise ConfigError(f"{where}: an entry needs a 'command' (stdio) or a 'url' (HTTP)")


class _Expander:
    """Expands ${VAR} and ${VAR:-default} in one entry's strings."""

    def __init__(self, where: str, env: Mapping[str, str]) -> None:
        self.where = where
        self.env = env

    def __call__(self, field_name: str, value: str) -> str:
        return _VARIABLE.sub(lambda match: self._value(field_name, match), value)

    def _value(self, field_name: str, match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        value = self.env.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                raise ConfigError(
                    f"{self.where}.{field_name}: environment variable {name} is not set"
                )
            return default
        return value


def _get(entry: Mapping[str, Any], where: str, key: str, kind: type, default: Any) -> Any:
    value = entry.get(key, default)
    if value is default:
        return value
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise ConfigError(f"{where}.{key}: expected {_NAMES[kind]}, got {_json_type(value)}")
    return value


def _timeout(entry: Mapping[str, Any], where: str, key: str, default: float | None) -> float | None:
    value = entry.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ConfigError(f"{where}.{key}: expected a positive number of seconds, got {value!r}")
    return float(value)


def _ping_interval(entry: Mapping[str, Any], where: str, default: float | None) -> float | None:
    value = entry.get("pingInterval")
    if value == 0 and not isinstance(value, bool):
        return None
    return _timeout(entry, where, "pingInterval", default)


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(f"{where}: expected a string, got {_json_type(value)}")
    return value


def _strings(entry: Mapping[str, Any], where: str, key: str, expand: _Expander) -> dict[str, str]:
    values = _get(entry, where, key, dict, {})
    out: dict[str, str] = {}
    for name, value in values.items():
        out[name] = expand(f"{key}.{name}", _string(value, f"{where}.{key}.{name}"))
    return out


_NAMES: dict[type, str] = {
    str: "a string",
    list: "an array",
    dict: "an object",
    bool: "true or false",
}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"
