"""The names a host (and the gateway) gives its servers' tools and prompts.

The rule, one for the :class:`~mcpbind.host.Host` and for the gateway
(:class:`~mcpbind.app._proxy.Proxy`, :meth:`App.mount`):
``<prefix>_<name>``, the server's prefix and the tool's (or prompt's) own
name joined by one underscore (:func:`prefixed_name`). A prefix has no
underscore (``A-Z a-z 0-9 . -``, starting with a letter or digit), so a name
splits at its first underscore into its server and its own name, and two
servers never give the same name. The gateway is given its prefixes; a host
makes one of each server's name (:func:`server_prefix`: every other character
becomes ``-``), and refuses a configuration whose names give the same prefix.

Behind a host, the tool's own name has every character outside the
tool-name set of the specification (``A-Z a-z 0-9 _ - .``) replaced by ``_``.
Two names of one server that become equal are told apart by ``_2``, ``_3``
... in the server's listing order. A name longer than the specification's
128 characters keeps its first 119 and ends with ``_`` and 8 hexadecimal
digits of its SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

SEPARATOR = "_"
MAX_LENGTH = 128
_OUTSIDE = re.compile(r"[^A-Za-z0-9_.\-]")
_OUTSIDE_PREFIX = re.compile(r"[^A-Za-z0-9.\-]")


def prefixed_name(prefix: str, name: str) -> str:
    """A tool or prompt name as the host or the gateway serves it."""
    return f"{prefix}{SEPARATOR}{name}"


def server_prefix(server: str) -> str:
    """The prefix of a host's server: its name with every character outside
    ``A-Z a-z 0-9 . -`` (the underscore too) replaced by ``-``, starting with a
    letter or digit."""
    prefix = _OUTSIDE_PREFIX.sub("-", server)
    return prefix if prefix[:1].isalnum() else "s" + prefix


def sanitise(name: str) -> str:
    """``name`` with every character outside ``A-Z a-z 0-9 _ - .`` replaced by ``_``."""
    return _OUTSIDE.sub("_", name) or "_"


def qualified_names(server: str, names: Iterable[str]) -> dict[str, str]:
    """Host name → the server's own name, for one server's listing."""
    prefix = server_prefix(server)
    out: dict[str, str] = {}
    for name in names:
        base = _bounded(prefixed_name(prefix, sanitise(name)))
        candidate, n = base, 1
        while candidate in out:
            n += 1
            candidate = _bounded(f"{base}_{n}")
        out[candidate] = name
    return out


def _bounded(name: str) -> str:
    if len(name) <= MAX_LENGTH:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: MAX_LENGTH - 9]}_{digest}"


def clashing_servers(names: Iterable[str]) -> list[tuple[str, str]]:
    """Pairs of server names that become the same prefix."""
    seen: dict[str, str] = {}
    clashes = []
    for name in names:
        key = server_prefix(name)
        if key in seen:
            clashes.append((seen[key], name))
        else:
            seen[key] = name
    return clashes
