"""What generated server bindings stand on (``mcp-codegen server``).

A generated module holds msgspec Structs for a server's tool inputs and outputs
and a facade, a subclass of :class:`ServerBindings`, with one method per tool,
prompt and resource template. The facade's methods only name the tool and the
types; this module makes the calls: arguments encoded from the input Struct,
``structuredContent`` decoded into the output type, a tool error raised as
:class:`~mcpbind.app._client.ToolCallFailed` with the server's content, a
mismatch as :class:`~mcpbind.app._client.OutputMismatch` naming the tool
and the field.

Requests go out in the revision the session negotiated; results are handed
back as the types of the revision the bindings were generated against, so that
annotations stay true: a session of an older revision has its answers decoded
straight into the bindings' types (an older revision's types would drop what
newer ones carry, ``structuredContent`` before 2025-06-18), a session of a newer
revision has them converted through JSON by :mod:`~mcpbind.codec` (which
rebuilds unions without a tag, ``TextResourceContents | BlobResourceContents``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar
from urllib.parse import quote

import msgspec
from msgspec import UNSET

from . import codec
from ._client.client import ClientSession
from ._core import jsonrpc
from ._core.jsonrpc import McpError
from .app._client import OutputMismatch, ToolCallFailed
from .methods import MethodSpec, ProgressCallback

if TYPE_CHECKING:
    from typing_extensions import Self

    from .host import Host

__all__ = [
    "InvalidArguments",
    "OutputMismatch",
    "ServerBindings",
    "ToolCallFailed",
    "expand_uri_template",
]

T = TypeVar("T")

_TEXT_TYPES = ("text",)

# msgspec's validation message: "<what is wrong> - at `$.path`".
_AT = re.compile(r" - at `(?P<path>\$[^`]*)`$")


class InvalidArguments(ValueError):
    """A typed call's arguments break the tool's input schema (a bound, a
    pattern, a length the generated signature declares): nothing was sent.
    ``name`` is the tool's, ``path`` the field's (``$.travellers``, wire names),
    ``detail`` what is wrong."""

    def __init__(self, name: str, detail: str) -> None:
        at = _AT.search(detail)
        self.name = name
        self.path = at["path"] if at else "$"
        self.detail = detail
        super().__init__(f"tool {name!r}: invalid arguments, not sent: {detail}")


class ServerBindings:
    """The base of a generated facade: one session, or one server of a host.

    ``ServerBindings(session)`` calls through an open
    :class:`~mcpbind._client.client.ClientSession`; ``for_host(host, "name")``
    through whichever session the host holds for that entry at call time (a
    reconnected server is picked up). ``timeout`` is the default of every call.

    A tool's arguments are checked against its input schema before they are
    sent (:class:`InvalidArguments` names the tool and the field): the input
    Struct's constraints hold only when it is decoded, not when it is built.
    ``check_arguments=False`` sends them unchecked, for the server to judge.
    """

    PROTOCOL_VERSION: ClassVar[str] = ""
    """The revision the bindings were generated against (the snapshot's)."""

    def __init__(
        self,
        session: ClientSession | Callable[[], ClientSession],
        *,
        timeout: float | None = None,
        check_arguments: bool = True,
    ) -> None:
        self._session = session
        self._timeout = timeout
        self._check_arguments = check_arguments

    @classmethod
    def for_host(
        cls,
        host: Host,
        server: str,
        *,
        timeout: float | None = None,
        check_arguments: bool = True,
    ) -> Self:
        """Bindings to the entry ``server`` of ``host``."""
        return cls(lambda: host.session(server), timeout=timeout, check_arguments=check_arguments)

    @property
    def session(self) -> ClientSession:
        """The session calls go through now."""
        found = self._session
        return found if isinstance(found, ClientSession) else found()

    # ------------------------------------------------------------ what generated methods call

    def _spec(self, session: ClientSession, name: str) -> MethodSpec[Any, Any]:
        revision = session.client.bindings.revision(session.protocol_version)
        spec = getattr(revision.methods, name, None)
        if spec is None:
            raise OutputMismatch(
                f"protocol revision {session.protocol_version}, which the server answered, "
                f"has no {name.lower().replace('_', ' ')}"
            )
        return spec  # type: ignore[no-any-return]

    def _older(self, session: ClientSession) -> bool:
        """Whether the session speaks an older revision than the bindings'."""
        return bool(self.PROTOCOL_VERSION) and session.protocol_version < self.PROTOCOL_VERSION

    async def _request(
        self,
        session: ClientSession,
        name: str,
        params: Any,
        result_type: Any,
        *,
        timeout: float | None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """``name`` through the session; the answer of a session older than the
        bindings is read straight into ``result_type`` (the bindings' type):
        the older revision's types would drop members the bindings read
        (``structuredContent`` before 2025-06-18)."""
        spec = self._spec(session, name)
        if not self._older(session):
            return await session.request(spec, params, timeout=timeout, on_progress=on_progress)
        raw = await session.request(
            dataclasses.replace(spec, result=msgspec.Raw),
            params,
            timeout=timeout,
            on_progress=on_progress,
        )
        # A member a newer revision adds is optional in its types (2026-07-28's cacheScope
        # defaults to "private", as the schema corrections make it): an older answer converts.
        answer = msgspec.json.decode(raw)
        try:
            return codec.convert(answer, result_type)
        except msgspec.ValidationError as error:
            raise McpError(
                jsonrpc.INTERNAL_ERROR, f"invalid result for {spec.method}: {error}"
            ) from None

    async def _call(
        self,
        name: str,
        arguments: object,
        *,
        task: bool,
        timeout: float | None,
        on_progress: ProgressCallback | None,
        result_type: Any | None = None,
    ) -> Any:
        session = self.session
        wire = msgspec.to_builtins(arguments) if arguments is not None else UNSET
        if self._check_arguments and isinstance(arguments, msgspec.Struct):
            # Building a Struct checks no Meta constraint; decoding its wire form does.
            try:
                msgspec.convert(wire, type(arguments))
            except msgspec.ValidationError as error:
                raise InvalidArguments(name, str(error)) from None
        timeout = timeout if timeout is not None else self._timeout
        if not task:
            spec = self._spec(session, "TOOLS_CALL")
            if result_type is None and self._older(session):
                result_type = session.client.bindings.revision(self.PROTOCOL_VERSION).type(
                    "CallToolResult"
                )
            result = await self._request(
                session,
                "TOOLS_CALL",
                spec.params(name=name, arguments=wire),
                result_type,
                timeout=timeout,
                on_progress=on_progress,
            )
        else:
            # A task-required tool: create the task, then tasks/result, which the
            # server answers once the task is done with what tools/call answers.
            spec = self._spec(session, "TOOLS_CALL_AS_TASK")
            params = msgspec.convert({"name": name, "task": {}}, spec.params)
            params = msgspec.structs.replace(params, arguments=wire)
            created = await session.request(spec, params, timeout=timeout, on_progress=on_progress)
            fetch = self._spec(session, "TOOLS_CALL_TASK_RESULT")
            result = await session.request(
                fetch,
                msgspec.convert({"taskId": created.task.task_id}, fetch.params),
                timeout=timeout,
            )
        if result.is_error is True:
            raise ToolCallFailed(
                name,
                " ".join(
                    block.text
                    for block in result.content
                    if getattr(block, "type", None) in _TEXT_TYPES
                )
                or "no message",
                content=list(result.content),
                structured_content=_present(getattr(result, "structured_content", UNSET)),
            )
        return result

    async def _call_tool(
        self,
        name: str,
        arguments: object,
        output: type[T],
        *,
        task: bool = False,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> T:
        """Call a tool with an outputSchema: its structuredContent as ``output``."""
        decoded: T = await self._call_tool_as(
            name, arguments, output, task=task, timeout=timeout, on_progress=on_progress
        )
        return decoded

    async def _call_tool_as(
        self,
        name: str,
        arguments: object,
        output: Any,
        *,
        task: bool = False,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> Any:
        """Call a tool whose outputSchema is not an object type: its
        structuredContent as ``output`` (any type msgspec converts to)."""
        result = await self._call(
            name, arguments, task=task, timeout=timeout, on_progress=on_progress
        )
        structured = _present(getattr(result, "structured_content", UNSET))
        if structured is None:
            raise OutputMismatch(f"tool {name!r} returned no structuredContent")
        try:
            return msgspec.convert(structured, output)
        except msgspec.ValidationError as error:
            raise OutputMismatch(
                f"tool {name!r}: structuredContent does not match {_type_name(output)}: {error}"
            ) from None

    async def _call_tool_result(
        self,
        name: str,
        arguments: object,
        result_type: type[T],
        *,
        task: bool = False,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> T:
        """Call a tool without an outputSchema: the whole CallToolResult."""
        result = await self._call(
            name,
            arguments,
            task=task,
            timeout=timeout,
            on_progress=on_progress,
            result_type=result_type,
        )
        return _as(result, result_type)

    async def _get_prompt(
        self,
        name: str,
        arguments: object,
        result_type: type[T],
        *,
        timeout: float | None = None,
    ) -> T:
        session = self.session
        spec = self._spec(session, "PROMPTS_GET")
        wire = msgspec.to_builtins(arguments) if arguments is not None else None
        params = spec.params(name=name, arguments=wire if wire else UNSET)
        result = await self._request(
            session,
            "PROMPTS_GET",
            params,
            result_type,
            timeout=timeout if timeout is not None else self._timeout,
        )
        return _as(result, result_type)

    async def _read_resource(
        self,
        uri_template: str,
        variables: Mapping[str, str | None],
        result_type: type[T],
        *,
        timeout: float | None = None,
    ) -> T:
        session = self.session
        spec = self._spec(session, "RESOURCES_READ")
        params = spec.params(uri=expand_uri_template(uri_template, variables))
        result = await self._request(
            session,
            "RESOURCES_READ",
            params,
            result_type,
            timeout=timeout if timeout is not None else self._timeout,
        )
        return _as(result, result_type)


def _present(value: Any) -> Any:
    return None if value is UNSET else value


def _as(result: Any, result_type: type[T]) -> T:
    """``result`` as the bindings' revision's type (a session may speak a newer
    revision): through JSON and the codec, which rebuilds untagged unions."""
    if type(result) is result_type:
        same: T = result
        return same
    return codec.decode(codec.encode(result), result_type)


def _type_name(type_: Any) -> str:
    return getattr(type_, "__qualname__", None) or repr(type_)


# ---------------------------------------------------------------- URI templates (RFC 6570)

_EXPRESSION = re.compile(r"\{([^{}]*)\}")
# operator: (first, separator, named, if empty, allowed unescaped)
_OPERATORS: dict[str, tuple[str, str, bool, str, str]] = {
    "": ("", ",", False, "", ""),
    "+": ("", ",", False, "", ":/?#[]@!$&'()*+,;="),
    "#": ("#", ",", False, "", ":/?#[]@!$&'()*+,;="),
    ".": (".", ".", False, "", ""),
    "/": ("/", "/", False, "", ""),
    ";": (";", ";", True, "", ""),
    "?": ("?", "&", True, "=", ""),
    "&": ("&", "&", True, "=", ""),
}


def expand_uri_template(template: str, variables: Mapping[str, str | None]) -> str:
    """Expand an RFC 6570 URI template (levels 1 to 3, and prefixes) with string
    values; a variable that is None or absent is left out, as the RFC says."""

    def expand(match: re.Match[str]) -> str:
        expression = match.group(1)
        operator = expression[:1] if expression[:1] in _OPERATORS and expression[:1] else ""
        first, separator, named, if_empty, allowed = _OPERATORS[operator]
        parts = []
        for spec in expression[len(operator) :].split(","):
            name, _, prefix = spec.rstrip("*").partition(":")
            value = variables.get(name)
            if value is None:
                continue
            if prefix.isdigit():
                value = value[: int(prefix)]
            encoded = quote(value, safe=allowed)
            if named:
                parts.append(f"{name}={encoded}" if encoded else name + if_empty)
            else:
                parts.append(encoded)
        return first + separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)
