"""Just enough of a POSTed message to route it, decoded once for every HTTP app: the
JSON-RPC envelope (is it a request, a notification or a response, with which id,
method and undecoded params), the same the session dispatches, so a request's
envelope is decoded once between the POST and its handler."""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from ...._core import jsonrpc
from ...._core.jsonrpc import Envelope, RequestId

decode_probe = msgspec.json.Decoder(Envelope | list[Envelope]).decode
"""A message or a batch as envelopes (raises as msgspec does on what is neither)."""


def post_problem(envelope: Envelope) -> str | None:
    """Why this is not a JSON-RPC message a POST may carry, if it is not."""
    if (
        envelope.jsonrpc is msgspec.UNSET
        and envelope.method is msgspec.UNSET
        and envelope.id is msgspec.UNSET
    ):
        return "Invalid request: not a JSON-RPC message"
    if envelope.jsonrpc != "2.0":
        return 'Invalid request: "jsonrpc" must be "2.0"'
    if isinstance(envelope.method, str):
        return "Invalid request: id must not be null" if envelope.id is None else None
    if envelope.id is None or envelope.id is msgspec.UNSET:
        return "Invalid request: not a JSON-RPC message"
    if (envelope.result is msgspec.UNSET) == (envelope.error is msgspec.UNSET):
        return "Invalid request: a response has exactly one of result and error"
    return None


def reply_id(envelope: Envelope) -> RequestId | None:
    """The id an error about this message goes under: a request's own when
    it can be read, else null (a notification, a response: its id is the
    peer's own call, and an error under it would reach that call)."""
    if isinstance(envelope.method, str) and isinstance(envelope.id, (str, int)):
        return envelope.id
    return None


def is_request(envelope: Envelope) -> bool:
    """Whether the envelope is a JSON-RPC 2.0 request (a method and an id that is not null)."""
    return (
        envelope.jsonrpc == "2.0"
        and isinstance(envelope.method, str)
        and isinstance(envelope.id, (str, int))
    )


_members = msgspec.json.Decoder(list[msgspec.Raw]).decode
_member = msgspec.json.Decoder(Envelope).decode


def probe_body(body: bytes) -> Envelope | list[Envelope]:
    """A POSTed body as envelopes, as :data:`decode_probe` makes them, except for a
    batch some of whose members are no message at all (``[{...}, 5]``): each
    of those is an empty envelope, of which :func:`post_problem` says what it is,
    so that the others can be served (JSON-RPC 2.0 answers a batch member by member).
    Raises as decode_probe does on what is neither a message nor an array."""
    try:
        probe: Envelope | list[Envelope] = decode_probe(body)
    except msgspec.ValidationError:
        if body.lstrip()[:1] != b"[" or jsonrpc.parse_error(body) is not None:
            raise
        return [_probe_member(member) for member in _members(body)]
    return probe


def _probe_member(member: msgspec.Raw) -> Envelope:
    try:
        return _member(member)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return Envelope()


def batch_members(body: bytes) -> list[msgspec.Raw]:
    """The members of a batch, undecoded, in order (one per envelope of :func:`probe_body`)."""
    return _members(body)


def probed(body: bytes) -> Envelope | list[Envelope] | None:
    """:func:`probe_body`, None for what it cannot probe (a path that reads
    the body only when it refuses it: the session answers what is wrong)."""
    try:
        return probe_body(body)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return None


def requests_in(body: bytes) -> int:
    """How many requests a message or batch holds (what cannot be probed counts as one)."""
    try:
        probe = decode_probe(body)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return 1
    items = probe if isinstance(probe, list) else [probe]
    return sum(1 for i in items if isinstance(i.method, str) and isinstance(i.id, (str, int)))


def is_response(message: bytes) -> bool:
    try:
        probe = decode_probe(message)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return False
    return isinstance(probe, Envelope) and probe.method is msgspec.UNSET


def method_calls(body: bytes) -> Iterator[tuple[str, msgspec.Raw | msgspec.UnsetType]]:
    """The (method, params) of the requests and notifications in a body (none
    if it is not JSON-RPC: the session answers that); decoded only if asked."""
    try:
        probe = decode_probe(body)
    except (msgspec.MsgspecError, *jsonrpc.UNDECODABLE):
        return
    for item in probe if isinstance(probe, list) else [probe]:
        if isinstance(item.method, str):
            yield item.method, item.params
