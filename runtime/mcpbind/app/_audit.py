"""The audit trail of a gateway: one JSON line per proxied call.

    audit = Audit("audit.jsonl")                 # or Audit(logger=logging.getLogger("audit"))
    app.proxy(source, prefix="everything", audit=audit)

Each ``tools/call``, ``prompts/get``, ``resources/read`` and
``completion/complete`` a front client makes of a proxied server is written
when it ends, as one JSON object on one line::

    {"time": "2026-11-26T03:40:12.512Z", "who": "principal:sub:alice",
     "client": "claude-code 1.2", "backend": "everything", "method": "tools/call",
     "name": "echo", "outcome": "ok", "durationMs": 3.1}

``who`` is the client as the transport names it for its per-client limits
(``Call.client``): the authenticated caller (``principal:<subject or client
id>``), else the HTTP client's address (``peer:<address>``, the one a proxy of
``trusted_proxies`` forwarded), else ``local`` (stdio, in memory); ``client`` the name and version the front client gave at
initialization, when it gave them. ``name`` is the tool or prompt as the
backend knows it (for reads the URI, for completions the reference).
``outcome``: ``ok``; ``error`` (the tool answered ``isError: true``);
``refused`` (the backend or the gateway answered a JSON-RPC error: ``code``
and ``error`` say which); ``cancelled``; ``failed`` (the connection broke,
or the backend did not answer within its ``requestTimeout``: ``error``). The call's ``arguments`` are written only with
``arguments=True``. Nothing of the backend's connection (headers,
environment, tokens) is ever written.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import time
from collections.abc import Awaitable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from .._core import jsonrpc
from .._core.jsonrpc import McpError
from ..methods import RequestContext

AUDITED = frozenset({"tools/call", "prompts/get", "resources/read", "completion/complete"})


class Audit:
    """Where the audit lines go: appended to ``path``, else to ``logger``
    (at INFO; default the ``mcpbind.audit`` logger). ``arguments``: also
    write each call's arguments."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        logger: logging.Logger | None = None,
        arguments: bool = False,
    ) -> None:
        self.path = Path(path) if path is not None else None
        self.logger = logger if logger is not None else logging.getLogger("mcpbind.audit")
        self.arguments = arguments
        self._file: TextIO | None = None

    def write(self, record: Mapping[str, object]) -> None:
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
        if self.path is None:
            self.logger.info("%s", line)
            return
        if self._file is None:
            # Line-buffered: each record reaches the file whole, as soon as it is written.
            self._file = open(self.path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
        self._file.write(line + "\n")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    async def call(
        self,
        backend: str,
        method: str,
        wire: Mapping[str, object],
        ctx: RequestContext,
        answer: Awaitable[Any],
    ) -> Any:
        """Await the backend's ``answer`` to ``method`` and write how it went."""
        started = time.perf_counter()
        record: dict[str, object] = {
            "time": _now(),
            "who": who(ctx),
        }
        client = _client(ctx)
        if client:
            record["client"] = client
        record.update(backend=backend, method=method, name=_name(method, wire))
        if self.arguments and method in ("tools/call", "prompts/get"):
            record["arguments"] = wire.get("arguments") or {}
        try:
            result = await answer
        except McpError as error:
            # A backend lost or silent past its requestTimeout did not refuse: the call failed.
            broken = error.code in (jsonrpc.CONNECTION_CLOSED, jsonrpc.REQUEST_TIMEOUT)
            outcome = "failed" if broken else "refused"
            record.update(outcome=outcome, code=error.code, error=error.message)
            raise
        except asyncio.CancelledError:
            record["outcome"] = "cancelled"
            raise
        except Exception as error:
            record.update(outcome="failed", error=str(error) or type(error).__name__)
            raise
        else:
            record["outcome"] = "error" if getattr(result, "is_error", False) is True else "ok"
            return result
        finally:
            record["durationMs"] = round((time.perf_counter() - started) * 1000, 3)
            if method in AUDITED:
                self.write(record)


def who(ctx: RequestContext) -> str:
    """The caller, as the audit names it: as ``Call.client`` does, the key the
    transport names the request's client by."""
    return ctx.client_identity.key


def _client(ctx: RequestContext) -> str:
    info = ctx.client_info
    if info is None:
        return ""
    name = getattr(info, "name", None)
    version = getattr(info, "version", None)
    return " ".join(str(part) for part in (name, version) if part)


def _name(method: str, wire: Mapping[str, Any]) -> str:
    if method == "resources/read":
        return str(wire.get("uri", ""))
    if method == "completion/complete":
        ref = wire.get("ref") or {}
        return str(ref.get("name") or ref.get("uri") or "")
    return str(wire.get("name", ""))


def _now() -> str:
    moment = datetime.now(timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
