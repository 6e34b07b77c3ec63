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
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import msgspec

from ..._core import jsonrpc, lifecycle
from ..._core.logsafe import quoted

logger = logging.getLogger(__name__)

METHOD: Final = "mcp-method"
NAME: Final = "mcp-name"
PARAM_PREFIX: Final = "mcp-param-"

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
        field = lifecycle.bindings().name_fields.get(method)  # generated protocol facts
        value = getattr(self, field, None) if field is not None else None
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


# ---------------------------------------------------------------- client side: filling them in


class _CancelledParams(msgspec.Struct):
    requestId: jsonrpc.RequestId | msgspec.UnsetType = msgspec.UNSET


_cancelled_params = msgspec.json.Decoder(_CancelledParams)
_any = msgspec.json.Decoder()
# The attribute of each wire member, by Struct type: a request's params are read, not decoded.
_attributes: dict[type, dict[str, str]] = {}


def member(params: Any, key: str) -> Any:
    """The member ``key`` (its wire name) of params a session had as a value:
    a typed Struct or a mapping. None where there is none."""
    kind = type(params)
    attributes = _attributes.get(kind)  # first: a Struct type seen before skips the ABC test
    if attributes is None:
        if isinstance(params, Mapping):
            return params.get(key)
        try:
            fields = msgspec.structs.fields(kind)
        except TypeError:  # not a Struct: nothing to read
            fields = ()
        attributes = _attributes[kind] = {field.encode_name: field.name for field in fields}
    name = attributes.get(key)
    value = getattr(params, name, None) if name is not None else None
    return None if value is msgspec.UNSET else value


def _encoded(params: Any) -> bool:
    return isinstance(params, (bytes, msgspec.Raw))


def cancelled_id(params: Any) -> jsonrpc.RequestId | None:
    """The id a notifications/cancelled names, from its params as the session
    had them (a value, or encoded bytes: then decoded)."""
    if params is None:
        return None
    if _encoded(params):
        try:
            found = _cancelled_params.decode(params).requestId
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return None
        return None if isinstance(found, msgspec.UnsetType) else found
    found = member(params, "requestId")
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


class Mirror:
    """What a client puts in the headers of its requests: ``Mcp-Method``
    always, and from 2026-07-28 on ``MCP-Protocol-Version`` (the version the
    request's ``_meta`` names), ``Mcp-Name`` and ``Mcp-Param-*`` for the tool
    arguments marked with ``x-mcp-header``. The marks come from tools/list
    responses, which :meth:`screen` reads (and rids of tools whose marks are
    invalid, as the specification has clients do).

    Read from the params as the session had them (the typed value it
    encoded), so nothing the session encoded is decoded again; params that
    came encoded (``request_raw``) are decoded."""

    def __init__(self) -> None:
        self._marks: dict[str, list[ParamHeader]] = {}  # x-mcp-header marks by tool

    def request_headers(
        self, method: str, params: Any, negotiated: str | None
    ) -> tuple[dict[str, str], bool]:
        """The headers mirroring a request's body, and whether it is a
        2026-07-28 request (its ``_meta`` names a revision without handshake).
        ``negotiated``: the session's revision, if known yet."""
        headers = {METHOD: method}
        if negotiated in lifecycle.handshake_versions():
            return headers, False  # a handshake session: its requests name no version of their own
        arguments: Any
        if _encoded(params):
            fields = mirrored_fields(msgspec.Raw(params))
            name, version, arguments = fields.name_for(method), fields.version, fields.arguments
        else:
            field = lifecycle.bindings().name_fields.get(method)
            found = member(params, field) if field is not None and params is not None else None
            name = found if isinstance(found, str) else None
            meta = member(params, "_meta") if params is not None else None
            version = meta.get(lifecycle.VERSION_KEY) if isinstance(meta, Mapping) else None
            arguments = member(params, "arguments") if params is not None else None
        if name is not None:
            headers[NAME] = encode_value(name)
        if not isinstance(version, str) or version in lifecycle.handshake_versions():
            return headers, False
        headers["mcp-protocol-version"] = version
        marks = self._marks.get(name) if method == "tools/call" and name is not None else None
        if marks:
            self._mirror_arguments(headers, marks, arguments)
        return headers, True

    @staticmethod
    def _mirror_arguments(headers: dict[str, str], marks: list[ParamHeader], raw: Any) -> None:
        # As the body has them: encoded, then read back as JSON values.
        if raw is None or raw is msgspec.UNSET:
            return
        try:
            if _encoded(raw):
                arguments = _any.decode(raw)
            else:
                arguments = msgspec.to_builtins(raw)
        except (msgspec.MsgspecError, TypeError, *jsonrpc.UNDECODABLE):
            return
        for param in marks:
            text = header_text(param.value_in(arguments))
            if text is not None:  # absent or null: no header
                headers[param.header] = encode_value(text)

    def screen(self, result: msgspec.Raw) -> bytes | None:
        """A tools/list result without the tools whose x-mcp-header marks
        are invalid, encoded; None when it keeps them all (or is not one to
        screen). The marks of the others are kept for their calls."""
        try:
            value = _any.decode(result)
        except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
            return None
        tools = value.get("tools") if isinstance(value, dict) else None
        if not isinstance(tools, list):
            return None
        kept: list[Any] = []
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if not isinstance(name, str):
                kept.append(tool)
                continue
            try:
                marks = param_headers(tool.get("inputSchema"))
            except InvalidAnnotation as error:
                logger.warning("leaving tool %s out of tools/list: %s", quoted(name), quoted(error))
                self._marks.pop(name, None)
                continue
            if marks:
                self._marks[name] = marks
            else:
                self._marks.pop(name, None)
            kept.append(tool)
        if len(kept) == len(tools):
            return None
        value["tools"] = kept
        return msgspec.json.encode(value)
