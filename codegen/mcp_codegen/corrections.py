"""The one place where upstream schema defects are corrected.

The list lives in ``schema/corrections.toml``; each entry replaces the value at
a JSON Pointer for the revisions it names. A pointer that no longer resolves is
an error, so a defect fixed upstream is noticed rather than patched twice.
"""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

from .model import Correction, GenerationError


def load(path: Path) -> list[dict[str, Any]]:
    """The corrections and field defaults of ``path``, in file order within each kind."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read corrections {path}: {error}") from None
    entries: list[dict[str, Any]] = document.get("correction", [])
    entries += [{**entry, "kind": "field_default"} for entry in document.get("field_default", [])]
    return entries


def _definitions_key(schema: dict[str, Any]) -> str:
    return "$defs" if "$defs" in schema else "definitions"


def apply(schema: dict[str, Any], revision: str, entries: list[dict[str, Any]]) -> tuple[dict[str, Any], list[Correction]]:
    """A corrected copy of ``schema`` and the corrections that were applied."""
    schema = copy.deepcopy(schema)
    applied = []
    for entry in entries:
        if revision not in entry["revisions"]:
            continue
        if entry.get("kind") == "field_default":
            applied.append(_field_default(schema, revision, entry))
            continue
        pointer = entry["pointer"].replace("{defs}", _definitions_key(schema))
        parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
        parent: Any = schema
        try:
            for part in parts[:-1]:
                parent = parent[int(part)] if isinstance(parent, list) else parent[part]
            # The last step may add a key (an `additionalProperties`), so only
            # the parent has to exist.
            last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
            parent[last] = copy.deepcopy(entry["value"])
        except (KeyError, IndexError, ValueError, TypeError):
            raise GenerationError(f"correction {entry['id']} does not apply to {revision}: no {pointer}") from None
        applied.append(Correction(entry["id"], pointer, entry["reason"]))
    return schema, applied


def _field_default(schema: dict[str, Any], revision: str, entry: dict[str, Any]) -> Correction:
    """Make ``property`` optional in the named definitions (every definition
    that has it when ``definitions`` is "*"), with ``value`` as its default
    when one is given: for fields the runtime fills in or the protocol
    defines a value for when absent."""
    key = _definitions_key(schema)
    prop = entry["property"]
    named = entry["definitions"]
    excluded = set(entry.get("except", []))
    names = [n for n in schema[key] if n not in excluded] if named == "*" else named
    changed = []
    for name in names:
        definition = schema[key].get(name)
        if definition is None and named != "*":
            raise GenerationError(f"correction {entry['id']} does not apply to {revision}: no definition {name}")
        if definition is None or prop not in definition.get("properties", {}):
            if named != "*":
                raise GenerationError(f"correction {entry['id']} does not apply to {revision}: {name} has no {prop}")
            continue
        required = definition.get("required", [])
        if prop not in required and "value" not in entry:
            continue
        if prop in required:
            required.remove(prop)
        if "value" in entry:
            definition["properties"][prop]["default"] = copy.deepcopy(entry["value"])
        changed.append(name)
    if not changed:
        raise GenerationError(f"correction {entry['id']} does not apply to {revision}: no definition has {prop}")
    target = f"/{key}/{{{','.join(changed)}}}/properties/{prop}"
    if "value" in entry:
        target += f" = {entry['value']!r}"
    return Correction(entry["id"], target, entry["reason"])
