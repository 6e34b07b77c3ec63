"""Part 1: decoding with validation and encoding, per message kind.

Three contestants on the same bytes (bench/corpus.py):

* ours: ``mcpbind.codec.decoder(T).decode`` / ``mcpbind.codec.encode``
  with the generated 2025-11-25 types;
* sdk: the official SDK's pydantic models (``mcp.types``),
  ``model_validate_json`` / ``model_dump_json(by_alias=True, exclude_none=True)``;
* floor: untyped ``msgspec.json.decode`` / ``msgspec.json.encode`` of the same
  bytes / of the same untyped value (no validation at all).

Two shapes of each message are measured:

* ``payload``: the bytes under ``params`` / ``result`` only, decoded straight
  into the params or result type;
* ``message``: the whole JSON-RPC line, decoded the way each library's session
  does it. Ours: a response of 4 KiB or more to a typed call is decoded in one
  pass, its result bytes straight into the result type
  (``Outgoing.deliver_typed``; ``outgoing.result_bytes`` finds
  them); smaller responses, requests and notifications go through
  ``jsonrpc.decode_envelope`` (params/result stay raw bytes), then
  ``decoder(T).decode(raw)``. SDK: ``jsonrpc_message_adapter.validate_json``
  then ``T.model_validate(message.result or .params)``. Encoding a whole
  message: ours ``jsonrpc.result_bytes(id, encode(obj))`` (and the request and
  notification builders); SDK ``JSONRPCResponse(..., result=obj.model_dump(by_alias=True,
  mode="json", exclude_none=True)).model_dump_json(by_alias=True, exclude_unset=True)``,
  which is what its dispatcher and transports do.

Timing is timeit-style: each callable runs in a loop calibrated to take at
least ``batch_seconds``, with the garbage collector off (as timeit does),
timed in CPU time of the process (``time.process_time``: on a shared machine
the time spent waiting for a core is left out); the three contestants are
interleaved, ``repeats`` times, and the per-call median and minimum over
repeats are kept, and the median of the ratios of back-to-back runs.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec

from .corpus import Kind, kinds

CONTESTANTS = ("ours", "sdk", "floor")
OPERATIONS = ("decode payload", "decode message", "encode payload", "encode message")


def _ours(kind: Kind) -> dict[str, Callable[[], Any]]:
    import mcpbind_protocol.v2025_11_25 as v
    from mcpbind import codec
    from mcpbind._core import jsonrpc, outgoing

    _result_bytes: Callable[[bytes], Any] | None = outgoing.result_bytes
    if len(kind.message) < outgoing.TYPED_MIN_SIZE:
        _result_bytes = None  # the session takes the envelope path for small responses

    type_ = getattr(v, kind.ours_type)
    dec = codec.decoder(type_)
    payload, message = kind.payload, kind.message
    obj = dec.decode(payload)
    encode = codec.encode

    if kind.role == "request":

        def decode_message() -> Any:
            envelope = jsonrpc.decode_envelope(message)
            return dec.decode(envelope.params)  # type: ignore[arg-type]  # the corpus has params

        def encode_message() -> bytes:
            return jsonrpc.request_bytes(7, kind.method, encode(obj))

    elif kind.role == "notification":

        def decode_message() -> Any:
            envelope = jsonrpc.decode_envelope(message)
            return dec.decode(envelope.params)  # type: ignore[arg-type]  # the corpus has params

        def encode_message() -> bytes:
            return jsonrpc.notification_bytes(kind.method, encode(obj))

    elif _result_bytes is not None:
        # A response to a typed call: the session decodes the result bytes in
        # place, in one pass (Session._dispatch_typed_response).
        def decode_message() -> Any:
            found = _result_bytes(message)
            assert found is not None
            return dec.decode(found[1])

        def encode_message() -> bytes:
            return jsonrpc.result_bytes(7, encode(obj))

    else:  # a runtime without that path: envelope first

        def decode_message() -> Any:
            envelope = jsonrpc.decode_envelope(message)
            return dec.decode(envelope.result)  # type: ignore[arg-type]  # ... and results

        def encode_message() -> bytes:
            return jsonrpc.result_bytes(7, encode(obj))

    return {
        "decode payload": lambda: dec.decode(payload),
        "decode message": decode_message,
        "encode payload": lambda: encode(obj),
        "encode message": encode_message,
    }


def _sdk(kind: Kind) -> dict[str, Callable[[], Any]]:
    import mcp.types as t

    model = getattr(t, kind.sdk_type)
    adapter = t.jsonrpc_message_adapter
    payload, message = kind.payload, kind.message
    obj = model.model_validate_json(payload)

    if kind.role == "result":

        def decode_message() -> Any:
            parsed = adapter.validate_json(message, by_name=False)
            return model.model_validate(parsed.result, by_name=False)  # type: ignore[union-attr]

        def encode_message() -> bytes | str:
            result = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
            return t.JSONRPCResponse(jsonrpc="2.0", id=7, result=result).model_dump_json(
                by_alias=True, exclude_unset=True
            )

    else:

        def decode_message() -> Any:
            parsed = adapter.validate_json(message, by_name=False)
            return model.model_validate(parsed.params, by_name=False)  # type: ignore[union-attr]

        if kind.role == "request":

            def encode_message() -> bytes | str:
                params = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
                return t.JSONRPCRequest(
                    jsonrpc="2.0", id=7, method=kind.method, params=params
                ).model_dump_json(by_alias=True, exclude_unset=True)

        else:

            def encode_message() -> bytes | str:
                params = obj.model_dump(by_alias=True, mode="json", exclude_none=True)
                return t.JSONRPCNotification(
                    jsonrpc="2.0", method=kind.method, params=params
                ).model_dump_json(by_alias=True, exclude_unset=True)

    return {
        "decode payload": lambda: model.model_validate_json(payload),
        "decode message": decode_message,
        "encode payload": lambda: obj.model_dump_json(by_alias=True, exclude_none=True),
        "encode message": encode_message,
    }


def _floor(kind: Kind) -> dict[str, Callable[[], Any]]:
    payload, message = kind.payload, kind.message
    value, whole = msgspec.json.decode(payload), msgspec.json.decode(message)
    decode, encode = msgspec.json.decode, msgspec.json.encode
    return {
        "decode payload": lambda: decode(payload),
        "decode message": lambda: decode(message),
        "encode payload": lambda: encode(value),
        "encode message": lambda: encode(whole),
    }


def _loop(fn: Callable[[], Any], number: int) -> float:
    # CPU time of this process: on a shared machine, time spent waiting for a
    # core is not the code's.
    start = time.process_time()
    for _ in range(number):
        fn()
    return time.process_time() - start


def _calibrate(fn: Callable[[], Any], batch_seconds: float) -> int:
    number = 1
    while True:
        if _loop(fn, number) >= batch_seconds:
            return number
        number *= 2


def check(kind: Kind) -> None:
    """Both libraries accept the corpus and ours round-trips it exactly."""
    ours, sdk, floor = _ours(kind), _sdk(kind), _floor(kind)
    for table in (ours, sdk, floor):
        for fn in table.values():
            fn()
    again = msgspec.json.decode(ours["encode payload"]())
    if again != kind.payload_value:
        raise AssertionError(f"{kind.name}: our encoding changed the payload")
    if msgspec.json.decode(ours["encode message"]()) != msgspec.json.decode(kind.message):
        raise AssertionError(f"{kind.name}: our message encoding changed the message")


def run(
    repeats: int = 9, batch_seconds: float = 0.02, log: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """One row per (kind, operation): median and min seconds per call for each contestant."""
    rows: list[dict[str, Any]] = []
    for kind in kinds():
        check(kind)
        tables = {"ours": _ours(kind), "sdk": _sdk(kind), "floor": _floor(kind)}
        for operation in OPERATIONS:
            fns = {name: tables[name][operation] for name in CONTESTANTS}
            numbers = {name: _calibrate(fn, batch_seconds) for name, fn in fns.items()}
            samples: dict[str, list[float]] = {name: [] for name in CONTESTANTS}
            gc_was_enabled = gc.isenabled()
            gc.disable()
            try:
                for _ in range(repeats):
                    for name, fn in fns.items():
                        samples[name].append(_loop(fn, numbers[name]) / numbers[name])
            finally:
                if gc_was_enabled:
                    gc.enable()
            row: dict[str, Any] = {
                "kind": kind.name,
                "operation": operation,
                "bytes": len(kind.payload if operation.endswith("payload") else kind.message),
            }
            for name in CONTESTANTS:
                row[name] = {
                    "median_s": statistics.median(samples[name]),
                    "min_s": min(samples[name]),
                    "loops": numbers[name],
                    "repeats": repeats,
                }
            # Ratios of the runs made back to back, then their median: steadier
            # than a ratio of medians when the machine's speed drifts.
            for other in ("sdk", "floor"):
                row[f"ours_over_{other}"] = statistics.median(
                    o / t for o, t in zip(samples["ours"], samples[other])
                )
            rows.append(row)
            log(
                f"  {kind.name:36s} {operation:15s} ours {row['ours']['median_s'] * 1e6:10.2f} us"
                f"  sdk {row['sdk']['median_s'] * 1e6:10.2f} us  floor {row['floor']['median_s'] * 1e6:10.2f} us"
            )
    return rows


def main() -> None:
    import argparse
    import json
    import sys

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--batch-seconds", type=float, default=0.02)
    parser.add_argument(
        "--json", action="store_true", help="print the rows as JSON on stdout (progress on stderr)"
    )
    options = parser.parse_args()
    if options.json:
        rows = run(
            options.repeats, options.batch_seconds, log=lambda line: print(line, file=sys.stderr)
        )
        print(json.dumps(rows))
    else:
        run(options.repeats, options.batch_seconds)


if __name__ == "__main__":
    main()
