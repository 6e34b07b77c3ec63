"""The context a tool, resource or prompt function asks for by annotating a
parameter with :class:`Context`.

It reports progress, logs, and asks the client for input (elicitation,
sampling, roots) the way the request's revision does it: before 2026-07-28 a
request to the client in the middle of the call; from 2026-07-28 on an
input-required result. There the function is run again, from the start, when
the client retries with the answers (the answers so far travel in the sealed
``requestState``), so everything a function does before its last question
must be safe to repeat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Generic, Literal

import msgspec
from msgspec import UNSET
from typing_extensions import TypeVar

from .. import codec
from .._core import capabilities, jsonrpc, lifecycle
from .._core.extensions import negotiated
from .._core.jsonrpc import McpError
from .._core.limits import ClientIdentity
from ..auth._principal import Principal
from ..methods import RequestContext
from ._errors import InputRequired, ToolError
from ._flavor import Flavor
from ._schema import object_schema
from ._state import SessionState, SessionStates
from ._ui import client_supports_ui

T = TypeVar("T")
# The type of what the app's lifespan yields (Context[State]); Any when not given.
S = TypeVar("S", default=Any)

LogLevel = Literal["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
Role = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True)
class Elicited(Generic[T]):
    """The user's answer to :meth:`Context.elicit`: ``data`` is the form,
    decoded and validated, when ``action`` is "accept"; None otherwise."""

    action: Literal["accept", "decline", "cancel"]
    data: T | None

    @property
    def accepted(self) -> bool:
        return self.action == "accept" and self.data is not None


@dataclass(frozen=True, slots=True)
class Sampled:
    """What the client's model answered to :meth:`Context.sample`."""

    role: str
    model: str
    content: Any
    stop_reason: str | None

    @property
    def text(self) -> str | None:
        """The answer's text, if it is a single text block."""
        text = getattr(self.content, "text", None)
        return text if isinstance(text, str) else None


@dataclass(frozen=True, slots=True)
class Root:
    """A root the client exposes (a directory or other base URI)."""

    uri: str
    name: str | None = None


class Context(Generic[S]):
    """What a function of the application layer knows of its request, and can do.

    Annotate the parameter ``Context[State]`` to have :attr:`lifespan` typed
    as ``State``, what the app's lifespan yields."""

    __slots__ = ("_request", "_params", "_flavor", "_rounds", "_asked", "_session")

    def __init__(
        self, request: RequestContext, params: object, flavor: Flavor, rounds: InputRounds | None
    ) -> None:
        self._request = request
        self._params = params
        self._flavor = flavor
        self._rounds = rounds
        self._asked = 0
        self._session: SessionState | None = None

    # ------------------------------------------------------------ the request

    @property
    def request_context(self) -> RequestContext:
        """The runtime's context of this request (what generated handlers get),
        for what this class does not wrap (``Tasks.start``, the peer)."""
        return self._request

    @property
    def request_id(self) -> str | int | None:
        return self._request.request_id

    @property
    def protocol_version(self) -> str:
        return self._flavor.version

    @property
    def client_capabilities(self) -> Any:
        """The capabilities the client declared (the revision's ClientCapabilities), or None."""
        return self._request.client_capabilities

    @property
    def client_info(self) -> Any:
        """The client's Implementation (name, version ...), where it gave one."""
        return self._request.client_info

    @property
    def principal(self) -> Principal | None:
        """The authenticated caller, or None (a transport without authorization)."""
        principal: Principal | None = self._request.principal
        return principal

    @property
    def client_identity(self) -> ClientIdentity:
        """Who sent the request, as its transport names the client for its own
        per-client limits (what middleware counts as ``call.client``)."""
        return self._request.client_identity

    @property
    def params(self) -> Any:
        """The request's params as the revision's generated type
        (``CallToolRequestParams`` ...), for what this class does not wrap
        (at 2026-07-28: ``input_responses`` and the opened ``request_state``
        of a function that answers with its own ``InputRequiredResult``)."""
        return self._params

    @property
    def meta(self) -> Mapping[str, Any]:
        """The request's ``_meta`` (empty if it has none)."""
        meta = getattr(self._params, "meta", UNSET)
        if meta is UNSET or meta is None:
            return {}
        if isinstance(meta, Mapping):
            return meta
        built: Mapping[str, object] = msgspec.to_builtins(meta)
        return built

    @property
    def headers(self) -> Mapping[str, str] | None:
        """The HTTP request's headers (lower-cased names: ``ctx.headers["x-tenant"]``);
        None off HTTP (stdio, in memory), so code must say what it does then."""
        return self._request.extra.headers

    @property
    def lifespan(self) -> S:
        """What the app's lifespan yielded (``Context[State]`` types it);
        RuntimeError outside a running lifespan."""
        services = self._flavor.services
        if services is None:
            raise RuntimeError("this context belongs to no app")
        state: S = services.lifespan.state
        return state

    @property
    def session(self) -> SessionState:
        """This session's state (see :mod:`mcpbind.app._state`): values
        that last across the session's requests."""
        found = self._session
        if found is None:
            found = self._session = self._session_state()
        return found

    def _session_state(self) -> SessionState:
        services = self._flavor.services
        states: SessionStates | None = services.states if services is not None else None
        headers = self._request.extra.headers
        session_id = headers.get("mcp-session-id") if headers is not None else None
        if states is None or (self._flavor.stateless and not session_id):
            return SessionState(None, None, None)  # no session: this request's alone
        if session_id:
            return states.for_http(session_id)
        return states.for_connection(self._request.session)

    def client_supports(self, *path: str) -> bool:
        """Whether the client declared a capability: ``ctx.client_supports("elicitation")``."""
        return lifecycle.has_capability(self._request.client_capabilities, path)

    def client_extension(self, extension_id: str) -> Mapping[str, Any] | None:
        """The settings the client declared for an extension (SEP-2133), on
        any revision, or None if it did not declare it:
        ``ctx.client_extension("io.modelcontextprotocol/ui")``."""
        return negotiated(self._request.client_capabilities, extension_id)

    def client_supports_ui(self) -> bool:
        """Whether the client negotiated MCP Apps (and its HTML profile): a
        tool linked to a UI returns plain, meaningful text when it did not
        (see :mod:`mcpbind.app._ui`)."""
        return client_supports_ui(self._request.client_capabilities)

    # ------------------------------------------------------------ progress and logs

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """A progress notification, if the client asked for progress."""
        await self._request.report_progress(progress, total, message)

    async def log(self, level: LogLevel, data: object, logger: str | None = None) -> None:
        """A log message, if the client's log level lets it through."""
        await self._request.log(level, data, logger)

    async def debug(self, data: object, logger: str | None = None) -> None:
        await self._request.log("debug", data, logger)

    async def info(self, data: object, logger: str | None = None) -> None:
        await self._request.log("info", data, logger)

    async def warning(self, data: object, logger: str | None = None) -> None:
        await self._request.log("warning", data, logger)

    async def error(self, data: object, logger: str | None = None) -> None:
        await self._request.log("error", data, logger)

    def close_sse_stream(self) -> None:
        """Close the HTTP stream of this request early (the client resumes it)."""
        self._request.close_sse_stream()

    # ------------------------------------------------------------ asking the client

    async def elicit(
        self,
        message: str,
        form: type[T],
        *,
        schema: Mapping[str, object] | None = None,
        key: str | None = None,
    ) -> Elicited[T]:
        """Ask the user to fill in ``form`` (a Struct, dataclass or TypedDict of
        strings, numbers, booleans and string enums). ``schema`` replaces the
        requested schema derived from ``form`` (titled or multi-select enums,
        which no Python type spells); the answer is still decoded into ``form``.
        ``key`` names the request in a 2026-07-28 input-required result
        (default: ``elicit-<n>``, n counting this call's questions)."""
        shape: object = form  # a class, so hashable: form_schema caches by it
        requested = dict(schema) if schema is not None else form_schema(shape)
        params = {"mode": "form", "message": message, "requestedSchema": requested}
        if self._flavor.version < "2025-11-25":
            del params["mode"]  # the form mode is implicit before 2025-11-25
        answer = await self._ask("elicitation/create", params, "ElicitResult", key)
        if answer.action != "accept":
            return Elicited(answer.action, None)
        content = answer.content if isinstance(answer.content, Mapping) else {}
        try:
            return Elicited("accept", msgspec.convert(content, form))
        except msgspec.ValidationError as error:
            raise ToolError(f"The answer to {message!r} does not fit the form: {error}") from None

    async def sample(
        self,
        messages: str | Sequence[tuple[Role, str]],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        temperature: float | None = None,
        stop_sequences: Sequence[str] | None = None,
        model_hints: Sequence[str] | None = None,
        key: str | None = None,
    ) -> Sampled:
        """Ask the client's model: ``messages`` is a user prompt, or (role, text)
        pairs. ``key``: as for :meth:`elicit` (default ``sample-<n>``)."""
        pairs: Sequence[tuple[Role, str]] = (
            [("user", messages)] if isinstance(messages, str) else messages
        )
        params: dict[str, object] = {
            "messages": [
                {"role": role, "content": {"type": "text", "text": text}} for role, text in pairs
            ],
            "maxTokens": max_tokens,
        }
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if temperature is not None:
            params["temperature"] = temperature
        if stop_sequences is not None:
            params["stopSequences"] = list(stop_sequences)
        if model_hints is not None:
            params["modelPreferences"] = {"hints": [{"name": name} for name in model_hints]}
        result = await self._ask("sampling/createMessage", params, "CreateMessageResult", key)
        stop = result.stop_reason if isinstance(result.stop_reason, str) else None
        return Sampled(result.role, result.model, result.content, stop)

    async def list_roots(self, *, key: str | None = None) -> list[Root]:
        """The client's roots. ``key``: as for :meth:`elicit` (default ``roots-<n>``)."""
        result = await self._ask("roots/list", {}, "ListRootsResult", key)
        return [
            Root(root.uri, root.name if isinstance(root.name, str) else None)
            for root in result.roots
        ]

    async def _ask(
        self, method: str, params: dict[str, Any], result_name: str, key: str | None
    ) -> Any:
        if key is None:
            key = f"{_KEYS[method]}-{self._asked}"
        self._asked += 1
        flavor = self._flavor
        result_type = flavor.type_named(result_name)
        if self._rounds is None:
            spec = flavor.revision.all_methods.get(method)
            if spec is None:
                raise ToolError(f"Protocol revision {flavor.version} has no {method}")
            return await self._request.peer.request(spec, codec.convert(params, spec.params))
        answer = self._rounds.answer(key, result_type, method)
        if answer is None:
            self._check_declared(method, params)
            raise InputRequired(key, flavor.input_request(method, params))
        return answer

    def _check_declared(self, method: str, params: dict[str, Any]) -> None:
        """Refuse to ask what the client's capabilities do not take (the handshake
        revisions refuse it when the request is sent: the same error, earlier here)."""
        declared = self._request.client_capabilities
        spec = self._flavor.revision.table("INPUT_REQUESTS")[method]
        missing = (
            [spec.capability] if not lifecycle.has_capability(declared, spec.capability) else []
        )
        if not missing:
            missing = [
                need.path
                for need in capabilities.unmet(
                    self._flavor.revision, capabilities.SERVER, method, params, declared
                )
            ]
        if missing:
            raise lifecycle.missing_capabilities(missing)


_KEYS = {"elicitation/create": "elicit", "sampling/createMessage": "sample", "roots/list": "roots"}


class InputRounds:
    """The answers a 2026-07-28 request carries: those of this round
    (``inputResponses``) and of earlier ones (in ``requestState``)."""

    __slots__ = ("_answers",)

    @classmethod
    def of(cls, params: object) -> InputRounds:
        """The rounds a request's params carry (a stateless revision's params
        have ``inputResponses`` and ``requestState``; those of others, neither)."""
        return cls(
            getattr(params, "input_responses", UNSET), getattr(params, "request_state", UNSET)
        )

    def __init__(self, responses: object, state: object) -> None:
        answers: dict[str, Any] = {}
        if isinstance(state, str) and state.startswith("{"):
            try:
                decoded = msgspec.json.decode(state)
            except msgspec.DecodeError:
                decoded = None
            if isinstance(decoded, dict):
                answers.update(decoded)
        if isinstance(responses, Mapping):
            for key, value in responses.items():
                answers[key] = msgspec.to_builtins(value)
        self._answers = answers

    def answer(self, key: str, result_type: Any, method: str) -> object:
        """The answer under ``key``, read as the result of ``method`` (what was
        asked under that key), whatever shape the params decoding took it for:
        one lacking a field the result requires is refused naming both, as
        the answer to any request is (-32602)."""
        raw = self._answers.get(key)
        if raw is None:
            return None
        try:
            return codec.convert(raw, result_type)
        except msgspec.ValidationError as error:
            fields = msgspec.structs.fields(result_type) if isinstance(raw, dict) else ()
            missing = ", ".join(
                f"`{f.encode_name}`" for f in fields if f.required and f.encode_name not in raw
            )
            problem = f"lacks required field(s) {missing}" if missing else f"is invalid: {error}"
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                f"Invalid params: inputResponses[{key!r}], the answer to {method}, {problem}",
            ) from None

    def state(self) -> str:
        """What the next round's ``requestState`` must carry (sealed by the runtime)."""
        return msgspec.json.encode(self._answers).decode()


@cache
def form_schema(form: type) -> dict[str, object]:
    """The restricted JSON Schema of an elicitation form: a flat object of
    primitive properties. Raises TypeError for what elicitation cannot ask."""
    try:
        schema = object_schema(form)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{form!r} cannot be an elicitation form: {error}") from None
    defs = schema.pop("$defs", {})
    if schema.get("type") != "object":
        raise TypeError(f"{form!r} cannot be an elicitation form: it is not an object type")
    properties: dict[str, object] = {}
    for name, prop in schema.get("properties", {}).items():
        properties[name] = _primitive(form, name, prop, defs)
    result: dict[str, object] = {"type": "object", "properties": properties}
    if schema.get("required"):
        result["required"] = list(schema["required"])
    return result


def _primitive(form: type, name: str, prop: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    prop = dict(prop)
    if "$ref" in prop:  # an Enum
        prop = {**defs[prop.pop("$ref").rsplit("/", 1)[1]], **prop}
        prop.pop("title", None)
    options = prop.pop("anyOf", None)
    if options is not None:  # Optional[X]: the form leaves it out instead of sending null
        concrete = [option for option in options if option.get("type") != "null"]
        if len(concrete) != 1:
            raise TypeError(f"{form!r} cannot be an elicitation form: field {name!r} is a union")
        prop = {**concrete[0], **prop}
        if prop.get("default", 0) is None:
            del prop["default"]
    if "enum" in prop and "type" not in prop:
        if not all(isinstance(value, str) for value in prop["enum"]):
            raise TypeError(
                f"{form!r} cannot be an elicitation form: field {name!r} must be a string enum"
            )
        prop["type"] = "string"
    if prop.get("type") not in ("string", "number", "integer", "boolean"):
        raise TypeError(
            f"{form!r} cannot be an elicitation form: field {name!r} must be a string, number, integer, boolean or string enum"
        )
    return prop
