"""What differs between protocol revisions, resolved once per revision.

The application layer writes one set of functions; each revision's handlers
get a :class:`Flavor` that knows that revision's types and what it lacks
(``structuredContent`` before 2025-06-18, titles and icons, caching hints and
input-required results from 2026-07-28 on).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any, Protocol, cast

import msgspec

from .. import codec
from .._core import jsonrpc, lifecycle
from ._media import to_block

if TYPE_CHECKING:
    from ._errors import InputRequired

# A resource that does not exist: -32002 (the code the specification
# recommended) until 2026-07-28 made it invalid params (SEP-2164).
RESOURCE_NOT_FOUND = -32002


class NamedCall(Protocol):
    """The params of a ``tools/call`` or ``prompts/get`` in every revision."""

    @property
    def name(self) -> str: ...

    @property
    def arguments(self) -> Mapping[str, object] | msgspec.UnsetType: ...


class RevisionTypes(Protocol):
    """What the application layer builds from a revision's generated package
    (``mcpbind_protocol.v2025_11_25`` ...): every revision has these; the content
    blocks and results only some have are looked up by name (:meth:`Flavor.has_block`)."""

    AnsweringHandlers: Callable[..., object]  # (a RegistryAnswers): its ServerHandlers
    CallToolResult: type[msgspec.Struct]
    TextContent: type[msgspec.Struct]
    ListToolsResult: type[msgspec.Struct]
    ListResourcesResult: type[msgspec.Struct]
    ListResourceTemplatesResult: type[msgspec.Struct]
    ListPromptsResult: type[msgspec.Struct]
    GetPromptResult: type[msgspec.Struct]
    PromptMessage: type[msgspec.Struct]
    ReadResourceResult: type[msgspec.Struct]
    TextResourceContents: type[msgspec.Struct]
    BlobResourceContents: type[msgspec.Struct]
    EmbeddedResource: type[msgspec.Struct]
    ImageContent: type[msgspec.Struct]


class Flavor:
    """One revision's types and capabilities, for the handlers of that revision."""

    def __init__(self, version: str, *, ttl_ms: int, cache_scope: str) -> None:
        revision = lifecycle.revision(version)
        self.version = version
        self.revision = revision
        # The package is imported by name: this is where it is given the shape it is generated with.
        self.types = cast(RevisionTypes, revision.package)
        self.stateless = not revision.has_handshake
        self.structured = (
            "structured_content" in self.type_named("CallToolResult").__struct_fields__
        )
        # Tool input validation errors are tool execution errors from 2025-11-25 on
        # (the model can correct its call); before, they are -32602 protocol errors.
        call = revision.all_methods.get("tools/call")
        self.validation_as_tool_error = call is not None and call.input_errors_as_result
        self.resource_not_found = jsonrpc.INVALID_PARAMS if self.stateless else RESOURCE_NOT_FOUND
        self.text_content = self.types.TextContent
        self.call_tool_result = self.types.CallToolResult
        # 2026-07-28 list and read results must say how long they stay fresh.
        self.cache_hints: dict[str, int | str] = (
            {"ttl_ms": ttl_ms, "cache_scope": cache_scope} if self.stateless else {}
        )
        # This revision's content block types: a block of one of them is sent as it is.
        self.own_blocks = frozenset(
            type_
            for name in _BLOCK_NAMES
            if isinstance(type_ := getattr(self.types, name, None), type)
        )
        # Other revisions' CallToolResult types: converted to this one's when returned.
        self.foreign_call_results = tuple(
            type_
            for other in lifecycle.revisions().values()
            if isinstance(type_ := getattr(other.package, "CallToolResult", None), type)
            and type_ is not self.call_tool_result
        )
        # What the app lends its functions' contexts (lifespan, session state ...): set by the App.
        self.services: Any = None

    def type_named(self, name: str) -> Any:
        """This revision's generated type ``name`` (``CallToolResult`` ...)."""
        return vars(self.revision.package)[name]

    def has_block(self, name: str) -> bool:
        """Whether this revision has the content block type ``name`` (``AudioContent`` ...)."""
        return isinstance(getattr(self.types, name, None), type)

    def own_result(self, value: object) -> object:
        """A CallToolResult of another revision as this revision's: its blocks
        converted (with media fallbacks), members this revision lacks
        (``resultType`` before 2026-07-28 ...) dropped."""
        wire = msgspec.to_builtins(value)
        blocks = [to_block(block, self) for block in getattr(value, "content", [])]
        wire["content"] = []
        result = self.convert(wire, "CallToolResult")
        return msgspec.structs.replace(result, content=blocks)

    def convert(self, wire: Mapping[str, object], type_name: str) -> Any:
        """A wire-shaped dict as this revision's type: members the revision
        does not have (``outputSchema`` before 2025-06-18 ...) are dropped."""
        return codec.convert(wire, self.type_named(type_name))

    def text_result(self, text: str, *, is_error: bool = False) -> object:
        if is_error:
            return self.call_tool_result(content=[self.text_content(text=text)], is_error=True)
        return self.call_tool_result(content=[self.text_content(text=text)])

    def structured_result(self, raw: bytes, text: str) -> object:
        """``raw`` (encoded JSON of an object) as structuredContent, and its text."""
        if self.structured:
            return self.call_tool_result(
                content=[self.text_content(text=text)], structured_content=msgspec.Raw(raw)
            )
        return self.call_tool_result(content=[self.text_content(text=text)])

    def input_required(self, asked: InputRequired, request_state: str) -> object:
        """The input-required result asking what ``asked`` names, carrying
        ``request_state`` (the answers so far, sealed)."""
        return self.type_named("InputRequiredResult")(
            input_requests={asked.key: asked.request}, request_state=request_state
        )

    def input_request(self, method: str, params: Mapping[str, object]) -> object:
        """A request the client answers inside an input-required result (2026-07-28)."""
        spec = self.revision.table("INPUT_REQUESTS")[method]
        request_type = self.revision.input_request_type(method)
        return request_type(params=codec.convert(params, spec.params))


_BLOCK_NAMES = ("TextContent", "ImageContent", "AudioContent", "EmbeddedResource", "ResourceLink")


@cache
def result_types() -> tuple[type, ...]:
    """Every revision's CallToolResult and InputRequiredResult: returned as they are."""
    found: list[type] = []
    for revision in lifecycle.revisions().values():
        for name in ("CallToolResult", "InputRequiredResult"):
            type_ = getattr(revision.package, name, None)
            if isinstance(type_, type):
                found.append(type_)
    return tuple(found)


@cache
def content_types() -> tuple[type, ...]:
    """Every revision's content block types (text, image, audio, embedded resource, resource link)."""
    found: list[type] = []
    for revision in lifecycle.revisions().values():
        for name in _BLOCK_NAMES:
            type_ = getattr(revision.package, name, None)
            if isinstance(type_, type):
                found.append(type_)
    return tuple(found)
