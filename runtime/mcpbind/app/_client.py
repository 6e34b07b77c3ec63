"""Typed tool calls from the client side.

``await call_tool_typed(session, "search_notes", {"query": "x"}, result_type=Hits)``
calls a tool and decodes its ``structuredContent`` into ``Hits`` (a Struct,
dataclass, TypedDict or any type msgspec converts to); with ``schemas`` (from
:meth:`ToolSchemas.fetch`) the structured content is first checked against
the tool's ``outputSchema`` (JSON Schema 2020-12, with the ``jsonschema``
package: ``pip install 'mcpbind[validation]'``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import msgspec
from msgspec import UNSET

from .._client.client import ClientSession
from .._core import lifecycle
from ..methods import ProgressCallback

T = TypeVar("T")


class OutputMismatch(Exception):
    """A tool's result is not what the caller expects: no structuredContent,
    content that breaks the tool's outputSchema, or content that does not
    decode into the result type."""


class ToolCallFailed(Exception):
    """The tool answered with a tool execution error (``isError: true``):
    ``message`` is its text, ``content`` its content blocks and
    ``structured_content`` its structured content, if any."""

    def __init__(
        self,
        name: str,
        message: str,
        *,
        content: Sequence[object] = (),
        structured_content: object = None,
    ) -> None:
        super().__init__(f"tool {name!r} failed: {message}")
        self.name = name
        self.message = message
        self.content = list(content)
        self.structured_content = structured_content


class ToolSchemas:
    """The outputSchema of each tool a server lists, to validate results against."""

    def __init__(self, schemas: Mapping[str, Mapping[str, Any]]) -> None:
        self.schemas = dict(schemas)
        self._validators: dict[str, Any] = {}

    @classmethod
    async def fetch(cls, session: ClientSession) -> ToolSchemas:
        """Every page of ``tools/list`` of the session's server."""
        spec = lifecycle.revision(session.protocol_version).all_methods["tools/list"]
        schemas: dict[str, Mapping[str, Any]] = {}
        cursor: object = UNSET
        while True:
            page = await session.request(spec, spec.params(cursor=cursor))
            for tool in page.tools:
                output = getattr(tool, "output_schema", UNSET)
                if isinstance(output, Mapping):
                    schemas[tool.name] = output
            cursor = page.next_cursor
            if not isinstance(cursor, str):
                return cls(schemas)

    def validate(self, name: str, structured: object) -> None:
        """Raise :class:`OutputMismatch` if ``structured`` breaks tool ``name``'s outputSchema."""
        schema = self.schemas.get(name)
        if schema is None:
            return
        validator = self._validators.get(name)
        if validator is None:
            validator = self._validators[name] = _validator(schema)
        errors = sorted(
            validator.iter_errors(structured), key=lambda error: list(error.absolute_path)
        )
        if errors:
            first = errors[0]
            where = "$" + "".join(
                f"[{part}]" if isinstance(part, int) else f".{part}" for part in first.absolute_path
            )
            raise OutputMismatch(
                f"tool {name!r}: structuredContent does not match its outputSchema at `{where}`: {first.message}"
                + (f" (and {len(errors) - 1} more)" if len(errors) > 1 else "")
            )


def validate_structured(
    schema: Mapping[str, object], structured: object, *, name: str = "tool"
) -> None:
    """Check ``structured`` against an outputSchema; raises :class:`OutputMismatch`."""
    ToolSchemas({name: schema}).validate(name, structured)


async def call_tool_typed(
    session: ClientSession,
    name: str,
    arguments: Mapping[str, object] | None = None,
    *,
    result_type: type[T],
    schemas: ToolSchemas | None = None,
    timeout: float | None = None,
    on_progress: ProgressCallback | None = None,
) -> T:
    """Call tool ``name`` and decode its structuredContent into ``result_type``.

    A tool execution error raises :class:`ToolCallFailed`; a result without
    structured content, or one that breaks the outputSchema in ``schemas`` or
    does not fit ``result_type``, raises :class:`OutputMismatch`. A tool whose
    result is not an object wraps it as ``{"result": ...}``; that is unwrapped.
    """
    spec = lifecycle.revision(session.protocol_version).all_methods["tools/call"]
    params = spec.params(name=name, arguments=dict(arguments) if arguments is not None else UNSET)
    result = await session.request(spec, params, timeout=timeout, on_progress=on_progress)
    if result.is_error is True:
        texts = [
            block.text for block in result.content if isinstance(getattr(block, "text", None), str)
        ]
        raise ToolCallFailed(name, " ".join(texts) or "no message")
    structured = getattr(result, "structured_content", UNSET)
    if structured is UNSET or structured is None:
        raise OutputMismatch(
            f"tool {name!r} returned no structuredContent (protocol revision {session.protocol_version})"
        )
    if schemas is not None:
        schemas.validate(name, structured)
    try:
        return msgspec.convert(structured, result_type)
    except msgspec.ValidationError as error:
        if isinstance(structured, Mapping) and structured.keys() == {"result"}:
            try:
                return msgspec.convert(structured["result"], result_type)
            except msgspec.ValidationError:
                pass
        raise OutputMismatch(
            f"tool {name!r}: structuredContent is not a {_name(result_type)}: {error}"
        ) from None


def _name(type_: object) -> str:
    return getattr(type_, "__qualname__", None) or repr(type_)


def _validator(schema: Mapping[str, object]) -> Any:
    try:
        jsonschema: Any = importlib.import_module(
            "jsonschema"
        )  # untyped; loaded only where results are validated
    except ImportError:
        raise ImportError(
            "validating structuredContent needs the jsonschema package: pip install 'mcpbind[validation]'"
        ) from None
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    return cls(schema, format_checker=cls.FORMAT_CHECKER)
