"""Redaction of a backend's configured secrets in what a gateway relays.

    app.proxy({"command": "mcp-files", "env": {"API_KEY": "sk-..."}},
              prefix="files", redact=True)     # or redact=["sk-..."]

A backend is given its credentials (an entry's ``env`` and ``headers``) and
may print them: a tool that shows its environment, an error that quotes its
request. A :class:`Redaction` replaces each literal occurrence of the values
it holds in the backend's answers, errors, progress and log messages with
:data:`REDACTED` before they reach the front. It cannot see a value the
backend transformed (encoded, split, hashed, in an image): it is a net for
accidents, not a boundary against a backend that means to leak.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import msgspec

from .._core.jsonrpc import McpError
from ..host._config import ServerConfig

REDACTED = "[redacted]"

MIN_LENGTH = 8
"""Shorter values are not redacted: too common as plain words ("true",
"8080") to be secrets, and replacing them would garble the answers."""


class Redaction:
    """The secret values to take out of relayed content."""

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({value for value in secrets if len(value) >= MIN_LENGTH}, key=len)
        self.values: tuple[str, ...] = tuple(reversed(values))  # the longest first
        self._pattern = re.compile("|".join(map(re.escape, self.values))) if values else None

    @classmethod
    def of_entry(cls, config: ServerConfig) -> Redaction:
        """Every value of the entry's ``env`` and ``headers`` (and of a header,
        what follows its scheme: the token of ``Bearer <token>``)."""
        values = [*config.env.values(), *config.headers.values()]
        values += [value.split(None, 1)[1] for value in config.headers.values() if " " in value]
        return cls(values)

    def __bool__(self) -> bool:
        return self._pattern is not None

    def text(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(REDACTED, text)

    def value(self, value: object) -> object:
        """``value`` (JSON-like) with every string redacted."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.value(key): self.value(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.value(item) for item in value]
        return value

    def result(self, result: object) -> object:
        """A typed result (a msgspec Struct) with its strings redacted; the same
        object when nothing in it is secret."""
        if self._pattern is None or result is None:
            return result
        wire = msgspec.to_builtins(result)
        redacted = self.value(wire)
        if redacted == wire:
            return result
        return msgspec.convert(redacted, type(result))

    def error(self, error: McpError) -> McpError:
        if self._pattern is None:
            return error
        return McpError(error.code, self.text(error.message), self.value(error.data))
