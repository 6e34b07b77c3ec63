"""How a server answers the 2026-07-28 per-request wire, around the handler.

Each request names its protocol version, and describes its sender, in
``_meta``: :func:`requested_version` reads the version to route by, and the
answering middleware (:meth:`PerRequestAnswers.middleware`) hands the handler a context
that describes the sender, opens the sealed ``requestState`` of a request
that carries one, seals the state of an input-required result (after checking
that the client can answer what it asks), and adds the server's identity to
every result. A ``subscriptions/listen`` stream (:class:`Subscription`)
carries the change notifications its client asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec
from msgspec import UNSET, UnsetType

from .. import codec
from .._core import capabilities, jsonrpc, lifecycle, wire
from .._core.jsonrpc import ConnectionClosed, McpError, RequestId
from .._core.lifecycle import (
    CAPABILITIES_KEY,
    CLIENT_INFO_KEY,
    LOG_LEVEL_KEY,
    SERVER_INFO_KEY,
    SUBSCRIPTION_ID_KEY,
    VERSION_KEY,
    Bindings,
    Revision,
)
from .._core.request_state import StateError, StateSealer
from .._core.session import LOG_LEVELS, RequestEnvelope, Session, SessionContext
from ..codec import encode, join_paths
from ..methods import MethodSpec
from ..middleware import Handler, Middleware

# The revision's table of the requests whose result may be input-required
# (multi round-trip requests); a revision without one has none.
INPUT_REQUIRED = "INPUT_REQUIRED_METHODS"


class _VersionMeta(msgspec.Struct):
    protocol_version: str | UnsetType = msgspec.field(name=VERSION_KEY, default=UNSET)
    # Kept raw (skipped, not decoded): a request without it is invalid, whatever its method.
    capabilities: msgspec.Raw | UnsetType = msgspec.field(name=CAPABILITIES_KEY, default=UNSET)


class _VersionParams(msgspec.Struct):
    meta: _VersionMeta | UnsetType = msgspec.field(name="_meta", default=UNSET)


# Routing needs only the version (and that capabilities are there); the rest of
# _meta is checked by the typed params decode that follows, and read from its result.
_version_decoder = msgspec.json.Decoder(_VersionParams)


def requested_version(params: msgspec.Raw | UnsetType, versions: Sequence[str]) -> str:
    """The stateless revision a request names in ``_meta``; McpError if it names
    none of ``versions`` (the server's)."""
    if params is UNSET:
        raise McpError(jsonrpc.INVALID_PARAMS, "Invalid params: params with _meta are required")
    try:
        meta = _version_decoder.decode(params).meta
    except msgspec.ValidationError as error:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: {join_paths(str(error))}"
        ) from None
    except jsonrpc.UNDECODABLE as error:
        raise McpError(jsonrpc.PARSE_ERROR, jsonrpc.parse_error_message(error)) from None
    if meta is UNSET:
        raise McpError(jsonrpc.INVALID_PARAMS, "Invalid params: `_meta` is required")
    version = meta.protocol_version
    if version is UNSET:
        raise McpError(jsonrpc.INVALID_PARAMS, f"Invalid params: `_meta.{VERSION_KEY}` is required")
    if version not in versions:
        raise McpError(
            jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
            f"Unsupported protocol version: {version}",
            {"requested": version, "supported": list(versions)},
        )
    if meta.capabilities is UNSET:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: `_meta.{CAPABILITIES_KEY}` is required"
        )
    return version


def accepted_notifications(wanted: dict[str, Any], declared: Mapping[str, Any]) -> dict[str, Any]:
    """What a ``subscriptions/listen`` request asked for that the server's
    declared capabilities (``declared``) can give it."""
    return {
        key: value
        for key, value in wanted.items()
        if (key == "toolsListChanged" and "tools" in declared)
        or (key == "promptsListChanged" and "prompts" in declared)
        or (key in ("resourcesListChanged", "resourceSubscriptions") and "resources" in declared)
    }


class Subscription:
    """One open subscriptions/listen stream."""

    def __init__(self, session: Session, request_id: RequestId, accepted: dict[str, Any]) -> None:
        self.session = session
        self.request_id = request_id
        self.accepted = accepted
        self.ended = asyncio.Event()

    async def send(self, method: str, params: dict[str, Any]) -> None:
        params["_meta"] = {SUBSCRIPTION_ID_KEY: self.request_id}
        # Related to the listen request: on HTTP, that request's stream carries it.
        await send_change(self.session, method, encode(params), self.request_id)


async def send_change(
    session: Session, method: str, params: bytes | None, related: RequestId | None
) -> None:
    """A change notification; a peer that is gone is not an error for the sender."""
    if session.is_closed:
        return
    session.transport.write(
        wire.notification(jsonrpc.notification_bytes(method, params), method, related, params)
    )
    try:
        await session.transport.drain()
    except ConnectionClosed:
        pass


class PerRequestAnswers:
    """The middleware of a server's handlers on the per-request wire: ``sealer``
    seals and opens request state, ``info`` is the server's identity, added to
    every result."""

    def __init__(self, sealer: StateSealer, info: dict[str, Any], bindings: Bindings) -> None:
        self.sealer = sealer
        self.info = info
        self.bindings = bindings

    def middleware(self, revision: Revision) -> Middleware:
        """The outermost middleware of the methods of ``revision``, a stateless one."""
        typed_meta = revision.type("RequestMetaObject")
        input_required = revision.table(INPUT_REQUIRED)

        def answering(spec: MethodSpec[Any, Any], handler: Handler) -> Handler:
            method = spec.method
            may_ask = method in input_required

            async def answer(params: Any, ctx: SessionContext) -> Any:
                ctx = ctx.described(_envelope(revision, typed_meta, params))
                if may_ask and getattr(params, "request_state", UNSET) is not UNSET:
                    params = self._open_state(method, params, ctx)
                result = await handler(params, ctx)
                if getattr(result, "result_type", None) == "input_required":
                    result = self._input_required(method, params, result, ctx)
                return _with_server_info(result, self.info)

            return answer

        return answering

    def _open_state(self, method: str, params: Any, ctx: SessionContext) -> Any:
        state = getattr(params, "request_state", UNSET)
        if not isinstance(state, str):
            return params
        try:
            plain = self.sealer.open(state, _binding(method, params, ctx), _arguments(params))
        except StateError as error:
            raise McpError(jsonrpc.INVALID_PARAMS, f"Invalid params: {error}") from None
        return msgspec.structs.replace(params, request_state=plain)

    def _input_required(self, method: str, params: Any, result: Any, ctx: SessionContext) -> Any:
        revision = self.bindings.revision(ctx.protocol_version)
        may_ask = revision.table(INPUT_REQUIRED)
        if method not in may_ask:
            raise McpError(
                jsonrpc.INTERNAL_ERROR,
                f"{method} cannot ask for input: only {', '.join(sorted(may_ask)) or 'no request'} may",
            )
        missing = _unmet_by_client(revision, result.input_requests, ctx.client_capabilities)
        if missing:
            raise lifecycle.missing_capabilities(missing)
        if isinstance(result.request_state, str):
            result = msgspec.structs.replace(
                result,
                request_state=self.sealer.seal(
                    result.request_state, _binding(method, params, ctx), _arguments(params)
                ),
            )
        return result


def _unmet_by_client(
    revision: Revision, input_requests: Any, client_capabilities: Any
) -> set[tuple[str, ...]]:
    """The client capabilities that the input requests of an input-required result need and lack."""
    table = revision.table("INPUT_REQUESTS")
    missing: set[tuple[str, ...]] = set()
    requests = input_requests if isinstance(input_requests, Mapping) else {}
    for request in requests.values():
        spec = table.get(getattr(request, "method", ""))
        if spec is None:
            continue
        if spec.capability and not lifecycle.has_capability(client_capabilities, spec.capability):
            missing.add(spec.capability)
            continue  # the capability itself is missing: no need to name its parts
        for need in capabilities.unmet(
            revision,
            capabilities.SERVER,
            spec.method,
            getattr(request, "params", UNSET),
            client_capabilities,
        ):
            missing.add(need.path)
    return missing


def _binding(method: str, params: Any, ctx: SessionContext) -> tuple[str, ...]:
    """What a sealed requestState is good for: this method on this tool,
    prompt or resource, for this authenticated caller (if any)."""
    name = getattr(params, "name", None)
    if not isinstance(name, str):
        name = str(getattr(params, "uri", ""))
    principal = ctx.principal
    return (method, name, str(principal.key)) if principal is not None else (method, name)


def _arguments(params: Any) -> Any:
    """The arguments a sealed requestState is bound to: a tool's or a prompt's
    (a resource's URI is part of the binding already)."""
    arguments = getattr(params, "arguments", None)
    return None if arguments is UNSET else arguments


def _envelope(revision: Revision, typed_meta: type, params: Any) -> RequestEnvelope:
    """What a stateless request's decoded ``_meta`` says of its sender."""
    meta = getattr(params, "meta", UNSET)
    if not isinstance(meta, dict) and not isinstance(
        meta, Mapping
    ):  # the first test spares the ABC's
        raise McpError(jsonrpc.INVALID_PARAMS, "Invalid params: `_meta` is required")
    capabilities, info, level = (
        meta.get(CAPABILITIES_KEY, UNSET),
        meta.get(CLIENT_INFO_KEY),
        meta.get(LOG_LEVEL_KEY),
    )
    if capabilities is UNSET:
        raise McpError(
            jsonrpc.INVALID_PARAMS, f"Invalid params: `_meta.{CAPABILITIES_KEY}` is required"
        )
    if not isinstance(meta, typed_meta):
        # Params typed with a looser _meta (an extension's): check what the revision's type checks.
        capabilities = _convert_meta(
            capabilities, revision.type("ClientCapabilities"), CAPABILITIES_KEY
        )
        if info is not None:
            info = _convert_meta(info, revision.type("Implementation"), CLIENT_INFO_KEY)
        if level is not None and level not in LOG_LEVELS:
            raise McpError(
                jsonrpc.INVALID_PARAMS,
                f"Invalid params: unknown log level at `_meta.{LOG_LEVEL_KEY}`",
            )
    return RequestEnvelope(revision.version, capabilities, info, level)


def _convert_meta(value: Any, type_: Any, key: str) -> Any:
    try:
        return codec.convert(value, type_)
    except msgspec.ValidationError as error:
        raise McpError(jsonrpc.INVALID_PARAMS, f"Invalid params: `_meta.{key}`: {error}") from None


def _with_server_info(result: Any, info: dict[str, Any]) -> Any:
    """``result`` with the server's identity in its ``_meta`` (what the handler put there is kept)."""
    if isinstance(result, msgspec.Struct):
        meta = getattr(result, "meta", None)
        if meta is None:
            return result
        merged = (
            {SERVER_INFO_KEY: info, **meta}
            if meta is not UNSET and isinstance(meta, Mapping)
            else {SERVER_INFO_KEY: info}
        )
        return msgspec.structs.replace(result, meta=merged)
    if isinstance(result, dict):
        meta = result.get("_meta")
        return {
            **result,
            "_meta": (
                {SERVER_INFO_KEY: info, **meta}
                if isinstance(meta, Mapping)
                else {SERVER_INFO_KEY: info}
            ),
        }
    return result
