"""Pinned definitions: a proxied server's tools, prompts and resource templates
served only as they were approved.

    pins = Pins.load("gateway.pins.json")
    app.proxy(source, prefix="everything", pins=pins)

A backend may change what a tool says it does while the gateway runs (its
description, its input schema) and announce it with a list change. With pins,
each definition the backend lists is compared with the approved one by its
sha256; one that changed, or that was never approved, is *held back*: left out
of the app's lists, and a call, a prompt get or a read of it is refused with a
message saying why. One warning line is logged per held definition (per new
sha256). The others keep working.

The pin file has one section per backend, each a server snapshot in the format
the typed bindings for servers write (``mcp-codegen server``: ``format``,
``server``, ``protocolVersion``, ``tools``, ``prompts``, ``resourceTemplates``)
plus ``sha256``: each definition's digest by kind and name. A section can be
read back by ``mcp-codegen server --snapshot``. A definition's digest is the
sha256 of its canonical JSON (keys sorted, no spaces) without ``icons`` and
``_meta``, the members the bindings' snapshots leave out too.

Approving (``mcpx serve CONFIG --pin FILE --approve``) connects to every
backend, lists, and writes what it saw as the new pins.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

FORMAT = "mcp-runtime gateway pins 1"
SNAPSHOT_FORMAT = "mcp-codegen server snapshot 1"  # the bindings' snapshot format

# The proxy's kinds that are pinned: the snapshot member holding them, their key, their word.
PINNED = {
    "tools": ("tools", "name", "tool"),
    "prompts": ("prompts", "name", "prompt"),
    "templates": ("resourceTemplates", "uriTemplate", "resource template"),
}


class PinError(ValueError):
    """A pin file that cannot be read or used (one line: the file and why)."""


def contract(item: Mapping[str, object]) -> dict[str, object]:
    """A definition as pinned: without its icons and ``_meta``."""
    return {key: value for key, value in item.items() if key not in ("icons", "_meta")}


def digest(item: Mapping[str, object]) -> str:
    """The sha256 of a definition's contract, as canonical JSON."""
    text = json.dumps(contract(item), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


class Pins:
    """The approved definitions of each backend, read from ``path``.

    ``approving``: admit everything and remember it, for :meth:`save`."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        sections: Mapping[str, Mapping[str, Any]] | None = None,
        *,
        approving: bool = False,
    ) -> None:
        self.path = Path(path)
        self.approving = approving
        self.sections: dict[str, dict[str, Any]] = {
            name: dict(section) for name, section in (sections or {}).items()
        }
        # What each backend listed last: kind -> key -> definition, and its server and revision.
        self.seen: dict[str, dict[str, dict[str, dict[str, Any]]]] = {}
        self.servers: dict[str, tuple[dict[str, Any], str]] = {}
        self._reported: set[tuple[str, str, str, str]] = set()

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, approving: bool = False) -> Pins:
        """The pins of ``path``; a missing file is an error unless ``approving``."""
        where = Path(path)
        try:
            text = where.read_text(encoding="utf-8")
        except FileNotFoundError:
            if approving:
                return cls(where, approving=True)
            raise PinError(
                f"no pin file at {where}: write it with `mcpx serve CONFIG --pin {where} --approve`"
            ) from None
        except OSError as error:
            raise PinError(f"cannot read {where}: {error.strerror or error}") from None
        try:
            document = json.loads(text)
        except json.JSONDecodeError as error:
            raise PinError(f"{where} is not JSON: {error}") from None
        if not isinstance(document, dict) or document.get("format") != FORMAT:
            raise PinError(f"{where} is not a pin file (no format {FORMAT!r})")
        servers = document.get("servers")
        if not isinstance(servers, dict) or not all(
            isinstance(section, dict) and isinstance(section.get("sha256"), dict)
            for section in servers.values()
        ):
            raise PinError(f"{where}: servers is not an object of snapshots with their sha256")
        return cls(where, servers, approving=approving)

    # ------------------------------------------------------------ serving

    def connected(self, backend: str, server: Any, revision: str) -> None:
        """What the backend said of itself, for the snapshot :meth:`save` writes."""
        info = {
            key: value
            for key, value in (server or {}).items()
            if key in ("name", "title", "version")
        }
        self.servers[backend] = (info, revision)

    def admit(self, backend: str, kind: str, key: str, item: Mapping[str, object]) -> str | None:
        """None when ``backend``'s definition ``key`` of ``kind`` is served, else
        why it is held back (logged once per definition and sha256)."""
        pinned = PINNED.get(kind)
        if pinned is None:
            return None
        self.seen.setdefault(backend, {}).setdefault(kind, {})[key] = contract(item)
        if self.approving:
            return None
        member, _, word = pinned
        section = self.sections.get(backend)
        approved = section["sha256"].get(member, {}).get(key) if section is not None else None
        now = digest(item)
        if approved == now:
            return None
        if approved is None:
            why = "is not pinned"
        else:
            why = f"changed since it was pinned (sha256 {now[:12]}, pinned {approved[:12]})"
        message = (
            f"{word} {key!r} of {backend!r} is held back: its definition {why}; "
            f"approve it with `mcpx serve CONFIG --pin {self.path} --approve`"
        )
        if (backend, kind, key, now) not in self._reported:
            self._reported.add((backend, kind, key, now))
            logger.warning("%s", message)
        return message

    # ------------------------------------------------------------ approving

    def snapshot(self, backend: str) -> dict[str, Any]:
        """The section of ``backend`` as last listed: a bindings snapshot with ``sha256``."""
        info, revision = self.servers.get(backend, ({}, ""))
        section: dict[str, object] = {
            "format": SNAPSHOT_FORMAT,
            "server": info,
            "protocolVersion": revision,
        }
        digests: dict[str, dict[str, str]] = {}
        seen = self.seen.get(backend, {})
        for kind, (member, _, _) in PINNED.items():
            items = seen.get(kind, {})
            section[member] = [items[key] for key in sorted(items)]
            digests[member] = {key: digest(items[key]) for key in sorted(items)}
        section["sha256"] = digests
        return section

    def save(self, backends: list[str]) -> list[str]:
        """Write the pins of ``backends`` as last listed (the other sections
        kept); the lines saying what changed against the file's pins."""
        changes: list[str] = []
        sections = dict(self.sections)
        for backend in backends:
            fresh = self.snapshot(backend)
            before = self.sections.get(backend, {}).get("sha256", {})
            for kind, (member, _, word) in PINNED.items():
                old, new = before.get(member, {}), fresh["sha256"][member]
                for key in sorted(set(old) | set(new)):
                    if key not in old:
                        changes.append(f"{backend}: {word} {key!r} pinned")
                    elif key not in new:
                        changes.append(f"{backend}: {word} {key!r} no longer listed")
                    elif old[key] != new[key]:
                        changes.append(f"{backend}: {word} {key!r} approved as changed")
            sections[backend] = fresh
        document = {
            "format": FORMAT,
            "servers": {name: sections[name] for name in sorted(sections)},
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.tmp")
        temporary.write_text(
            json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        os.replace(temporary, self.path)
        self.sections = sections
        return changes
