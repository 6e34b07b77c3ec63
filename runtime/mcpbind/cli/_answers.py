"""What mcpx answers when the server asks: sampling, elicitation and roots.

Each is declared as a client capability, so that servers offer the tools that
need them. The answers come from flags (``--sampling-reply TEXT``,
``--elicit-answer JSON``, ``--decline``, ``--root PATH``); without a flag,
a person at a terminal is asked (elicitation is a form built from the
requested schema), and without a terminal the request is declined.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from mcpbind_protocol import v2026_07_28 as mcp

from .. import codec
from .._core.jsonrpc import McpError
from ..host import HostHandlers
from ..methods import RequestContext
from ._output import Terminal

DECLINED_SAMPLING = -1
"""The code the official SDKs use for a sampling request the user rejected."""


@dataclass(frozen=True)
class Answers:
    """How mcpx answers the server's requests."""

    sampling_reply: str | None = None
    elicit_answer: Mapping[str, Any] | None = None
    decline: bool = False
    roots: Sequence[str] = ()
    interactive: bool = False
    """Whether a person may be asked (stdin and stderr are terminals)."""


class Handlers(HostHandlers):
    """Log messages to stderr; the server's requests answered by :class:`Answers`."""

    def __init__(
        self,
        terminal: Terminal,
        answers: Answers,
        ask: Callable[[str], str] | None = None,
    ) -> None:
        self.terminal = terminal
        self.answers = answers
        self._ask = ask or _prompt
        self._asking = asyncio.Lock()  # one question on the terminal at a time
        self._held: list[tuple[str, str, str | None, Any]] = []

    async def on_log(self, server: str, params: Any) -> None:
        logger = params.logger if isinstance(params.logger, str) else None
        if self._asking.locked():
            # Printed now, the line would land inside the question, before the typed answer.
            self._held.append((server, params.level, logger, params.data))
            return
        self.terminal.log(server, params.level, logger, params.data)

    @contextlib.asynccontextmanager
    async def _question(self) -> AsyncIterator[None]:
        """The terminal to ask on: one question at a time, log lines held until it is answered."""
        async with self._asking:
            self.terminal.pause()
            try:
                yield
            finally:
                held, self._held = self._held, []
                for entry in held:
                    self.terminal.log(*entry)

    async def on_resource_updated(self, server: str, params: Any) -> None:
        self.terminal.updated(params.uri)

    async def create_message(
        self, server: str, params: mcp.CreateMessageRequestParams, ctx: RequestContext
    ) -> mcp.CreateMessageResult:
        reply = self.answers.sampling_reply
        if reply is None and self.answers.interactive and not self.answers.decline:
            async with self._question():
                self.terminal.notice(f"{server} asks for a completion (sampling):")
                for message in params.messages:
                    self.terminal.notice(f"  {message.role}: {_text(message.content)}")
                reply = await asyncio.to_thread(self._ask, "Reply (empty to decline)")
        if not reply:
            raise McpError(DECLINED_SAMPLING, "the user declined the sampling request")
        return mcp.CreateMessageResult(
            role="assistant", content=mcp.TextContent(text=reply), model="mcpx"
        )

    async def elicit(
        self, server: str, params: mcp.ElicitRequestParams, ctx: RequestContext
    ) -> mcp.ElicitResult:
        if self.answers.decline:
            return mcp.ElicitResult(action="decline")
        if self.answers.elicit_answer is not None:
            return mcp.ElicitResult(action="accept", content=dict(self.answers.elicit_answer))
        if not self.answers.interactive or not isinstance(params, mcp.ElicitRequestFormParams):
            return mcp.ElicitResult(action="decline")
        schema = json.loads(codec.encode(params.requested_schema))
        async with self._question():
            self.terminal.notice(f"{server} asks: {params.message}")
            content = await asyncio.to_thread(_form, schema, self._ask)
        if content is None:
            return mcp.ElicitResult(action="decline")
        return mcp.ElicitResult(action="accept", content=content)

    async def list_roots(
        self, server: str, params: mcp.ListRootsRequestParams, ctx: RequestContext
    ) -> mcp.ListRootsResult:
        return mcp.ListRootsResult(roots=[_root(path) for path in self.answers.roots])


def _root(path: str) -> mcp.Root:
    if "://" in path:
        return mcp.Root(uri=path)
    resolved = Path(path).expanduser().resolve()
    return mcp.Root(uri=resolved.as_uri(), name=resolved.name or str(resolved))


def _text(content: Any) -> str:
    text = getattr(content, "text", None)
    return text if isinstance(text, str) else codec.encode(content).decode()


def _prompt(label: str) -> str:
    return str(click.prompt(label, default="", show_default=False, err=True))


def _form(schema: Mapping[str, Any], ask: Callable[[str], str]) -> dict[str, Any] | None:
    """The requested schema's fields asked one by one; None when the user
    declines (``-`` at the first field)."""
    required = set(schema.get("required", ()))
    content: dict[str, Any] = {}
    properties: Mapping[str, Any] = schema.get("properties", {})
    for position, (name, field) in enumerate(properties.items()):
        while True:
            raw = ask(_label(name, field, name in required, position == 0))
            if position == 0 and raw == "-":
                return None
            try:
                value = _value(field, raw)
            except ValueError as error:
                click.echo(f"  {error}", err=True)
                continue
            if value is None and name in required:
                click.echo("  required", err=True)
                continue
            break
        if value is not None:
            content[name] = value
    return content


def _choices(field: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(value, title) of an enumeration, in any of the schema's spellings (a
    multiple choice's are those of its items)."""
    if field.get("type") == "array" and isinstance(field.get("items"), Mapping):
        return _choices(field["items"])
    for key in ("oneOf", "anyOf"):
        if isinstance(field.get(key), list):
            return [(str(o.get("const")), str(o.get("title", o.get("const")))) for o in field[key]]
    if isinstance(field.get("enum"), list):
        titles = field.get("enumNames") or field["enum"]
        return [(str(v), str(t)) for v, t in zip(field["enum"], titles)]
    return []


def _label(name: str, field: Mapping[str, Any], required: bool, first: bool) -> str:
    title = str(field.get("title", name))
    parts = [title + ("" if required else " (optional)")]
    if isinstance(field.get("description"), str):
        parts.append(f"- {field['description']}")
    choices = _choices(field)
    if choices:
        several = " (several: 1,3)" if field.get("type") == "array" else ""
        parts.append(
            "[" + ", ".join(f"{i + 1}={t}" for i, (_, t) in enumerate(choices)) + "]" + several
        )
    elif field.get("type") == "boolean":
        parts.append("[y/n]")
    if "default" in field:
        parts.append(f"(Enter: {_shown_default(_default(field), choices)})")
    if first:
        parts.append("('-' declines)")
    return " ".join(parts)


def _default(field: Mapping[str, Any]) -> Any:
    """The field's default; an integer's as an int (the schema may come with 42.0)."""
    default = field.get("default")
    if field.get("type") == "integer" and isinstance(default, float) and default.is_integer():
        return int(default)
    return default


def _shown_default(default: Any, choices: list[tuple[str, str]]) -> str:
    """What Enter keeps, as the user reads it: a choice by its title."""
    titles = dict(choices)
    values = default if isinstance(default, list) else [default]
    if choices:
        return ", ".join(titles.get(str(value), str(value)) for value in values)
    if isinstance(default, bool):
        return "y" if default else "n"
    return default if isinstance(default, str) else json.dumps(default)


def _choice(values: list[str], raw: str) -> str:
    if raw.isdigit() and 1 <= int(raw) <= len(values):
        return values[int(raw) - 1]
    if raw in values:
        return raw
    raise ValueError(f"one of {', '.join(values)} (or its number)")


def _value(field: Mapping[str, Any], raw: str) -> Any:
    raw = raw.strip()
    if not raw:
        return _default(field)
    choices = _choices(field)
    if choices:
        values = [v for v, _ in choices]
        picked = [_choice(values, part.strip()) for part in raw.split(",")]
        if field.get("type") == "array":
            return picked
        if len(picked) != 1:
            raise ValueError("one choice only")
        return picked[0]
    kind = field.get("type")
    if kind == "boolean":
        if raw.lower() in ("y", "yes", "true"):
            return True
        if raw.lower() in ("n", "no", "false"):
            return False
        raise ValueError("y or n")
    if kind in ("number", "integer"):
        try:
            return int(raw) if kind == "integer" else float(raw)
        except ValueError:
            raise ValueError(
                f"expected {'an integer' if kind == 'integer' else 'a number'}"
            ) from None
    return raw


__all__ = ["Answers", "Handlers"]
