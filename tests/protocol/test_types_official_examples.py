"""Every official example decodes with the type its folder names and encodes
back to the same JSON.

The specification ships examples for 2026-07-28 and the draft, as
``examples/<TypeName>/*.json``. The draft is not generated into generated/;
while its schema is byte-identical to 2026-07-28's (checked below), the
2026-07-28 package is its package.

Examples are decoded as received, uncorrected. An example that contradicts
the wire itself, or lacks a field the wire requires and that gets a default
when absent, has an ``[[example_correction]]`` entry in
schema/corrections.toml saying which and why, applied only to the expected
re-encoding (the published example must still decode). An example that lacks
a field the wire requires and that has no default would be refused with the
documented error (docs/guides/the-2026-07-28-wire.md), as a peer sending it
would be; none does at present.
"""

from __future__ import annotations

import copy
import hashlib
import json
import tomllib
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import REPO, SCHEMA_MIRROR, load_schema, package

from mcpbind.codec import decode, encode
from mcpbind_codegen import corrections

EXAMPLE_REVISIONS = ("2026-07-28", "draft")
# The generated package each example revision is checked against.
PACKAGE_OF = {"2026-07-28": "2026-07-28", "draft": "2026-07-28"}


def _example_corrections() -> list[dict[str, Any]]:
    with (REPO / "schema" / "corrections.toml").open("rb") as handle:
        entries: list[dict[str, Any]] = tomllib.load(handle).get("example_correction", [])
    return entries


EXAMPLE_CORRECTIONS = _example_corrections()


def _examples() -> list[Any]:
    params = []
    for revision in EXAMPLE_REVISIONS:
        for path in sorted((SCHEMA_MIRROR / revision / "examples").glob("*/*.json")):
            name = f"{path.parent.name}/{path.name}"
            params.append(pytest.param(revision, path, id=f"{revision}/{name}"))
    return params


EXAMPLES = _examples()


def _split(pointer: str) -> list[str]:
    return [part.replace("~1", "/").replace("~0", "~") for part in pointer.lstrip("/").split("/")]


def _apply(example: Any, entry: dict[str, Any]) -> None:
    """Apply one example correction in place, refusing one that no longer fits."""
    *path, last = _split(entry["pointer"])
    parent = example
    for part in path:
        parent = parent[int(part)] if isinstance(parent, list) else parent[part]
    assert isinstance(parent, dict), entry["id"]
    if entry.get("remove"):
        assert (
            last in parent
        ), f"example correction {entry['id']} is stale: {entry['pointer']} is gone"
        del parent[last]
    else:
        assert (
            last not in parent
        ), f"example correction {entry['id']} is stale: {entry['pointer']} is there"
        parent[last] = copy.deepcopy(entry["value"])


def _corrected_example(revision: str, path: Path) -> tuple[Any, list[str]]:
    example = json.loads(path.read_bytes())
    name = f"{path.parent.name}/{path.name}"
    applied = []
    for entry in EXAMPLE_CORRECTIONS:
        if revision in entry["revisions"] and entry["example"] == name:
            _apply(example, entry)
            applied.append(entry["id"])
    return example, applied


def test_examples_exist() -> None:
    for revision in EXAMPLE_REVISIONS:
        assert len([p for p in EXAMPLES if p.values[0] == revision]) > 50, revision


@pytest.mark.parametrize(("revision", "path"), EXAMPLES)
def test_example_round_trips(revision: str, path: Path) -> None:
    type_ = getattr(package(PACKAGE_OF[revision]), path.parent.name)
    published = decode(
        path.read_bytes(), type_
    )  # received as published, even where corrected below
    example, _ = _corrected_example(revision, path)
    assert json.loads(encode(published)) == example


def _result_examples() -> list[Any]:
    return [p for p in EXAMPLES if p.values[1].parent.name.endswith("ResultResponse")]


@pytest.mark.parametrize(("revision", "path"), _result_examples())
def test_result_example_decodes_as_a_session_receives_it(revision: str, path: Path) -> None:
    """The ``result`` of each response example, decoded with the result type
    of its method (the decoder a session uses for the answer to a call),
    gives the type the response names, and encodes back to the (corrected) example."""
    revision_package = package(PACKAGE_OF[revision])
    folder = path.parent.name
    names = {folder + "Result", folder.removesuffix("Response")}
    (spec,) = [
        s
        for s in revision_package.methods.METHODS.values()
        if getattr(s.result, "__name__", None) in names
    ]
    published = json.loads(path.read_bytes())
    decoded = decode(json.dumps(published["result"]), spec.result)
    assert type(decoded).__name__ == folder.removesuffix("Response")
    example, _ = _corrected_example(revision, path)
    assert json.loads(encode(decoded)) == example["result"]


def test_example_corrections_name_real_examples() -> None:
    for entry in EXAMPLE_CORRECTIONS:
        assert entry["reason"], entry["id"]
        for revision in entry["revisions"]:
            assert (SCHEMA_MIRROR / revision / "examples" / entry["example"]).is_file(), entry["id"]


def test_corrected_examples_would_fail_uncorrected() -> None:
    """Each corrected example really needs its correction."""
    for revision in EXAMPLE_REVISIONS:
        for entry in EXAMPLE_CORRECTIONS:
            if revision not in entry["revisions"]:
                continue
            path = SCHEMA_MIRROR / revision / "examples" / entry["example"]
            type_ = getattr(package(PACKAGE_OF[revision]), path.parent.name)
            published = json.loads(path.read_bytes())
            assert json.loads(encode(decode(path.read_bytes(), type_))) != published, entry["id"]


def test_draft_is_2026_07_28() -> None:
    """The draft's examples are checked against the 2026-07-28 package: valid
    while the draft schema, and the corrections applied to it, are the same."""
    digest = {
        r: hashlib.sha256((SCHEMA_MIRROR / r / "schema.json").read_bytes()).hexdigest()
        for r in EXAMPLE_REVISIONS
    }
    assert digest["draft"] == digest["2026-07-28"] == package("2026-07-28").SCHEMA_SHA256
    entries = corrections.load(REPO / "schema" / "corrections.toml")
    corrected = {r: corrections.apply(load_schema(r), r, entries)[0] for r in EXAMPLE_REVISIONS}
    assert corrected["draft"] == corrected["2026-07-28"]


def test_a_wrong_example_is_refused() -> None:
    """The round trip is not vacuous: a type error in an example is reported."""
    path = SCHEMA_MIRROR / "2026-07-28" / "examples" / "TextContent"
    example = json.loads(next(iter(sorted(path.glob("*.json")))).read_bytes())
    example["text"] = 42
    with pytest.raises(msgspec.ValidationError, match=r"\$\.text"):
        decode(json.dumps(example), package("2026-07-28").TextContent)
