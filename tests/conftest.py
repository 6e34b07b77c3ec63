"""Shared test settings: where the repository and the official schemas are."""

from __future__ import annotations

import functools
import importlib
import json
import os
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]

# The official MCP schemas are never copied into the repository; CI clones it
# beside ../shared, which holds <revision>/schema.json (and examples/).
SCHEMA_MIRROR = Path(__file__).resolve().parents[2] / "shared" / "mcp-schema"


def importing(*folders: str | Path) -> dict[str, str]:
    """The environment of a child process that imports packages generated into
    ``folders``, and the runtime this test session imports (the tree's, not an
    installed copy of another)."""
    path = [str(folder) for folder in folders] + sys.path[1:]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def _pins() -> dict[str, Any]:
    with (REPO / "schema" / "pins.toml").open("rb") as handle:
        revisions: dict[str, Any] = tomllib.load(handle)["revisions"]
    return revisions


# Pinned revisions that `mcp-codegen --all` generates into generated/, oldest first.
STABLE_REVISIONS = tuple(sorted(r for r, pin in _pins().items() if not pin.get("unstable", False)))


@functools.cache
def load_schema(revision: str) -> dict[str, Any]:
    """The official schema of a revision, as published (no corrections)."""
    schema: dict[str, Any] = json.loads((SCHEMA_MIRROR / revision / "schema.json").read_bytes())
    return schema


def definitions(schema: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = schema["$defs"] if "$defs" in schema else schema["definitions"]
    return found


def package(revision: str) -> ModuleType:
    """The generated package of a revision: ``mcpbind_protocol.v2025_11_25``."""
    return importlib.import_module("mcpbind_protocol.v" + revision.replace("-", "_"))


@pytest.fixture(scope="session")
def schema_mirror() -> Path:
    return SCHEMA_MIRROR


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


# Each test is held to its marks (support/needs.py): one that reaches Node, Redis
# or a peer without the mark that says so fails, on every run.
pytest_plugins = ("support.needs",)
