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
    try:
        with path.open("rb") as handle:
            entries: list[dict[str, Any]] = tomllib.load(handle).get("correction", [])
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read corrections {path}: {error}") from None
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
