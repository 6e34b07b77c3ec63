"""One generated type per schema definition, in every revision package.

``DEFINITIONS`` lists exactly the schema's definitions; each is exported by
the revision package and is something msgspec can decode into (a Struct, an
open object, a union stand-in, or a type alias).
"""

from __future__ import annotations

import importlib
import typing
from typing import Any

import msgspec
import pytest
from conftest import STABLE_REVISIONS, definitions, load_schema, package

from mcpbind.codec import decoder


@pytest.mark.parametrize("revision", STABLE_REVISIONS)
def test_definitions_match_schema(revision: str) -> None:
    pkg = package(revision)
    expected = set(definitions(load_schema(revision)))
    assert set(pkg.DEFINITIONS) == expected
    assert len(pkg.DEFINITIONS) == len(expected)
    assert pkg.DEFINITIONS == importlib.import_module(f"{pkg.__name__}.types").DEFINITIONS


def _is_type_or_alias(value: Any) -> bool:
    if isinstance(value, type):
        return True  # Structs, open objects, untagged-union stand-ins, str, ...
    # A type alias: a union, a generic such as list[...] or Literal[...], Any.
    return value is Any or typing.get_origin(value) is not None


def _cases() -> list[Any]:
    return [
        pytest.param(revision, name, id=f"{revision}/{name}")
        for revision in STABLE_REVISIONS
        for name in sorted(definitions(load_schema(revision)))
    ]


@pytest.mark.parametrize(("revision", "name"), _cases())
def test_definition_is_an_importable_decodable_type(revision: str, name: str) -> None:
    pkg = package(revision)
    assert name in pkg.__all__
    module = importlib.import_module(pkg.__name__)
    value = getattr(module, name)
    assert _is_type_or_alias(value), f"{name} is {value!r}"
    assert isinstance(decoder(value), msgspec.json.Decoder)
