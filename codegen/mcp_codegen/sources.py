"""Finding a revision's official schema and checking it against its pin.

The project never commits the schemas. ``schema/pins.toml`` names each
revision's upstream file and sha256; ``[tool.mcp-codegen] sources`` in
pyproject.toml lists where to look, in order:

* ``store:<dir>`` -- a local store, ``<dir>/<revision>/schema.json``; files
  fetched from upstream are saved here;
* ``mirror:<dir>`` -- a copy of the specification's ``schema/`` folder
  (``<dir>/<revision>/schema.json``), such as ``../shared/mcp-schema``;
* ``upstream`` -- the raw file at the pinned commit.
"""

from __future__ import annotations

import hashlib
import json
import os
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import GenerationError

FETCH_TIMEOUT = 30.0


@dataclass(frozen=True)
class Pin:
    revision: str
    path: str
    sha256: str
    unstable: bool
    url: str


@dataclass(frozen=True)
class Config:
    root: Path
    sources: tuple[str, ...]
    output: Path
    pins_file: Path
    corrections_file: Path
    package: str


@dataclass(frozen=True)
class LoadedSchema:
    revision: str
    schema: dict[str, Any]
    sha256: str
    origin: str
    status: str  # "released", "draft" (a pin marked unstable) or "unpinned"


def find_config(start: Path) -> Config:
    """The project's generator settings, from the nearest pyproject.toml."""
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            with pyproject.open("rb") as handle:
                settings = tomllib.load(handle).get("tool", {}).get("mcp-codegen")
            if settings is not None:
                return Config(
                    root=folder,
                    sources=tuple(settings.get("sources", ())),
                    output=folder / settings.get("output", "generated"),
                    pins_file=folder / settings.get("pins", "schema/pins.toml"),
                    corrections_file=folder / settings.get("corrections", "schema/corrections.toml"),
                    package=settings.get("package", "mcp_protocol"),
                )
    raise GenerationError(f"no pyproject.toml with [tool.mcp-codegen] in {start} or its parents")


def load_pins(config: Config) -> dict[str, Pin]:
    try:
        with config.pins_file.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read pin manifest {config.pins_file}: {error}") from None
    upstream = data["upstream"]
    pins = {}
    for revision, entry in data.get("revisions", {}).items():
        url = upstream["url"].format(repository=upstream["repository"], commit=upstream["commit"], path=entry["path"])
        pins[revision] = Pin(revision, entry["path"], entry["sha256"], bool(entry.get("unstable", False)), url)
    return pins


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _parse(data: bytes, origin: str) -> dict[str, Any]:
    try:
        schema = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise GenerationError(f"invalid JSON in {origin}: {error}") from None
    if not isinstance(schema, dict):
        raise GenerationError(f"invalid schema in {origin}: the top level is not an object")
    return schema


def _expand(config: Config, folder: str) -> Path:
    path = Path(os.path.expanduser(folder))
    return path if path.is_absolute() else config.root / path


def resolve(config: Config, pin: Pin) -> LoadedSchema:
    """Find the pinned schema through the configured sources and verify it."""
    tried: list[str] = []
    for source in config.sources:
        kind, _, argument = source.partition(":")
        if kind in ("store", "mirror"):
            path = _expand(config, argument) / pin.revision / "schema.json"
            if not path.is_file():
                tried.append(f"{kind} {path}")
                continue
            data = path.read_bytes()
            origin = str(path)
        elif kind == "upstream":
            try:
                with urllib.request.urlopen(pin.url, timeout=FETCH_TIMEOUT) as response:
                    data = response.read()
            except (urllib.error.URLError, OSError) as error:
                tried.append(f"upstream ({getattr(error, 'reason', error)})")
                continue
            origin = pin.url
        else:
            raise GenerationError(f"unknown schema source {source!r} in pyproject.toml")
        digest = sha256_of(data)
        if digest != pin.sha256:
            raise GenerationError(f"sha256 mismatch for {pin.revision} from {origin}: got {digest}, pinned {pin.sha256}")
        schema = _parse(data, origin)
        if kind == "upstream":
            _save_to_store(config, pin.revision, data)
        return LoadedSchema(pin.revision, schema, digest, origin, _status(pin))
    raise GenerationError(f"schema for {pin.revision} not found (tried: {'; '.join(tried) or 'no sources configured'})")


def _save_to_store(config: Config, revision: str, data: bytes) -> None:
    for source in config.sources:
        kind, _, argument = source.partition(":")
        if kind == "store":
            target = _expand(config, argument) / revision / "schema.json"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            return


def load_file(path: Path, revision: str, pin: Pin | None, verify: bool) -> LoadedSchema:
    """A schema given on the command line, checked against the pin if there is one."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise GenerationError(f"cannot read schema {path}: {error.strerror or error}") from None
    digest = sha256_of(data)
    if verify:
        if pin is None:
            raise GenerationError(f"revision {revision} has no pin; pass --no-verify to generate from {path} unpinned")
        if digest != pin.sha256:
            raise GenerationError(f"sha256 mismatch for {revision} from {path}: got {digest}, pinned {pin.sha256}")
    # A file that is not the pinned one is unpinned, whatever its name.
    status = _status(pin) if pin is not None and digest == pin.sha256 else "unpinned"
    return LoadedSchema(revision, _parse(data, str(path)), digest, str(path), status)


def _status(pin: Pin) -> str:
    return "draft" if pin.unstable else "released"
