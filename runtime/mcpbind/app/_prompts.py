"""Prompts from functions: arguments from the signature, messages from the return value.

Prompt arguments travel as strings; a parameter may be a ``str``, a number,
a ``bool``, a string ``Literal`` or ``Enum`` (converted from the string), or
optional. The function returns a string (one user message), a
:class:`Message`, a ``PromptMessage`` of any revision, a list of these, or a
``GetPromptResult`` of any revision (converted to the negotiated one's);
another return type is a mypy error (see :mod:`.registering`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

import msgspec

from ..codec import join_paths
from ..methods import RequestContext
from ._context import Context, InputRounds
from ._errors import InputRequired, PromptError, ToolError
from ._flavor import Flavor, NamedCall
from ._media import to_block
from ._schema import Signature, analyse
from ._tools import check_scopes

_PRIMITIVE = ("string", "integer", "number", "boolean")


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a prompt: text, or a content block of any revision."""

    role: Literal["user", "assistant"]
    content: Any
    """A string, an Image, Audio, File or Link, or a content block of any revision."""


class RevisionMessage(Protocol):
    """A ``PromptMessage`` of any revision (the generated Structs have these fields)."""

    @property
    def role(self) -> str: ...

    @property
    def content(self) -> object: ...


@runtime_checkable
class RevisionResult(Protocol):
    """A ``GetPromptResult`` of any revision."""

    @property
    def description(self) -> object: ...

    @property
    def messages(self) -> Sequence[RevisionMessage]: ...


class PromptSpec:
    """One prompt: what ``prompts/list`` shows and how ``prompts/get`` renders it."""

    __slots__ = ("name", "fn", "tags", "is_async", "signature", "wire", "description", "scopes")

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        icons: Sequence[Mapping[str, object]] | None = None,
        meta: Mapping[str, object] | None = None,
        scopes: Sequence[str] = (),
        tags: Iterable[str] = (),
    ) -> None:
        self.name = name or fn.__name__
        self.fn = fn
        self.tags = frozenset(tags)
        self.is_async = inspect.iscoroutinefunction(fn)
        self.signature: Signature = analyse(fn, context_type=Context, what="prompt")
        self.scopes = frozenset(scopes)
        self.description = description if description is not None else self.signature.description
        schema = self.signature.schema
        required = set(schema.get("required", ()))
        arguments = []
        for argument, prop in schema.get("properties", {}).items():
            if _kind(prop, schema.get("$defs", {})) not in _PRIMITIVE:
                raise TypeError(
                    f"prompt {fn.__qualname__}: parameter {argument!r} must be a string, number, boolean "
                    "or string enum (prompt arguments are strings)"
                )
            entry: dict[str, object] = {"name": argument}
            if "description" in prop:
                entry["description"] = prop["description"]
            if argument in required:
                entry["required"] = True
            arguments.append(entry)
        wire: dict[str, object] = {"name": self.name}
        if title is not None:
            wire["title"] = title
        if self.description is not None:
            wire["description"] = self.description
        if arguments:
            wire["arguments"] = arguments
        if icons is not None:
            wire["icons"] = [dict(icon) for icon in icons]
        if meta is not None:
            wire["_meta"] = dict(meta)
        self.wire = wire

    async def get(self, params: NamedCall, request: RequestContext, flavor: Flavor) -> object:
        if self.scopes:
            check_scopes(request, self.scopes)
        arguments = params.arguments if isinstance(params.arguments, Mapping) else {}
        try:
            kwargs = msgspec.structs.asdict(
                msgspec.convert(arguments, self.signature.arguments, strict=False)
            )
        except msgspec.ValidationError as error:
            raise PromptError(
                f"Invalid arguments for prompt {self.name!r}: {join_paths(str(error))}"
            ) from None
        rounds = None
        if self.signature.context_param is not None:
            if flavor.stateless:
                rounds = InputRounds.of(params)
            kwargs[self.signature.context_param] = Context(request, params, flavor, rounds)
        try:
            value = self.fn(**kwargs)
            if self.is_async:
                value = await value
        except ToolError as error:  # raised by the context (an answer that does not fit its form)
            raise PromptError(str(error)) from None
        except InputRequired as asked:
            assert rounds is not None
            return flavor.input_required(asked, rounds.state())
        if isinstance(value, flavor.types.GetPromptResult):
            return value
        description = self.description
        if isinstance(value, RevisionResult):
            # Another revision's GetPromptResult: its messages and description, as this one's.
            items = value.messages
            description = value.description if isinstance(value.description, str) else description
        else:
            items = value if isinstance(value, (list, tuple)) else [value]
        messages = [_message(item, flavor) for item in items]
        if description is not None:
            return flavor.types.GetPromptResult(description=description, messages=messages)
        return flavor.types.GetPromptResult(messages=messages)


def _message(item: object, flavor: Flavor) -> object:
    types = flavor.types
    if isinstance(item, str):
        return types.PromptMessage(role="user", content=types.TextContent(text=item))
    if isinstance(item, Message):
        return types.PromptMessage(role=item.role, content=to_block(item.content, flavor))
    if isinstance(item, types.PromptMessage):
        return item
    if hasattr(item, "role") and hasattr(item, "content"):  # a PromptMessage of another revision
        return types.PromptMessage(role=item.role, content=to_block(item.content, flavor))
    raise TypeError(
        f"a prompt returns strings, Message or PromptMessage values, not {type(item).__name__}"
    )


def _kind(prop: Mapping[str, Any], defs: Mapping[str, Any]) -> str | None:
    """The JSON type of a prompt argument's schema (None if not one primitive)."""
    if "$ref" in prop:
        prop = defs.get(str(prop["$ref"]).rsplit("/", 1)[1], {})
    options = prop.get("anyOf")
    if options is not None:
        concrete = [option for option in options if option.get("type") != "null"]
        return _kind(concrete[0], defs) if len(concrete) == 1 else None
    if "enum" in prop and "type" not in prop:
        return "string" if all(isinstance(value, str) for value in prop["enum"]) else None
    kind = prop.get("type")
    return kind if isinstance(kind, str) else None
