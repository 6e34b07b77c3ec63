"""The names a host gives its servers' tools and prompts.

The rule: ``<server>__<name>``, the server's name and the tool's (or
prompt's) own name joined by two underscores, with every character outside
the tool-name set of the specification (``A-Z a-z 0-9 _ - .``) replaced by
``_``. Names of different servers never collide because server names are
checked to stay distinct after that replacement. Two names of one server that
become equal are told apart by ``_2``, ``_3`` ... in the server's listing
order. A name longer than the specification's 128 characters keeps its first
119 and ends with ``_`` and 8 hexadecimal digits of its SHA-256.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable

SEPARATOR = "__"
MAX_LENGTH = 128
_OUTSIDE = re.compile(r"[^A-Za-z0-9_.\-]")


def sanitise(name: str) -> str:
    """``name`` with every character outside ``A-Z a-z 0-9 _ - .`` replaced by ``_``."""
    return _OUTSIDE.sub("_", name) or "_"


def qualified_names(server: str, names: Iterable[str]) -> dict[str, str]:
    """Host name → the server's own name, for one server's listing."""
    prefix = sanitise(server) + SEPARATOR
    out: dict[str, str] = {}
    for name in names:
        base = _bounded(prefix + sanitise(name))
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
        key = sanitise(name)
        if key in seen:
            clashes.append((seen[key], name))
        else:
            seen[key] = name
    return clashes
