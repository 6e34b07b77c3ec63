"""The request headers of Streamable HTTP from MCP 2026-07-28 on that mirror
body fields, for intermediaries that route without reading bodies (SEP-2243).

``Mcp-Method`` carries the method, ``Mcp-Name`` the tool or prompt name, the
resource URI or the task id, and ``Mcp-Param-{Name}`` the tool arguments whose
schema property carries ``x-mcp-header``. A value that is not plain printable
ASCII without surrounding whitespace (or that looks like the sentinel itself)
goes as ``=?base64?{UTF-8, Base64}?=``. Clients fill them in, servers check
them against the body.
"""

from __future__ import annotations

import base64
import binascii
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import msgspec

from .. import jsonrpc, lifecycle

METHOD: Final = "mcp-method"
NAME: Final = "mcp-name"
PARAM_PREFIX: Final = "mcp-param-"

# Where each method keeps the value Mcp-Name mirrors.
NAME_FIELDS: Final = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "tasks/get": "taskId",
    "tasks/update": "taskId",
    "tasks/cancel": "taskId",
}

ANNOTATION: Final = "x-mcp-header"
# RFC 9110 token: what a header name may be made of.
_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_PRIMITIVES = ("string", "integer", "boolean")
# Members of a schema whose values are data, not schemas: not searched for annotations.
_DATA_KEYWORDS = frozenset({"enum", "const", "default", "examples"})
_SENTINEL_HEAD = "=?base64?"
_SENTINEL_TAIL = "?="
# Printable ASCII (and tab, in a received value): matched in C, not char by char
# in Python (every 2026-07-28 request's Mcp-Name goes through it).
_PRINTABLE = re.compile(r"[ -~]*").fullmatch
_RECEIVABLE = re.compile(r"[ -~\t]*").fullmatch


def _plain(value: str) -> bool:
    """Whether ``value`` can go in a header as it is."""
    return (
        _PRINTABLE(value) is not None
        and value == value.strip(" ")
        and not (value.startswith(_SENTINEL_HEAD) and value.endswith(_SENTINEL_TAIL))
    )


def encode_value(value: str) -> str:
    """A header value carrying ``value``: as it is, or Base64 in the sentinel."""
    if _plain(value):
        return value
    return _SENTINEL_HEAD + base64.b64encode(value.encode()).decode("ascii") + _SENTINEL_TAIL


def decode_value(raw: str) -> str | None:
    """The value a header carries (surrounding whitespace dropped, the
    sentinel decoded); None if it holds characters no header value may, or a
    sentinel that is not valid Base64 of UTF-8."""
    value = raw.strip(" \t")
    if _RECEIVABLE(value) is None:
        return None
    if not (
        value.startswith(_SENTINEL_HEAD) and value.endswith(_SENTINEL_TAIL) and len(value) >= 11
    ):
        return value
    encoded = value[len(_SENTINEL_HEAD) : -len(_SENTINEL_TAIL)]
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None


def header_text(value: Any) -> str | None:
    """The text a primitive argument is mirrored as; None for what is not mirrored."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        return value
    return None


def matches(header: str, body: Any) -> bool:
    """Whether a decoded header value stands for the body's value (integers compared as numbers)."""
    if isinstance(body, bool):
        return header == ("true" if body else "false")
    if isinstance(body, (int, float)):
        try:
            return Decimal(header) == Decimal(body if isinstance(body, int) else repr(body))
        except InvalidOperation:
            return False
    return isinstance(body, str) and header == body


@dataclass(frozen=True)
class ParamHeader:
    """A tool argument mirrored into ``Mcp-Param-{name}``."""

    name: str
    path: tuple[str, ...]
    """The chain of ``properties`` keys from the schema root to the argument."""

    @property
    def header(self) -> str:
        return PARAM_PREFIX + self.name.lower()

    def value_in(self, arguments: Any) -> Any:
        """The argument's value, or None where there is none."""
        value = arguments
        for key in self.path:
            if not isinstance(value, dict):
                return None
            value = value.get(key)
        return value


class InvalidAnnotation(ValueError):
    pass


def param_headers(input_schema: Any) -> list[ParamHeader]:
    """The arguments a tool's input schema designates for headers.

    Raises InvalidAnnotation for an annotation the specification rules out (a
    client drops such a tool): empty or not a token, on a property that is not
    a string, integer or boolean, reached other than through ``properties``
    alone, or naming a header twice (in any case)."""
    found: list[ParamHeader] = []
    _collect(input_schema, (), found)
    seen: set[str] = set()
    for param in found:
        if param.name.lower() in seen:
            raise InvalidAnnotation(f"{ANNOTATION} {param.name!r} is used twice")
        seen.add(param.name.lower())
    return found


def _collect(node: Any, path: tuple[str, ...] | None, found: list[ParamHeader]) -> None:
    """``path``: the properties chain to ``node`` when it is statically
    reachable from the root (the root itself is ``()``), else None."""
    if isinstance(node, list):
        for item in node:
            _collect(item, None, found)
        return
    if not isinstance(node, dict):
        return
    if ANNOTATION in node:
        name = node[ANNOTATION]
        where = "/".join(path) if path else "the schema root"
        if not path:
            raise InvalidAnnotation(
                f"{ANNOTATION} on {where}, which is not a property reached through properties alone"
            )
        if not isinstance(name, str) or not _TOKEN.fullmatch(name):
            raise InvalidAnnotation(f"{ANNOTATION} {name!r} on {where} is not a valid header name")
        if node.get("type") not in _PRIMITIVES:
            raise InvalidAnnotation(
                f"{ANNOTATION} {name!r} is on {where}, of type {node.get('type')!r}: only string, integer and boolean may be"
            )
        found.append(ParamHeader(name, path))
    for key, value in node.items():
        if key == ANNOTATION or key in _DATA_KEYWORDS:
            continue
        if key == "properties" and path is not None and isinstance(value, dict):
            for name, child in value.items():
                _collect(child, (*path, name), found)
        else:
            _collect(value, None, found)


class _VersionMeta(msgspec.Struct):
    version: Any = msgspec.field(name=lifecycle.VERSION_KEY, default=None)


class MirroredFields(msgspec.Struct):
    """The params members a request mirrors in headers, of any type: the
    server judges them, and the session refuses what is not well formed."""

    name: Any = None
    uri: Any = None
    taskId: Any = None
    arguments: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    # Of ``_meta``, only the version is decoded (the capabilities and client
    # info beside it are skipped); any other JSON value is taken as it is.
    meta: _VersionMeta | list[Any] | str | int | float | bool | None | msgspec.UnsetType = (
        msgspec.field(name="_meta", default=msgspec.UNSET)
    )

    @property
    def version(self) -> Any:
        """The protocol version the request's ``_meta`` names, if any."""
        return self.meta.version if isinstance(self.meta, _VersionMeta) else None

    def name_for(self, method: str) -> str | None:
        """The value ``Mcp-Name`` mirrors for ``method``, if it has one."""
        field = NAME_FIELDS.get(method)
        value = getattr(self, field) if field is not None else None
        return value if isinstance(value, str) else None


class _LooseFields(msgspec.Struct):
    """MirroredFields with ``_meta`` left undecoded: for params whose
    ``_meta`` does not decode (then the version is looked for alone)."""

    name: Any = None
    uri: Any = None
    taskId: Any = None
    arguments: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    meta: msgspec.Raw | msgspec.UnsetType = msgspec.field(name="_meta", default=msgspec.UNSET)


_mirrored_fields = msgspec.json.Decoder(MirroredFields)
_loose_fields = msgspec.json.Decoder(_LooseFields)
_version_meta = msgspec.json.Decoder(_VersionMeta)


def mirrored_fields(params: msgspec.Raw | msgspec.UnsetType) -> MirroredFields:
    """The mirrored members of a request's params; none where the params are
    absent or not an object."""
    if isinstance(params, msgspec.UnsetType):
        return MirroredFields()
    try:
        return _mirrored_fields.decode(params)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        pass
    try:
        loose = _loose_fields.decode(params)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return MirroredFields()
    version = None
    if not isinstance(loose.meta, msgspec.UnsetType):
        try:
            version = _version_meta.decode(loose.meta).version
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            pass
    return MirroredFields(
        loose.name, loose.uri, loose.taskId, loose.arguments, _VersionMeta(version)
    )
