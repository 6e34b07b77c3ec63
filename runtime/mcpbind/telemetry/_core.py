"""Spans and metrics of MCP traffic, by the semantic conventions for MCP.

One :class:`Telemetry` serves any number of servers, clients and hosts. Each
part of the runtime asks it for a wrapper once (a route's handler, a client
session's send) and calls that wrapper per message: a runtime with no
``Telemetry`` has no wrapper in its path and never imports OpenTelemetry.
"""

from __future__ import annotations

import time
import types
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import msgspec
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.trace import Span, SpanKind, StatusCode

from .._core.jsonrpc import INTERNAL_ERROR, UNDECODABLE, McpError
from ..methods import MethodSpec
from . import _conventions as c
from ._logs import install_record_factory

Handler = Callable[[Any, Any], Any]
# What a session sends a typed request with: (spec, params, timeout, on_progress, request_id, related).
Send = Callable[..., Awaitable[Any]]

_ATTRIBUTE_OF_TARGET = {"tools/call": c.TOOL_NAME, "prompts/get": c.PROMPT_NAME}
_URI_METHODS = frozenset(
    {
        "resources/read",
        "resources/subscribe",
        "resources/unsubscribe",
        "notifications/resources/updated",
    }
)
# Metric attributes: the low-cardinality ones of the span (no ids, no URIs).
_METRIC_KEYS = (
    c.METHOD_NAME,
    c.PROTOCOL_VERSION,
    c.NETWORK_TRANSPORT,
    c.TOOL_NAME,
    c.PROMPT_NAME,
    c.OPERATION_NAME,
    c.ERROR_TYPE,
    c.STATUS_CODE,
)


@runtime_checkable
class NamesSession(Protocol):
    """A transport that knows the MCP session it carries (Streamable HTTP)."""

    session_id: str | None


@runtime_checkable
class CountsRoundTrips(Protocol):
    """A store that tells observers of each round trip (RedisStore)."""

    round_trip_observers: list[Callable[[bool], None]]


_network_by_type: dict[type, str | None] = {}
_names_session_by_type: dict[type, bool] = {}


def network_transport(transport: object) -> str | None:
    """``pipe`` for stdio, ``tcp`` for HTTP, None in memory (by the transport's
    module, looked up once per transport class)."""
    kind = type(transport)
    try:
        return _network_by_type[kind]
    except KeyError:
        module = kind.__module__
        found = c.PIPE if module.endswith(".stdio") else c.TCP if ".http." in module + "." else None
        _network_by_type[kind] = found
        return found


def session_id_of(transport: object) -> str | None:
    kind = type(transport)
    names = _names_session_by_type.get(kind)
    if names is None:
        names = _names_session_by_type[kind] = isinstance(transport, NamesSession)
    return transport.session_id if names else None  # type: ignore[attr-defined]


def target_of(method: str, params: Any) -> tuple[str | None, str | None]:
    """The span name's target (a tool's or prompt's name) and a resource URI."""
    if params is None:
        return None, None
    if method in _ATTRIBUTE_OF_TARGET:
        name = params.get("name") if isinstance(params, Mapping) else params.name
        return (name if isinstance(name, str) else None), None
    if method in _URI_METHODS:
        uri = params.get("uri") if isinstance(params, Mapping) else params.uri
        return None, uri if isinstance(uri, str) else None
    return None, None


class _MetaOnly(msgspec.Struct):
    meta: dict[str, Any] | None = msgspec.field(default=None, name="_meta")


_meta_only = msgspec.json.Decoder(_MetaOnly)


def meta_of(params: Any) -> Any:
    if params is None:
        return None
    if isinstance(params, Mapping):
        return params.get("_meta")
    if type(params) is msgspec.Raw:  # a notification the session answers itself
        try:
            return _meta_only.decode(params).meta
        except (msgspec.ValidationError, *UNDECODABLE):
            return None  # the session's own decoding says what is wrong
    meta = getattr(params, "meta", None)  # every generated params type has it; ext types may not
    return meta if isinstance(meta, Mapping) else None


_notification_specs: dict[str, MethodSpec[Any, Any]] = {}


def _notification_spec(method: str) -> MethodSpec[Any, Any]:
    """What a span needs of a notification's spec (its method and kind), made once."""
    spec = _notification_specs.get(method)
    if spec is None:
        spec = MethodSpec(method, "both", "notification", None, None, False, "")
        _notification_specs[method] = spec
    return spec


def tool_failed(result: Any) -> bool:
    """Whether a tools/call result is a tool execution error (``isError``)."""
    if isinstance(result, Mapping):
        return result.get("isError") is True
    return getattr(result, "is_error", None) is True


class Telemetry:
    """Where spans and metrics go: ``tracer_provider`` and ``meter_provider``
    (default: OpenTelemetry's global ones, as the SDK or ``opentelemetry-instrument``
    set them). ``propagate``: carry trace context in ``params._meta`` of what is
    sent, and continue the one received (default True). ``log_ids``: log
    records made while a span is active get ``otelTraceID`` / ``otelSpanID``.
    ``on_span_end`` (used by ``mcpx --trace``) is not needed with an SDK."""

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None = None,
        meter_provider: metrics.MeterProvider | None = None,
        propagate: bool = True,
        log_ids: bool = True,
    ) -> None:
        self.tracer = trace.get_tracer(c.SCOPE, tracer_provider=tracer_provider)
        meter = metrics.get_meter(c.SCOPE, meter_provider=meter_provider)
        self.meter = meter
        self.propagate = propagate
        buckets = list(c.DURATION_BUCKETS)

        def histogram(name: str, description: str) -> metrics.Histogram:
            return meter.create_histogram(
                name, unit="s", description=description, explicit_bucket_boundaries_advisory=buckets
            )

        self.server_operation = histogram(
            c.SERVER_OPERATION_DURATION,
            "MCP request or notification duration as observed on the receiver.",
        )
        self.client_operation = histogram(
            c.CLIENT_OPERATION_DURATION,
            "MCP request or notification duration as observed on the sender.",
        )
        self.server_session = histogram(
            c.SERVER_SESSION_DURATION, "The duration of the MCP session as observed on the server."
        )
        self.client_session = histogram(
            c.CLIENT_SESSION_DURATION, "The duration of the MCP session as observed on the client."
        )
        # Counted in plain dicts and observed at collection: an instrument's
        # add() per request would cost more than the rest of the request's metrics.
        self.open_sessions: dict[str | None, int] = {}  # by network.transport
        self.open_requests: dict[str, int] = {}  # by mcp.method.name
        meter.create_observable_up_down_counter(
            c.SERVER_ACTIVE_SESSIONS,
            callbacks=[self._observe_sessions],
            unit="{session}",
            description="MCP sessions open.",
        )
        meter.create_observable_up_down_counter(
            c.SERVER_ACTIVE_REQUESTS,
            callbacks=[self._observe_requests],
            unit="{request}",
            description="MCP requests being handled.",
        )
        self.store_operations = meter.create_counter(
            c.STORE_OPERATIONS, unit="{operation}", description="Round trips to the shared store."
        )
        self.store_failures = meter.create_counter(
            c.STORE_FAILURES,
            unit="{operation}",
            description="Round trips to the store that failed.",
        )
        self._backends: list[Callable[[], Iterable[tuple[str, bool]]]] = []
        meter.create_observable_gauge(
            c.BACKEND_UP,
            callbacks=[self._observe_backends],
            unit="1",
            description="1 while a gateway backend is connected, else 0.",
        )
        if log_ids:
            install_record_factory()

    # ------------------------------------------------------------ server

    def server_route(self, spec: MethodSpec[Any, Any], handler: Handler) -> Handler:
        """A middleware (:mod:`mcpbind.middleware`; the server puts it outermost):
        ``handler`` in a SERVER span (named ``{mcp.method.name} {target}``,
        parented by the trace context of ``params._meta``) and timed into
        ``mcp.server.operation.duration``; resolved once per route."""
        method = spec.method
        tracer, open_requests = self.tracer, self.open_requests
        is_tool = method == "tools/call"
        is_request = spec.kind == "request"
        extract = self.propagate
        attach, detach, in_context = (
            otel_context.attach,
            otel_context.detach,
            trace.set_span_in_context,
        )

        def traced(params: Any, ctx: Any) -> Any:
            started = time.perf_counter()
            attributes: dict[str, Any] = {c.METHOD_NAME: method}
            target, uri = target_of(method, params)
            name = method
            if target is not None:
                name = f"{method} {target}"
                attributes[_ATTRIBUTE_OF_TARGET[method]] = target
            if is_tool:
                attributes[c.OPERATION_NAME] = c.EXECUTE_TOOL
            if uri is not None:
                attributes[c.RESOURCE_URI] = uri
            if ctx.request_id is not None:
                attributes[c.REQUEST_ID] = str(ctx.request_id)
            if ctx.stateless or ctx.has_session:
                version = ctx.protocol_version  # "" while initialize negotiates it
                if version:
                    attributes[c.PROTOCOL_VERSION] = version
            if ctx.has_session:
                transport = ctx.session.transport
                network = network_transport(transport)
                if network is not None:
                    attributes[c.NETWORK_TRANSPORT] = network
                session_id = session_id_of(transport)
                if session_id is not None:
                    attributes[c.SESSION_ID] = session_id
            parent = None
            if extract:
                meta = meta_of(params)
                if meta:
                    parent = continued(meta)
            span = tracer.start_span(name, parent, SpanKind.SERVER, attributes)
            if is_request:
                open_requests[method] = open_requests.get(method, 0) + 1
            token = attach(in_context(span))
            try:
                outcome = handler(params, ctx)
            except BaseException as error:
                self._server_done(span, attributes, started, None, error, is_request)
                raise
            finally:
                detach(token)
            if type(outcome) is types.CoroutineType or isinstance(outcome, Awaitable):
                return self._server_awaited(outcome, span, attributes, started, is_request)
            self._server_done(span, attributes, started, outcome, None, is_request)
            return outcome

        return traced

    def server_notifications(self, handlers: Mapping[str, Handler]) -> dict[str, Handler]:
        """The notifications a session answers itself (cancelled, progress, a
        server's initialized: they reach no route), each handler in a SERVER
        span as :meth:`server_route` makes them; their params arrive
        undecoded, ``_meta`` read from them for the trace context."""
        return {
            method: self.server_route(_notification_spec(method), handler)
            for method, handler in handlers.items()
        }

    async def _server_awaited(
        self,
        outcome: Awaitable[Any],
        span: Span,
        attributes: dict[str, Any],
        started: float,
        is_request: bool,
    ) -> Any:
        token = otel_context.attach(trace.set_span_in_context(span))
        try:
            result = await outcome
        except BaseException as error:
            self._server_done(span, attributes, started, None, error, is_request)
            raise
        finally:
            otel_context.detach(token)
        self._server_done(span, attributes, started, result, None, is_request)
        return result

    def _server_done(
        self,
        span: Span,
        attributes: dict[str, Any],
        started: float,
        result: Any,
        error: BaseException | None,
        is_request: bool,
    ) -> None:
        failed(span, attributes, result, error)
        span.end()
        self.server_operation.record(time.perf_counter() - started, metric_attributes(attributes))
        if is_request:
            self.open_requests[attributes[c.METHOD_NAME]] -= 1

    def server_session_opened(self, transport: object) -> Callable[[str], None]:
        """Count a server session open; the function to call once when it closes."""
        return self._session_opened(transport, self.server_session, self.open_sessions)

    def _session_opened(
        self,
        transport: object,
        histogram: metrics.Histogram,
        open_sessions: dict[str | None, int] | None,
    ) -> Callable[[str], None]:
        started = time.perf_counter()
        attributes: dict[str, Any] = {}
        network = network_transport(transport)
        if network is not None:
            attributes[c.NETWORK_TRANSPORT] = network
        if open_sessions is not None:
            open_sessions[network] = open_sessions.get(network, 0) + 1

        def closed(protocol_version: str = "") -> None:
            if protocol_version:
                attributes[c.PROTOCOL_VERSION] = protocol_version
            histogram.record(time.perf_counter() - started, attributes)
            if open_sessions is not None:
                open_sessions[network] -= 1

        return closed

    def _observe_sessions(self, options: CallbackOptions) -> Iterable[Observation]:
        for network, count in list(self.open_sessions.items()):
            yield Observation(count, {} if network is None else {c.NETWORK_TRANSPORT: network})

    def _observe_requests(self, options: CallbackOptions) -> Iterable[Observation]:
        for method, count in list(self.open_requests.items()):
            yield Observation(count, {c.METHOD_NAME: method})

    # ------------------------------------------------------------ client

    def client_session_opened(self, transport: object) -> Callable[[str], None]:
        """Time a client session; the function to call once when it closes."""
        return self._session_opened(transport, self.client_session, None)

    def client_send(self, session: Any, send: Send) -> Send:
        """``send`` (a client session's typed request sending) in a CLIENT span
        whose context travels in ``params._meta``, timed into
        ``mcp.client.operation.duration``."""
        tracer = self.tracer
        inject = self.propagate
        next_id = session.outgoing.next_id

        async def traced(
            spec: MethodSpec[Any, Any],
            params: Any,
            timeout: Any,
            on_progress: Any,
            request_id: Any,
            related: Any = None,
        ) -> Any:
            started = time.perf_counter()
            method = spec.method
            if request_id is None:
                request_id = next_id()  # named now, for jsonrpc.request.id
            attributes: dict[str, Any] = {c.METHOD_NAME: method, c.REQUEST_ID: str(request_id)}
            target, uri = target_of(method, params)
            name = method
            if target is not None:
                name = f"{method} {target}"
                attributes[_ATTRIBUTE_OF_TARGET[method]] = target
            if method == "tools/call":
                attributes[c.OPERATION_NAME] = c.EXECUTE_TOOL
            if uri is not None:
                attributes[c.RESOURCE_URI] = uri
            if session.protocol_version:
                attributes[c.PROTOCOL_VERSION] = session.protocol_version
            transport = session.transport
            network = network_transport(transport)
            if network is not None:
                attributes[c.NETWORK_TRANSPORT] = network
            session_id = session_id_of(transport)
            if session_id is not None:
                attributes[c.SESSION_ID] = session_id
            span = tracer.start_span(name, None, SpanKind.CLIENT, attributes)
            token = otel_context.attach(trace.set_span_in_context(span))
            try:
                if inject:
                    params = with_trace_context(spec, params)
                result = await send(spec, params, timeout, on_progress, request_id, related)
            except BaseException as error:
                failed(span, attributes, None, error)
                raise
            else:
                failed(span, attributes, result, None)
                return result
            finally:
                otel_context.detach(token)
                span.end()
                self.client_operation.record(
                    time.perf_counter() - started, metric_attributes(attributes)
                )

        return traced

    # ------------------------------------------------------------ host

    async def host_call(
        self, server: str, method: str, params: Mapping[str, Any], call: Awaitable[Any]
    ) -> Any:
        """``call`` (a Host's routed request to its entry ``server``) in an INTERNAL
        span named ``{server}: {method} {target}``, the parent of its client span."""
        target, _ = target_of(method, params)
        name = f"{server}: {method}" if target is None else f"{server}: {method} {target}"
        with self.tracer.start_as_current_span(
            name,
            kind=SpanKind.INTERNAL,
            attributes={c.HOST_SERVER: server, c.METHOD_NAME: method},
        ):
            return await call

    # ------------------------------------------------------------ gateway, store

    def watch_backends(self, backends: Callable[[], Iterable[tuple[str, bool]]]) -> None:
        """Report ``mcp.gateway.backend.up`` of the (name, connected) pairs ``backends()`` gives."""
        self._backends.append(backends)

    def _observe_backends(self, options: CallbackOptions) -> Iterable[Observation]:
        for backends in self._backends:
            for name, up in backends():
                yield Observation(1 if up else 0, {c.BACKEND_NAME: name})

    def watch_store(self, store: object) -> None:
        """Count the round trips of ``store`` (one that reports them: the Redis store)."""
        if isinstance(store, CountsRoundTrips) and self.store_round_trip not in (
            store.round_trip_observers
        ):
            store.round_trip_observers.append(self.store_round_trip)

    def store_round_trip(self, ok: bool) -> None:
        """Count one round trip to the shared store (and a failure when not ``ok``)."""
        self.store_operations.add(1)
        if not ok:
            self.store_failures.add(1)


def continued(meta: Mapping[str, Any]) -> otel_context.Context | None:
    """The trace context ``params._meta`` carries (as the official SDK reads it:
    None when it has no valid ``traceparent``, so the span parents to what is current)."""
    try:
        found = propagate.extract(meta)
    except (ValueError, TypeError):
        return None
    if not trace.get_current_span(found).get_span_context().is_valid:
        return None
    return found


def with_trace_context(spec: MethodSpec[Any, Any], params: Any) -> Any:
    """``params`` with the current trace context in ``_meta`` (``traceparent``,
    ``tracestate``, ``baggage``, unprefixed: SEP-414), over any the caller put there."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if not carrier:
        return params
    if params is None:
        if spec.params is None:
            return None
        return spec.params(meta=carrier)
    meta = meta_of(params)
    merged = {**meta, **carrier} if meta else carrier
    if isinstance(params, Mapping):
        return {**params, "_meta": merged}
    try:
        return msgspec.structs.replace(params, meta=merged)
    except TypeError:  # a params type with no _meta: sent as it is
        return params


def failed(
    span: Span, attributes: dict[str, Any], result: Any, error: BaseException | None
) -> None:
    """Mark ``span`` as the conventions say for how its operation ended: a JSON-RPC
    error's code in ``error.type`` and ``rpc.response.status_code`` and its message
    as the status; an exception's class name; a tool result with ``isError`` as
    ``tool_error``."""
    if error is None:
        if attributes[c.METHOD_NAME] == "tools/call" and tool_failed(result):
            attributes[c.ERROR_TYPE] = c.TOOL_ERROR
            span.set_attribute(c.ERROR_TYPE, c.TOOL_ERROR)
            span.set_status(StatusCode.ERROR)
        return
    if isinstance(error, McpError):
        code = str(error.code)
        attributes[c.ERROR_TYPE] = attributes[c.STATUS_CODE] = code
        span.set_attributes({c.ERROR_TYPE: code, c.STATUS_CODE: code})
        span.set_status(StatusCode.ERROR, error.message)
        return
    if not isinstance(error, Exception):  # cancelled: not a failure of the operation
        attributes[c.ERROR_TYPE] = type(error).__qualname__
        span.set_attribute(c.ERROR_TYPE, attributes[c.ERROR_TYPE])
        return
    attributes[c.ERROR_TYPE] = type(error).__qualname__
    attributes[c.STATUS_CODE] = str(INTERNAL_ERROR)
    span.set_attributes(
        {c.ERROR_TYPE: attributes[c.ERROR_TYPE], c.STATUS_CODE: str(INTERNAL_ERROR)}
    )
    span.record_exception(error)
    span.set_status(StatusCode.ERROR, str(error))


def metric_attributes(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {key: attributes[key] for key in _METRIC_KEYS if key in attributes}
