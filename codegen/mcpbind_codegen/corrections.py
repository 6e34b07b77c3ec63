"""The one place where upstream schema defects are corrected.

The list lives in ``schema/corrections.toml``; each entry replaces the value at
a JSON Pointer for the revisions it names. A pointer that no longer resolves is
an error, so a defect fixed upstream is noticed rather than patched twice.

A revision the file does not name (a new one, or a schema file generated under
a name of its own) takes the corrections of the nearest older revision the file
names: each is applied where its path still matches and reported as no longer
applicable where it does not, since nobody has reviewed them for that schema.
"""

from __future__ import annotations

import copy
import re
import tomllib
from pathlib import Path
from typing import Any

from .model import Correction, Corrections, GenerationError


def load_all(paths: tuple[Path, ...]) -> list[dict[str, Any]]:
    """The corrections of several files, a later file's entries replacing
    every entry of an earlier one with the same id (a project's own file over
    the shipped one)."""
    entries: list[dict[str, Any]] = []
    for path in paths:
        own = load(path)
        ids = {entry["id"] for entry in own}
        entries = [entry for entry in entries if entry["id"] not in ids] + own
    return entries


def load(path: Path) -> list[dict[str, Any]]:
    """The corrections, field defaults and discriminators of ``path``, in
    file order within each kind."""
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read corrections {path}: {error}") from None
    entries: list[dict[str, Any]] = document.get("correction", [])
    entries += [{**entry, "kind": "field_default"} for entry in document.get("field_default", [])]
    entries += [{**entry, "kind": "discriminator"} for entry in document.get("discriminator", [])]
    entries += [{**entry, "kind": "inherited_meta"} for entry in document.get("inherited_meta", [])]
    return entries


def _definitions_key(schema: dict[str, Any]) -> str:
    return "$defs" if "$defs" in schema else "definitions"


def _order(revision: str) -> tuple[bool, str]:
    """Dated revisions by date; any other name (the draft) after them."""
    return (not re.fullmatch(r"\d{4}-\d{2}-\d{2}", revision), revision)


def carried_from(revision: str, entries: list[dict[str, Any]]) -> str | None:
    """The revision whose corrections ``revision`` takes: itself when the file
    names it, else the nearest older one it names (None if there is none)."""
    named = {r for entry in entries for r in entry["revisions"]}
    if revision in named:
        return revision
    older = [r for r in named if _order(r) < _order(revision)]
    return max(older, key=_order) if older else None


def apply(
    schema: dict[str, Any], revision: str, entries: list[dict[str, Any]]
) -> tuple[dict[str, Any], Corrections]:
    """A corrected copy of ``schema`` and the corrections of ``revision``."""
    schema = copy.deepcopy(schema)
    entries = [entry for entry in entries if "extension" not in entry]
    source = carried_from(revision, entries)
    result = Corrections(carried_from=source if source != revision else None)
    for entry in entries:
        if source is None or source not in entry["revisions"]:
            continue
        try:
            result.entries.append(_apply_one(schema, revision, entry))
        except GenerationError:
            if result.carried_from is None:
                raise
            # A carried correction whose path no longer matches: the defect
            # may be fixed, or moved; either way it is not ours to guess.
            result.entries.append(
                Correction(entry["id"], _target(schema, entry), entry["reason"], applied=False)
            )
    return schema, result


def apply_extension(
    schema: dict[str, Any], name: str, entries: list[dict[str, Any]]
) -> tuple[dict[str, Any], Corrections]:
    """A corrected copy of a published extension schema (``extension =
    "<name>"`` entries). Its schema is pinned by sha256, so every entry must
    apply: nothing is carried."""
    schema = copy.deepcopy(schema)
    result = Corrections()
    for entry in entries:
        if entry.get("extension") == name:
            result.entries.append(_apply_one(schema, f"extension {name}", entry))
    return schema, result


def _target(schema: dict[str, Any], entry: dict[str, Any]) -> str:
    if entry.get("kind") in ("field_default", "discriminator"):
        return f"/{_definitions_key(schema)}/*/properties/{entry['property']}"
    if entry.get("kind") == "inherited_meta":
        return f"/{_definitions_key(schema)}/*/properties/params/properties/_meta"
    return str(entry["pointer"]).replace("{defs}", _definitions_key(schema))


def _apply_one(schema: dict[str, Any], revision: str, entry: dict[str, Any]) -> Correction:
    """Apply one entry to ``schema`` in place, or fail saying why it does not apply."""
    if entry.get("kind") == "field_default":
        return _field_default(schema, revision, entry)
    if entry.get("kind") == "discriminator":
        return _discriminator(schema, revision, entry)
    if entry.get("kind") == "inherited_meta":
        return _inherited_meta(schema, revision, entry)
    pointer = entry["pointer"].replace("{defs}", _definitions_key(schema))
    parts = [p.replace("~1", "/").replace("~0", "~") for p in pointer.lstrip("/").split("/")]
    parent: Any = schema
    try:
        for part in parts[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        # The last step may add a key (an `additionalProperties`), so only
        # the parent has to exist.
        last: Any = int(parts[-1]) if isinstance(parent, list) else parts[-1]
        if entry.get("remove", False):
            del parent[last]  # a keyword the generator must not see
        else:
            parent[last] = copy.deepcopy(entry["value"])
    except (KeyError, IndexError, ValueError, TypeError):
        raise GenerationError(
            f"correction {entry['id']} does not apply to {revision}: no {pointer}"
        ) from None
    return Correction(
        entry["id"], pointer + (" (removed)" if entry.get("remove") else ""), entry["reason"]
    )


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
    # Every check before any change, so a carried entry that does not apply
    # leaves the schema as it was.
    for name in names:
        definition = schema[key].get(name)
        if definition is None and named != "*":
            raise GenerationError(
                f"correction {entry['id']} does not apply to {revision}: no definition {name}"
            )
        if definition is None or prop not in definition.get("properties", {}):
            if named != "*":
                raise GenerationError(
                    f"correction {entry['id']} does not apply to {revision}: {name} has no {prop}"
                )
            continue
        if prop in definition.get("required", []) or "value" in entry:
            changed.append(name)
    if not changed:
        raise GenerationError(
            f"correction {entry['id']} does not apply to {revision}: no definition has {prop}"
        )
    for name in changed:
        definition = schema[key][name]
        required = definition.get("required", [])
        if prop in required:
            required.remove(prop)
        if "value" in entry:
            definition["properties"][prop]["default"] = copy.deepcopy(entry["value"])
    target = f"/{key}/{{{','.join(changed)}}}/properties/{prop}"
    if "value" in entry:
        target += f" = {entry['value']!r}"
    return Correction(entry["id"], target, entry["reason"])


def _discriminator(schema: dict[str, Any], revision: str, entry: dict[str, Any]) -> Correction:
    """Declare ``property`` the discriminator of the unions whose arms each
    give it a different default (a ``[[field_default]]``), ``absent`` the
    value a message without it has. The schema itself is left as it is: it
    types the property as a plain string, the specification says which
    values there are and that any other is invalid."""
    key = _definitions_key(schema)
    prop = entry["property"]
    if not any(prop in (d.get("properties") or {}) for d in schema[key].values()):
        raise GenerationError(
            f"correction {entry['id']} does not apply to {revision}: no definition has {prop}"
        )
    target = f"/{key}/*/properties/{prop}: discriminator, absent = {entry['absent']!r}"
    return Correction(
        entry["id"], target, entry["reason"], discriminator=(prop, str(entry["absent"]))
    )


def _inherited_meta(schema: dict[str, Any], revision: str, entry: dict[str, Any]) -> Correction:
    """Give the inline ``params`` of every request and notification the ``_meta``
    its base (``Request``, ``Notification``) declares, where it lacks one: the
    TypeScript types extend the base, the published schema copied only the
    members of their own."""
    key = _definitions_key(schema)
    definitions = schema[key]
    bases = {}
    for suffix in ("Request", "Notification"):
        try:
            bases[suffix] = definitions[suffix]["properties"]["params"]["properties"]["_meta"]
        except KeyError:
            raise GenerationError(
                f"correction {entry['id']} does not apply to {revision}: {suffix} has no params._meta"
            ) from None
    changed = []
    for name, definition in definitions.items():
        members = definition.get("properties") or {}
        method, params = members.get("method"), members.get("params")
        if name in bases or not isinstance(method, dict) or not isinstance(params, dict):
            continue  # a base itself, or no params to extend
        base = next((meta for kind, meta in bases.items() if name.endswith(kind)), None)
        own = params.get("properties")
        if base is None or own is None or own.get("_meta") == base:
            continue
        if "_meta" in own and _closed(own["_meta"]) != _closed(base):
            continue  # a _meta of its own, not the base's
        # Missing, or the base's as it was before an earlier correction opened it.
        own["_meta"] = copy.deepcopy(base)
        changed.append(name)
    if not changed:
        raise GenerationError(
            f"correction {entry['id']} does not apply to {revision}: every params has its _meta"
        )
    target = f"/{key}/{{{','.join(changed)}}}/properties/params/properties/_meta"
    return Correction(entry["id"], target, entry["reason"])


def _closed(schema: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in schema.items() if key != "additionalProperties"}
