"""Media and content written once for every revision.

    @app.tool()
    def chart() -> list[Content]:
        return ["The chart:", Image.from_path("chart.png"), File(b"a,b\\n1,2\\n", name="data.csv")]

:class:`Image`, :class:`Audio` and :class:`File` are made from bytes (the
MIME type detected from the bytes' signature when not given) or a path (from
the file name); :class:`Link` points at a resource. The app turns each into a
block of the negotiated revision, and never sends a block type that revision
lacks; instead (the documented fallbacks):

==============  ==================  ======================================
helper          block               fallback
==============  ==================  ======================================
``Image``       ``image``           (every revision has it)
``Audio``       ``audio``           2024-11-05: an embedded resource (blob)
``File``        embedded resource   (every revision has it)
``Link``        ``resource_link``   before 2025-06-18: a text block ``name: uri``
==============  ==================  ======================================

Content blocks of another revision's generated types are converted the same
way (an ``AudioContent`` of 2025-06-18 sent to a 2024-11-05 client becomes an
embedded resource, a ``ResourceLink`` a text block).
"""

from __future__ import annotations

import base64
import hashlib
import mimetypes
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, Union

import msgspec


class Flavor(Protocol):
    """What a conversion needs of a revision (the app's Flavor)."""

    types: Any
    own_blocks: frozenset[type]

    def has_block(self, name: str) -> bool: ...

    def convert(self, wire: Mapping[str, object], type_name: str) -> object: ...


# Leading bytes of the formats a client shows, and their MIME types.
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"WEBP", 8, "image/webp"),
    (b"<svg", 0, "image/svg+xml"),
    (b"WAVE", 8, "audio/wav"),
    (b"ID3", 0, "audio/mpeg"),
    (b"\xff\xfb", 0, "audio/mpeg"),
    (b"OggS", 0, "audio/ogg"),
    (b"fLaC", 0, "audio/flac"),
    (b"%PDF-", 0, "application/pdf"),
)


def detect_mime_type(data: bytes, default: str) -> str:
    """The MIME type of ``data`` from its signature, else ``default``."""
    for signature, offset, mime_type in _SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            return mime_type
    return default


def _from_path(path: str | Path, default: str) -> tuple[bytes, str, str]:
    file = Path(path)
    data = file.read_bytes()
    guessed = mimetypes.guess_type(file.name)[0]
    return data, guessed or detect_mime_type(data, default), file.name


@dataclass(frozen=True, slots=True)
class Image:
    """An image: ``Image(png_bytes)`` or ``Image.from_path("chart.png")``."""

    data: bytes
    mime_type: str = ""

    def __post_init__(self) -> None:
        if not self.mime_type:
            object.__setattr__(self, "mime_type", detect_mime_type(self.data, "image/png"))

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> Image:
        data, detected, _ = _from_path(path, "image/png")
        return cls(data, mime_type or detected)


@dataclass(frozen=True, slots=True)
class Audio:
    """A sound clip: ``Audio(wav_bytes)`` or ``Audio.from_path("hello.wav")``."""

    data: bytes
    mime_type: str = ""
    name: str = "audio"

    def __post_init__(self) -> None:
        if not self.mime_type:
            object.__setattr__(self, "mime_type", detect_mime_type(self.data, "audio/wav"))

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> Audio:
        data, detected, name = _from_path(path, "audio/wav")
        return cls(data, mime_type or detected, name)


@dataclass(frozen=True, slots=True)
class File:
    """A file sent inside the result, as an embedded resource (text for
    ``text/*`` and JSON types, base64 otherwise). ``uri`` defaults to
    ``file:///<name>``."""

    data: bytes
    name: str = "file"
    mime_type: str = ""
    uri: str = ""

    def __post_init__(self) -> None:
        if not self.mime_type:
            guessed = mimetypes.guess_type(self.name)[0]
            object.__setattr__(
                self,
                "mime_type",
                guessed or detect_mime_type(self.data, "application/octet-stream"),
            )
        if not self.uri:
            object.__setattr__(self, "uri", f"file:///{self.name}")

    @classmethod
    def from_path(cls, path: str | Path, mime_type: str | None = None) -> File:
        data, detected, name = _from_path(path, "application/octet-stream")
        return cls(data, name, mime_type or detected)

    @property
    def is_text(self) -> bool:
        return self.mime_type.startswith("text/") or self.mime_type in (
            "application/json",
            "application/xml",
        )


@dataclass(frozen=True, slots=True)
class Link:
    """A link to a resource the client may read (``resource_link``)."""

    uri: str
    name: str
    mime_type: str | None = None
    description: str | None = None


Media = Union[Image, Audio, File, Link]
Content = Union[str, Image, Audio, File, Link]
"""What a tool returns as content (``-> list[Content]``): text and the helpers."""
MEDIA_TYPES: tuple[type, ...] = (Image, Audio, File, Link)


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def resource_contents(uri: str, value: Image | Audio | File, flavor: Flavor) -> object:
    """``value`` as the revision's TextResourceContents or BlobResourceContents at ``uri``."""
    types = flavor.types
    if isinstance(value, File) and value.is_text:
        return types.TextResourceContents(
            uri=uri, text=value.data.decode("utf-8"), mime_type=value.mime_type
        )
    return types.BlobResourceContents(uri=uri, blob=_b64(value.data), mime_type=value.mime_type)


def to_block(value: object, flavor: Flavor) -> object:
    """One content block of ``flavor``'s revision from a helper, a string, or
    a block of any revision (converted, with the fallbacks above)."""
    if type(value) in flavor.own_blocks:
        return value
    types = flavor.types
    if isinstance(value, str):
        return types.TextContent(text=value)
    if isinstance(value, Image):
        return types.ImageContent(data=_b64(value.data), mime_type=value.mime_type)
    if isinstance(value, Audio):
        if flavor.has_block("AudioContent"):
            return types.AudioContent(data=_b64(value.data), mime_type=value.mime_type)
        digest = hashlib.sha256(value.data).hexdigest()[:16]
        return types.EmbeddedResource(
            resource=resource_contents(f"file:///{value.name}-{digest}", value, flavor)
        )
    if isinstance(value, File):
        return types.EmbeddedResource(resource=resource_contents(value.uri, value, flavor))
    if isinstance(value, Link):
        if flavor.has_block("ResourceLink"):
            wire: dict[str, object] = {
                "type": "resource_link",
                "uri": value.uri,
                "name": value.name,
            }
            if value.mime_type is not None:
                wire["mimeType"] = value.mime_type
            if value.description is not None:
                wire["description"] = value.description
            return flavor.convert(wire, "ResourceLink")
        return types.TextContent(text=f"{value.name}: {value.uri}")
    if isinstance(value, msgspec.Struct):
        return _foreign_block(msgspec.to_builtins(value), flavor)
    raise TypeError(
        f"content must be a string, Image, Audio, File, Link or a content block, not {type(value).__name__}"
    )


def _foreign_block(wire: Mapping[str, Any], flavor: Flavor) -> Any:
    """A block of another revision, as this one's (or its fallback)."""
    kind = wire.get("type")
    if kind == "audio" and not flavor.has_block("AudioContent"):
        return to_block(Audio(base64.b64decode(wire["data"]), wire["mimeType"]), flavor)
    if kind == "resource_link" and not flavor.has_block("ResourceLink"):
        return to_block(Link(wire["uri"], str(wire.get("name") or wire["uri"])), flavor)
    return flavor.convert(wire, _BLOCK_TYPES.get(str(kind), "TextContent"))


_BLOCK_TYPES = {
    "text": "TextContent",
    "image": "ImageContent",
    "audio": "AudioContent",
    "resource": "EmbeddedResource",
    "resource_link": "ResourceLink",
}
