"""Tools from functions: the schema from the signature, the result from the return value.

A :class:`ToolSpec` is built once by ``@app.tool()``; a call is one
``msgspec.convert`` of the arguments into the Struct the signature gave, the
function, and one encode of what it returned.
"""

from __future__ import annotations

import functools
import inspect
import logging
import re
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, TypedDict

import msgspec
from msgspec import UNSET

from .._core import jsonrpc
from .._core.jsonrpc import McpError
from ..auth._principal import InsufficientScope
from ..codec import join_paths
from ..methods import RequestContext
from ._context import Context, InputRounds
from ._errors import InputRequired, ToolError
from ._flavor import Flavor, NamedCall, content_types, result_types
from ._media import MEDIA_TYPES, to_block
from ._schema import JSON_SCHEMA_DIALECT, Signature, analyse, object_schema, type_hints
from ._ui import UiResource, UiVisibility, tool_meta

logger = logging.getLogger(__name__)

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


# How a tool runs as a task (see .core_tasks): None, it does not.
TaskSupport = Literal["optional", "required"]


class ToolAnnotations(TypedDict, total=False):
    """Hints about a tool's behaviour (``annotations=``); a misspelled key is a mypy error."""

    title: str
    readOnlyHint: bool
    destructiveHint: bool
    idempotentHint: bool
    openWorldHint: bool


_ANNOTATION_KEYS = frozenset(ToolAnnotations.__annotations__)


def checked_annotations(annotations: Mapping[str, object], where: str) -> dict[str, object]:
    """``annotations`` as a dict, or TypeError naming a key no revision defines."""
    unknown = sorted(set(annotations) - _ANNOTATION_KEYS)
    if unknown:
        raise TypeError(
            f"{where}: unknown tool annotation {', '.join(map(repr, unknown))} "
            f"(known: {', '.join(sorted(_ANNOTATION_KEYS))})"
        )
    return dict(annotations)


class ToolSpec:
    """One tool: what ``tools/list`` shows and how ``tools/call`` runs it."""

    __slots__ = (
        "name",
        "fn",
        "tags",
        "task_support",
        "is_async",
        "signature",
        "wire",
        "output",
        "output_schema",
        "scopes",
        "_arguments",
        "_context_param",
        "_conforms",
        "_declared",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | Mapping[str, object] | None = None,
        icons: Sequence[Mapping[str, object]] | None = None,
        meta: Mapping[str, object] | None = None,
        scopes: Sequence[str] = (),
        structured_output: bool | None = None,
        input_schema: Mapping[str, object] | None = None,
        tags: Iterable[str] = (),
        task_support: TaskSupport | None = None,
        ui: UiResource | None = None,
        ui_visibility: Sequence[UiVisibility] | None = None,
    ) -> None:
        self.name = name or fn.__name__
        self.tags = frozenset(tags)
        if task_support not in (None, "optional", "required"):
            raise ValueError(f"tool {self.name!r}: task_support is 'optional', 'required' or None")
        self.task_support: TaskSupport | None = task_support
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
        # What checks a structured result against its outputSchema: a Struct is
        # not validated when built, so its encoding is decoded as the declared type.
        declared = _awaited(hints["return"]) if self.output in (_OBJECT, _WRAPPED) else None
        self._conforms = msgspec.json.Decoder(declared) if declared is not None else None
        # A value of exactly the declared class encodes as the declared type; any
        # other (a subclass, a dict for a TypedDict) is re-encoded from its decoding,
        # so members the output type does not declare never reach the client.
        self._declared = declared if isinstance(declared, type) else None
        self.scopes = frozenset(scopes)
        # An input_schema given replaces the derived one in tools/list (keywords
        # no signature spells: if/then/else, $anchor ...); arguments are still
        # decoded by the signature, so the two must agree.
        advertised = dict(input_schema) if input_schema is not None else dict(self.signature.schema)
        wire: dict[str, object] = {"name": self.name, "inputSchema": advertised}
        if title is not None:
            wire["title"] = title
        text = description if description is not None else self.signature.description
        if text is not None:
            wire["description"] = text
        if self.output_schema is not None:
            wire["outputSchema"] = self.output_schema
        if annotations is not None:
            wire["annotations"] = checked_annotations(annotations, f"tool {self.name!r}")
        if icons is not None:
            wire["icons"] = [dict(icon) for icon in icons]
        if meta is not None:
            wire["_meta"] = dict(meta)
        if ui is not None:
            if not isinstance(ui, UiResource):
                raise TypeError(
                    f"tool {self.name!r}: ui= takes the UiResource app.ui_resource() returned, not {ui!r}"
                )
            own = dict(meta) if meta is not None else {}
            wire["_meta"] = {**own, **tool_meta(ui, ui_visibility)}
        elif ui_visibility is not None:
            raise TypeError(f"tool {self.name!r}: ui_visibility= needs ui=")
        if task_support is not None:
            wire["execution"] = {"taskSupport": task_support}  # 2025-11-25 only: others drop it
        self.wire = wire
        self._arguments = self.signature.arguments
        self._context_param = self.signature.context_param

    async def call(self, params: NamedCall, request: RequestContext, flavor: Flavor) -> object:
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
            if flavor.stateless:
                rounds = InputRounds.of(params)
            kwargs[self._context_param] = Context(request, params, flavor, rounds)
        try:
            value = self.fn(**kwargs)
            if self.is_async:
                value = await value
        except ToolError as error:
            return flavor.text_result(str(error), is_error=True)
        except InputRequired as asked:
            assert rounds is not None  # only a stateless context asks this way
            return flavor.input_required(asked, rounds.state())
        return self._result(value, flavor)

    def _result(self, value: Any, flavor: Flavor) -> object:
        output = self.output
        if output == _OBJECT:
            raw = msgspec.json.encode(value)
            raw, problem = self._as_declared(raw, value, flavor)
            if problem is not None:
                return flavor.text_result(problem, is_error=True)
            return flavor.structured_result(raw, raw.decode())
        if output == _TEXT:
            return flavor.text_result(value)
        if output == _WRAPPED:
            raw = msgspec.json.encode(value)
            raw, problem = self._as_declared(raw, value, flavor)
            if problem is not None:
                return flavor.text_result(problem, is_error=True)
            return flavor.structured_result(b'{"result":' + raw + b"}", raw.decode())
        if output == _NONE:
            return flavor.call_tool_result(content=[])
        return _dynamic_result(value, flavor)

    def _as_declared(self, raw: bytes, value: object, flavor: Flavor) -> tuple[bytes, str | None]:
        """The encoded result as the declared output type (undeclared members
        dropped), and why it does not conform to the outputSchema, if it does
        not (revisions without structuredContent advertise no schema to break)."""
        if self._conforms is None:
            return raw, None
        try:
            decoded = self._conforms.decode(raw)
        except msgspec.ValidationError as error:
            if not flavor.structured:
                return raw, None
            logger.error(
                "tool %r returned a result outside its output schema: %s", self.name, error
            )
            return raw, (
                f"Tool {self.name!r} returned a result that does not conform to its output "
                f"schema: {join_paths(str(error))}"
            )
        if self._declared is not None and type(value) is self._declared:
            return raw, None
        return msgspec.json.encode(decoded), None


@functools.cache
def _blocks() -> tuple[type, ...]:
    """What a tool may return as content: blocks of any revision and the media helpers."""
    return content_types() + MEDIA_TYPES


def check_scopes(request: RequestContext, scopes: frozenset[str]) -> None:
    """Refuse a caller whose verified token lacks ``scopes`` (no token, no check:
    transports without authorization pass no principal)."""
    principal = request.principal
    if principal is not None and not principal.has_scopes(scopes):
        raise InsufficientScope(scopes)


def _dynamic_result(value: object, flavor: Flavor) -> object:
    """A value whose type the annotation did not fix: decided by what it is."""
    if isinstance(value, str):
        return flavor.text_result(value)
    if value is None:
        return flavor.call_tool_result(content=[])
    if isinstance(value, result_types()):
        if isinstance(value, flavor.call_tool_result) or not isinstance(
            value, flavor.foreign_call_results
        ):
            return value  # this revision's (or a subclass), or an input-required result
        return flavor.own_result(value)
    if isinstance(value, _blocks()):
        return flavor.call_tool_result(content=[to_block(value, flavor)])
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(item, (str, *_blocks())) for item in value)
        and not all(isinstance(item, str) for item in value)
    ):
        return flavor.call_tool_result(content=[to_block(item, flavor) for item in value])
    raw = msgspec.json.encode(value)
    if raw[:1] == b"{":
        return flavor.structured_result(raw, raw.decode())
    return flavor.text_result(raw.decode())


def _output(
    fn: Callable[..., object], hints: Mapping[str, object], structured: bool | None
) -> tuple[str, dict[str, object] | None]:
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
    wrapped: dict[str, object] = {
        "$schema": JSON_SCHEMA_DIALECT,
        "type": "object",
        "properties": {"result": schema},
        "required": ["result"],
    }
    if defs:
        wrapped["$defs"] = defs
    return _WRAPPED, wrapped


def _awaited(annotation: object) -> object:
    origin = typing.get_origin(annotation)
    if origin is not None and isinstance(origin, type) and issubclass(origin, Awaitable):
        args = typing.get_args(annotation)
        return args[-1] if args else Any
    return annotation


def _may_be_null(annotation: object) -> bool:
    return type(None) in typing.get_args(annotation)


def _is_passthrough(annotation: object) -> bool:
    """Content blocks, lists of them, or a CallToolResult: returned as they are."""
    members = _union_members(annotation)
    return all(_is_passthrough_member(member) for member in members)


def _is_passthrough_member(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, result_types() + _blocks()):
        return True
    origin = typing.get_origin(annotation)
    if origin in (list, Sequence, tuple):
        args = [arg for arg in typing.get_args(annotation) if arg is not Ellipsis]
        members = [member for arg in args for member in _union_members(arg)]
        return (
            bool(members)
            and all(
                isinstance(member, type) and issubclass(member, (str, *_blocks()))
                for member in members
            )
            and any(member is not str for member in members)
        )
    return False


def _union_members(annotation: object) -> tuple[object, ...]:
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return typing.get_args(annotation)
    return (annotation,)
