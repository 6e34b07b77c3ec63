"""Tools from functions: the schema from the signature, the result from the return value.

A :class:`ToolSpec` is built once by ``@app.tool()``; a call is one
``msgspec.convert`` of the arguments into the Struct the signature gave, the
function, and one encode of what it returned.
"""

from __future__ import annotations

import inspect
import logging
import re
import types
import typing
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET

from .. import jsonrpc
from ..auth.principal import InsufficientScope
from ..codec import join_paths
from ..jsonrpc import McpError
from ..methods import RequestContext
from .context import Context, InputRounds
from .errors import InputRequired, ToolError
from .flavor import Flavor, content_types, result_types
from .schema import JSON_SCHEMA_DIALECT, Signature, analyse, object_schema, type_hints

logger = logging.getLogger("mcp_runtime.app")

# The tool names the specification recommends (2025-11-25 on): clients may refuse others.
_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")

# How a tool's return value becomes a CallToolResult, decided from its return annotation.
_TEXT, _NONE, _OBJECT, _WRAPPED, _PASS, _DYNAMIC = (
    "text",
    "none",
    "object",
    "wrapped",
    "pass",
    "dynamic",
)


class ToolSpec:
    """One tool: what ``tools/list`` shows and how ``tools/call`` runs it."""

    __slots__ = (
        "name",
        "fn",
        "is_async",
        "signature",
        "wire",
        "output",
        "output_schema",
        "scopes",
        "_arguments",
        "_context_param",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: Mapping[str, Any] | None = None,
        icons: Sequence[Mapping[str, Any]] | None = None,
        meta: Mapping[str, Any] | None = None,
        scopes: Sequence[str] = (),
        structured_output: bool | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name or fn.__name__
        if not _TOOL_NAME.match(self.name):
            logger.warning(
                "tool name %r is not 1 to 128 of A-Z, a-z, 0-9, '_', '-', '.': some clients refuse it",
                self.name,
            )
        self.fn = fn
        hints = type_hints(fn)
        # A plain function annotated to return an awaitable is awaited too.
        self.is_async = inspect.iscoroutinefunction(fn) or _awaited(
            hints.get("return")
        ) is not hints.get("return")
        self.signature: Signature = analyse(fn, context_type=Context, what="tool", hints=hints)
        self.output, self.output_schema = _output(fn, hints, structured_output)
        self.scopes = frozenset(scopes)
        # An input_schema given replaces the derived one in tools/list (keywords
        # no signature spells: if/then/else, $anchor ...); arguments are still
        # decoded by the signature, so the two must agree.
        advertised = dict(input_schema) if input_schema is not None else dict(self.signature.schema)
        wire: dict[str, Any] = {"name": self.name, "inputSchema": advertised}
        if title is not None:
            wire["title"] = title
        text = description if description is not None else self.signature.description
        if text is not None:
            wire["description"] = text
        if self.output_schema is not None:
            wire["outputSchema"] = self.output_schema
        if annotations is not None:
            wire["annotations"] = dict(annotations)
        if icons is not None:
            wire["icons"] = [dict(icon) for icon in icons]
        if meta is not None:
            wire["_meta"] = dict(meta)
        self.wire = wire
        self._arguments = self.signature.arguments
        self._context_param = self.signature.context_param

    async def call(self, params: Any, request: RequestContext, flavor: Flavor) -> Any:
        """Answer a tools/call of this tool in ``flavor``'s revision."""
        if self.scopes:
            check_scopes(request, self.scopes)
        arguments = params.arguments
        try:
            decoded = msgspec.convert(
                {} if arguments is UNSET or arguments is None else arguments, self._arguments
            )
        except msgspec.ValidationError as error:
            message = f"Invalid arguments for tool {self.name!r}: {join_paths(str(error))}"
            if flavor.validation_as_tool_error:
                return flavor.text_result(message, is_error=True)
            raise McpError(jsonrpc.INVALID_PARAMS, message) from None
        kwargs = msgspec.structs.asdict(decoded)
        rounds = None
        if self._context_param is not None:
            if flavor.modern:
                rounds = InputRounds(params.input_responses, params.request_state)
            kwargs[self._context_param] = Context(request, params, flavor, rounds)
        try:
            value = self.fn(**kwargs)
            if self.is_async:
                value = await value
        except ToolError as error:
            return flavor.text_result(str(error), is_error=True)
        except InputRequired as asked:
            assert rounds is not None  # only a modern context asks this way
            return flavor.input_required(asked, rounds.state())
        return self._result(value, flavor)

    def _result(self, value: Any, flavor: Flavor) -> Any:
        output = self.output
        if output == _OBJECT:
            raw = msgspec.json.encode(value)
            return flavor.structured_result(raw, raw.decode())
        if output == _TEXT:
            return flavor.text_result(value)
        if output == _WRAPPED:
            raw = msgspec.json.encode(value)
            return flavor.structured_result(b'{"result":' + raw + b"}", raw.decode())
        if output == _NONE:
            return flavor.call_tool_result(content=[])
        return _dynamic_result(value, flavor)


def check_scopes(request: RequestContext, scopes: frozenset[str]) -> None:
    """Refuse a caller whose verified token lacks ``scopes`` (no token, no check:
    transports without authorization pass no principal)."""
    principal = request.principal
    if principal is not None and not principal.has_scopes(scopes):
        raise InsufficientScope(scopes)


def _dynamic_result(value: Any, flavor: Flavor) -> Any:
    """A value whose type the annotation did not fix: decided by what it is."""
    if isinstance(value, str):
        return flavor.text_result(value)
    if value is None:
        return flavor.call_tool_result(content=[])
    if isinstance(value, result_types()):
        return value
    if isinstance(value, content_types()):
        return flavor.call_tool_result(content=[value])
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(item, content_types()) for item in value)
    ):
        return flavor.call_tool_result(content=list(value))
    raw = msgspec.json.encode(value)
    if raw[:1] == b"{":
        return flavor.structured_result(raw, raw.decode())
    return flavor.text_result(raw.decode())


def _output(
    fn: Callable[..., Any], hints: Mapping[str, Any], structured: bool | None
) -> tuple[str, dict[str, Any] | None]:
    """How results are built, and the outputSchema, from the return annotation."""
    if "return" not in hints:
        return _DYNAMIC, None
    annotation = hints["return"]
    annotation = _awaited(
        annotation
    )  # an ``async def`` is annotated with what it returns, others may say Awaitable[T]
    if annotation is Any:
        return _DYNAMIC, None
    if annotation is None or annotation is type(None):
        return _NONE, None
    if _is_passthrough(annotation):
        return _PASS if structured is not True else _DYNAMIC, None
    if annotation is str and structured is not True:
        return _TEXT, None
    if structured is False:
        return _DYNAMIC, None
    try:
        schema = object_schema(annotation)
    except (TypeError, ValueError) as error:
        raise TypeError(
            f"tool {fn.__qualname__}: its return type {annotation!r} has no JSON Schema "
            f"(annotate it with a JSON type, or pass structured_output=False): {error}"
        ) from None
    if schema.get("type") == "object" and not _may_be_null(annotation):
        return _OBJECT, {"$schema": JSON_SCHEMA_DIALECT, **schema}
    defs = schema.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return _WRAPPED, wrapped


def _awaited(annotation: Any) -> Any:
    origin = typing.get_origin(annotation)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Awaitable):
        args = typing.get_args(annotation)
        return args[-1] if args else Any
    return annotation


def _may_be_null(annotation: Any) -> bool:
    return type(None) in typing.get_args(annotation)


def _is_passthrough(annotation: Any) -> bool:
    """Content blocks, lists of them, or a CallToolResult: returned as they are."""
    members = _union_members(annotation)
    return all(_is_passthrough_member(member) for member in members)


def _is_passthrough_member(annotation: Any) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, result_types() + content_types()):
        return True
    origin = typing.get_origin(annotation)
    if origin in (list, Sequence, tuple):
        args = [arg for arg in typing.get_args(annotation) if arg is not Ellipsis]
        return bool(args) and all(
            isinstance(member, type) and issubclass(member, content_types())
            for arg in args
            for member in _union_members(arg)
        )
    return False


def _union_members(annotation: Any) -> tuple[Any, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)
