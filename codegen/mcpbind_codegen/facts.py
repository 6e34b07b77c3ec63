"""Protocol facts the schema does not state, from ``schema/protocol_facts.toml``.

The schema says what a message looks like; the specification's prose says what
it means to the rest of the protocol: which params member the ``Mcp-Name``
header mirrors, which cached results a notification makes stale, which of the
sender's own capabilities a notification needs, which filter member of
``subscriptions/listen`` asks for it, and from which revision a tool's invalid
input is a tool execution error. Each fact names its source in the
specification; the generator checks it against the revision's schema (an
unknown key, a method no revision has, a member or capability the revision
lacks are errors) and writes it into the method's generated ``MethodSpec``.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from .methods import Method
from .model import GenerationError, Module, Ref, Struct

_KEYS = frozenset(
    {
        "method",
        "since",
        "source",
        "name_field",
        "stales",
        "sender_capability",
        "listen_filter",
        "input_errors_as_result",
    }
)
_LISTEN_FILTER = "SubscriptionFilter"


def load_all(paths: tuple[Path, ...]) -> list[dict[str, Any]]:
    """The facts of several files, a later file's keys for a method (and
    ``since``) replacing those of an earlier one (a project's own over the
    shipped ones)."""
    entries: list[dict[str, Any]] = []
    for path in paths:
        entries += load(path)
    return entries


def load(path: Path) -> list[dict[str, Any]]:
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read protocol facts {path}: {error}") from None
    entries: list[dict[str, Any]] = document.get("fact", [])
    for entry in entries:
        where = f"{path}: fact for {entry.get('method', '?')!r}"
        unknown = sorted(set(entry) - _KEYS)
        if unknown:
            raise GenerationError(f"{where}: unknown key {', '.join(unknown)}")
        if not isinstance(entry.get("method"), str):
            raise GenerationError(f"{where}: no method")
        if not isinstance(entry.get("source"), str) or not entry["source"].strip():
            raise GenerationError(f"{where}: no source (the specification's sentence it rests on)")
    return entries


def _order(revision: str) -> tuple[bool, str]:
    """Dated revisions by date; any other name (the draft) after them."""
    return (not re.fullmatch(r"\d{4}-\d{2}-\d{2}", revision), revision)


def apply(
    module: Module, methods: list[Method], entries: list[dict[str, Any]], *, reviewed: bool
) -> None:
    """Set the facts of ``module``'s revision on its ``methods``, checking each
    against the schema. A fact of a method the revision does not have, or of a
    later revision (``since``), is left out. A fact that does not fit the
    schema is an error in a ``reviewed`` revision (one the shipped pins name);
    in any other (a new revision nobody reviewed the facts for) it is left out
    and reported, as corrections carried forward are."""
    by_name = {m.method: m for m in methods}
    for entry in entries:
        method = by_name.get(entry["method"])
        since = entry.get("since")
        if method is None or (since is not None and _order(module.revision) < _order(since)):
            continue
        for key, value in entry.items():
            if key in ("method", "since", "source"):
                continue
            try:
                _apply_key(module, method, by_name, key, value)
            except GenerationError as error:
                if reviewed:
                    raise
                module.notes.append(f"{error}: left out")


def _apply_key(
    module: Module, method: Method, by_name: dict[str, Method], key: str, value: Any
) -> None:
    """Check one fact of ``method`` against the schema and set it."""
    where = f"protocol fact of {method.method} ({module.revision})"
    if key == "name_field":
        _expect(method.kind == "request", f"{where}: name_field on a notification")
        struct = method.params_struct
        _expect(
            struct is not None and any(f.wire_name == value for f in struct.wire_fields),
            f"{where}: its params have no member {value!r}",
        )
        method.name_field = value
    elif key == "stales":
        _expect(method.kind == "notification", f"{where}: stales on a request")
        for stale in value:
            other = by_name.get(stale)
            _expect(
                other is not None and other.kind == "request",
                f"{where}: stales {stale!r}, not a request of the revision",
            )
        method.stales = tuple(value)
    elif key == "sender_capability":
        path = tuple(value)
        sender = (
            "ServerCapabilities" if method.direction == "server_to_client" else "ClientCapabilities"
        )
        _expect(
            method.direction != "both" and _has_path(module, sender, path),
            f"{where}: {sender} has no {'.'.join(path)}",
        )
        method.sender_capability = path
    elif key == "listen_filter":
        listen = module.structs.get(_LISTEN_FILTER)
        _expect(
            listen is not None and any(f.wire_name == value for f in listen.wire_fields),
            f"{where}: {_LISTEN_FILTER} has no member {value!r}",
        )
        method.listen_filter = value
    elif key == "input_errors_as_result":
        _expect(method.kind == "request", f"{where}: input_errors_as_result on a notification")
        method.input_errors_as_result = bool(value)


def unknown_methods(entries: list[dict[str, Any]], generated: set[str]) -> list[str]:
    """The methods facts are given for that no generated package has."""
    return sorted({entry["method"] for entry in entries} - generated)


def _has_path(module: Module, struct_name: str, path: tuple[str, ...]) -> bool:
    struct: Struct | None = module.structs.get(struct_name)
    for step in path:
        if struct is None:
            return False
        field = next((f for f in struct.wire_fields if f.wire_name == step), None)
        if field is None:
            return False
        resolved = module.resolve(field.type)
        struct = module.struct(resolved.name) if isinstance(resolved, Ref) else None
    return True


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise GenerationError(message)
