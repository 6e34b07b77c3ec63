"""Finding a revision's official schema and checking it against its pin.

The project never commits the schemas. ``schema/pins.toml`` names each
revision's upstream file and sha256; ``[tool.mcp-codegen] sources`` in
pyproject.toml lists where to look, in order:

* ``store:<dir>`` -- a local store, ``<dir>/<revision>/schema.json``; files
  fetched from upstream are saved here;
* ``mirror:<dir>`` -- a copy of the specification's ``schema/`` folder
  (``<dir>/<revision>/schema.json``), such as ``../shared/mcp-schema``;
* ``upstream`` -- the raw file at the pinned commit.

An extension whose project publishes its schema in an npm package (MCP Apps:
``@modelcontextprotocol/ext-apps``) is pinned by package version and sha256
(``[extensions.<name>]`` with ``npm =``) and found through the same list:

* ``node_modules:<dir>`` -- an installed copy of the pinned version;
* ``store:<dir>`` -- ``<dir>/npm/<package>@<version>/<file>``, where a file
  taken from the registry is saved;
* ``npm`` -- the package's tarball on the npm registry (``npm:<url>``: on
  another registry, such as a mirror).

A project without a ``[tool.mcp-codegen]`` table gets the defaults: schemas
from a per-user cache (``$XDG_CACHE_HOME/mcp-codegen``, else
``~/.cache/mcp-codegen``) filled from upstream, and the pins and corrections
shipped with the generator. A project's own pins file replaces the shipped
one (it names exactly the revisions the project generates); a project's own
corrections are added to the shipped ones, replacing those with the same id.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import tarfile
import tomllib
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .model import GenerationError

FETCH_TIMEOUT = 30.0
# The pins and corrections shipped with the generator: the repository's schema/
# folder, which the wheel carries as mcpbind_codegen/defaults.
DEFAULTS = Path(__file__).parent / "defaults"
if not DEFAULTS.is_dir():  # a source checkout or an editable install
    DEFAULTS = Path(__file__).resolve().parents[2] / "schema"
DEFAULT_PINS = DEFAULTS / "pins.toml"
DEFAULT_CORRECTIONS = DEFAULTS / "corrections.toml"
DEFAULT_FACTS = DEFAULTS / "protocol_facts.toml"


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
    pins_file: Path | None  # the project's own, added to the shipped ones
    corrections_file: Path | None
    package: str | None  # None: not configured, --package must say
    facts_file: Path | None = None  # the project's own protocol facts, added to the shipped ones

    @property
    def corrections_files(self) -> tuple[Path, ...]:
        """The shipped corrections, then the project's (which override them by id)."""
        own = (
            ()
            if self.corrections_file is None or _same(self.corrections_file, DEFAULT_CORRECTIONS)
            else (self.corrections_file,)
        )
        return (DEFAULT_CORRECTIONS, *own)

    @property
    def facts_files(self) -> tuple[Path, ...]:
        """The shipped protocol facts, then the project's (whose keys replace theirs)."""
        own = (
            ()
            if self.facts_file is None or _same(self.facts_file, DEFAULT_FACTS)
            else (self.facts_file,)
        )
        return (DEFAULT_FACTS, *own)

    @property
    def pins(self) -> Path:
        """The project's pins file, else the shipped one."""
        return self.pins_file if self.pins_file is not None else DEFAULT_PINS


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def user_cache() -> Path:
    """Where schemas fetched from upstream are kept for this user."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mcp-codegen"


@dataclass(frozen=True)
class LoadedSchema:
    revision: str
    schema: dict[str, Any]
    sha256: str
    origin: str
    status: str  # "released", "draft" (a pin marked unstable) or "unpinned"


DEFAULT_SOURCES = ("store:{cache}/schemas", "upstream", "npm")


def find_config(start: Path) -> Config:
    """The project's generator settings, from the nearest pyproject.toml with
    a [tool.mcp-codegen] table; the defaults where there is none."""
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            with pyproject.open("rb") as handle:
                settings = tomllib.load(handle).get("tool", {}).get("mcp-codegen")
            if settings is not None:
                return Config(
                    root=folder,
                    sources=tuple(settings.get("sources", DEFAULT_SOURCES)),
                    output=folder / settings.get("output", "generated"),
                    pins_file=_optional_file(folder, settings.get("pins", "schema/pins.toml")),
                    corrections_file=_optional_file(
                        folder, settings.get("corrections", "schema/corrections.toml")
                    ),
                    package=settings.get("package"),
                    facts_file=_optional_file(
                        folder, settings.get("facts", "schema/protocol_facts.toml")
                    ),
                )
    return Config(
        root=start,
        sources=DEFAULT_SOURCES,
        output=start,
        pins_file=None,
        corrections_file=None,
        package=None,
    )


def _optional_file(folder: Path, name: str) -> Path | None:
    path = folder / name
    return path if path.is_file() else None


def load_pins(config: Config) -> dict[str, Pin]:
    path = config.pins
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read pin manifest {path}: {error}") from None
    upstream = data.get("upstream", {})
    if not _same(path, DEFAULT_PINS):  # a project's file may leave the upstream out
        with DEFAULT_PINS.open("rb") as handle:
            upstream = {**tomllib.load(handle)["upstream"], **upstream}
    pins = {}
    for revision, entry in data.get("revisions", {}).items():
        # An entry may pin its own commit (a revision newer than the shipped upstream commit).
        commit = entry.get("commit", upstream["commit"])
        url = upstream["url"].format(
            repository=upstream["repository"], commit=commit, path=entry["path"]
        )
        pins[revision] = Pin(
            revision, entry["path"], entry["sha256"], bool(entry.get("unstable", False)), url
        )
    return pins


def shipped_revisions() -> frozenset[str]:
    """The revisions the shipped pins name: those the shipped protocol facts
    were reviewed against."""
    with DEFAULT_PINS.open("rb") as handle:
        return frozenset(tomllib.load(handle).get("revisions", {}))


@dataclass(frozen=True)
class PublishedSchema:
    """Where an extension's schema is published: a file inside one version of
    an npm package (``@modelcontextprotocol/ext-apps`` 2.0.4 ships
    ``dist/src/generated/schema.json``). The extension's identifier and the
    revision it is generated on are the pin's to say: such a schema does not."""

    package: str  # the npm package name, scope included
    version: str
    file: str  # the schema's path inside the package
    id: str
    revision: str
    # A prefix every message name repeats ("McpUi"), left out of the stub and
    # handler names (`open_link`, not `mcp_ui_open_link`).
    message_prefix: str = ""

    def tarball_url(self, registry: str = "") -> str:
        """The package's tarball on an npm registry (the public one by
        default), by npm's own URL scheme."""
        short = self.package.rsplit("/", 1)[-1]
        base = (registry or NPM_REGISTRY).rstrip("/")
        return f"{base}/{self.package}/-/{short}-{self.version}.tgz"

    @property
    def label(self) -> str:
        return f"npm:{self.package}@{self.version}/{self.file}"


@dataclass(frozen=True)
class ExtensionPin:
    name: str
    path: Path  # the fragment, beside the pins file that names it
    sha256: str
    label: str  # the path from the pins file's folder on (schema/extensions/x.json)
    published: PublishedSchema | None = None  # a published schema rather than a fragment


@dataclass(frozen=True)
class LoadedExtension:
    name: str
    id: str  # the extension identifier
    revision: str  # the revision it extends
    schema: dict[str, Any]
    sha256: str
    origin: str  # the pin's label, the same on every machine
    published: bool = False  # the extension project's published schema, not a fragment
    message_prefix: str = ""  # see PublishedSchema


EXTENSION_KEY = "x-mcp-extension"
NPM_REGISTRY = "https://registry.npmjs.org"


def load_extension_pins(config: Config) -> dict[str, ExtensionPin]:
    """The extensions the pins file names (``[extensions.<name>]``), each a
    schema fragment of this project's, beside the pins file."""
    path = config.pins
    try:
        with path.open("rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise GenerationError(f"cannot read pin manifest {path}: {error}") from None
    pins = {}
    for name, entry in sorted(data.get("extensions", {}).items()):
        if "npm" in entry:
            published = PublishedSchema(
                entry["npm"],
                entry["version"],
                entry["file"],
                entry["id"],
                entry["revision"],
                entry.get("message-prefix", ""),
            )
            pins[name] = ExtensionPin(
                name, Path(published.file), entry["sha256"], published.label, published
            )
        else:
            pins[name] = ExtensionPin(
                name,
                path.parent / entry["path"],
                entry["sha256"],
                f"{path.parent.name}/{entry['path']}",
            )
    return pins


def load_extension(pin: ExtensionPin, config: Config) -> LoadedExtension:
    """An extension's schema, checked against its pin like a revision's: a
    fragment beside the pins file, or a published one found through the
    configured sources."""
    if pin.published is not None:
        data, origin = _resolve_published(config, pin)
        published = pin.published
        schema = _parse(data, origin)
        return LoadedExtension(
            pin.name,
            published.id,
            published.revision,
            schema,
            pin.sha256,
            pin.label,
            True,
            published.message_prefix,
        )
    try:
        data = pin.path.read_bytes()
    except OSError as error:
        raise GenerationError(
            f"cannot read extension schema {pin.path}: {error.strerror or error}"
        ) from None
    digest = sha256_of(data)
    if digest != pin.sha256:
        raise GenerationError(
            f"sha256 mismatch for extension {pin.name} from {pin.path}: got {digest}, pinned {pin.sha256}"
        )
    schema = _parse(data, str(pin.path))
    declared = schema.get(EXTENSION_KEY)
    if not (
        isinstance(declared, dict)
        and isinstance(declared.get("id"), str)
        and isinstance(declared.get("revision"), str)
    ):
        raise GenerationError(
            f"extension schema {pin.path} does not say what it extends: "
            f'give "{EXTENSION_KEY}": {{"id": ..., "revision": ...}}'
        )
    return LoadedExtension(
        pin.name, declared["id"], declared["revision"], schema, digest, pin.label
    )


def _resolve_published(config: Config, pin: ExtensionPin) -> tuple[bytes, str]:
    """The bytes of a published extension schema and where they came from,
    through the sources that can hold one, in order:

    * ``node_modules:<dir>`` -- an installed copy, ``<dir>/<package>/<file>``,
      used only when its ``package.json`` has the pinned version;
    * ``store:<dir>`` -- ``<dir>/npm/<package>@<version>/<file>``, where a
      file taken from the registry is saved;
    * ``npm`` (``npm:<registry url>``) -- the package's tarball on the npm registry.

    Revision-only sources (``mirror``, ``upstream``) are passed over. The
    sha256 is checked whichever source answers."""
    published = pin.published
    assert published is not None
    tried: list[str] = []
    for source in config.sources:
        kind, _, argument = source.partition(":")
        data: bytes | None = None
        if kind == "node_modules":
            folder = _expand(config, argument) / published.package
            try:
                version = json.loads((folder / "package.json").read_bytes()).get("version")
                if version == published.version:
                    data = (folder / published.file).read_bytes()
                else:
                    tried.append(f"node_modules {folder} (version {version})")
            except (OSError, ValueError):
                tried.append(f"node_modules {folder}")
            origin = str(folder / published.file)
        elif kind == "store":
            path = _published_store_path(config, argument, published)
            if path.is_file():
                data = path.read_bytes()
            else:
                tried.append(f"store {path}")
            origin = str(path)
        elif kind == "npm":
            origin = published.tarball_url(argument)
            try:
                data = _from_tarball(published, origin)
            except (urllib.error.URLError, OSError, tarfile.TarError, KeyError) as error:
                tried.append(f"npm ({getattr(error, 'reason', error)})")
            else:
                _save_published(config, published, data)
        if data is None:
            continue
        digest = sha256_of(data)
        if digest != pin.sha256:
            raise GenerationError(
                f"sha256 mismatch for extension {pin.name} from {origin}: got {digest}, pinned {pin.sha256}"
            )
        return data, origin
    raise GenerationError(
        f"schema of extension {pin.name} ({pin.label}) not found "
        f"(tried: {'; '.join(tried) or 'no sources configured'}); "
        f'install {published.package}@{published.version} or add "npm" to the sources'
    )


def _from_tarball(published: PublishedSchema, url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT) as response:
        archive = response.read()
    # npm tarballs hold the package under a top folder, "package/" by convention.
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        for member in tar.getmembers():
            if member.isfile() and member.name.split("/", 1)[-1] == published.file:
                handle = tar.extractfile(member)
                if handle is not None:
                    return handle.read()
    raise KeyError(f"{published.file} not in {url}")


def _published_store_path(config: Config, folder: str, published: PublishedSchema) -> Path:
    return (
        _expand(config, folder)
        / "npm"
        / f"{published.package}@{published.version}"
        / published.file
    )


def _save_published(config: Config, published: PublishedSchema, data: bytes) -> None:
    for source in config.sources:
        kind, _, argument = source.partition(":")
        if kind == "store":
            target = _published_store_path(config, argument, published)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
            return


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
    path = Path(os.path.expanduser(folder.replace("{cache}", str(user_cache()))))
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
        elif kind in ("node_modules", "npm"):
            continue  # where published extension schemas are found, not revisions
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
            raise GenerationError(
                f"sha256 mismatch for {pin.revision} from {origin}: got {digest}, pinned {pin.sha256}"
            )
        schema = _parse(data, origin)
        if kind == "upstream":
            _save_to_store(config, pin.revision, data)
        return LoadedSchema(pin.revision, schema, digest, origin, _status(pin))
    mirror = next(
        (
            _expand(config, a)
            for k, _, a in (s.partition(":") for s in config.sources)
            if k in ("store", "mirror")
        ),
        None,
    )
    where = f", or save it as {mirror / pin.revision / 'schema.json'}" if mirror is not None else ""
    raise GenerationError(
        f"schema for {pin.revision} not found (tried: {'; '.join(tried) or 'no sources configured'}); "
        f"download {pin.url} and pass it with --schema FILE --revision {pin.revision}{where}"
    )


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
            raise GenerationError(
                f"revision {revision} has no pin; pass --no-verify to generate from {path} unpinned"
            )
        if digest != pin.sha256:
            raise GenerationError(
                f"sha256 mismatch for {revision} from {path}: got {digest}, pinned {pin.sha256}"
            )
    # A file that is not the pinned one is unpinned, whatever its name.
    status = _status(pin) if pin is not None and digest == pin.sha256 else "unpinned"
    return LoadedSchema(revision, _parse(data, str(path)), digest, str(path), status)


def _status(pin: Pin) -> str:
    return "draft" if pin.unstable else "released"
