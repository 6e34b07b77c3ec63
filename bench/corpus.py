"""A realistic, deterministic corpus of MCP 2025-11-25 messages.

Every kind is built as plain JSON-compatible data, then encoded once with
msgspec; the benchmark decodes and re-encodes exactly these bytes with both
libraries. ``payload`` is what sits under ``params`` or ``result``; ``message``
is the whole JSON-RPC line as it travels over stdio.
"""

from __future__ import annotations

import base64
import random
from dataclasses import dataclass
from typing import Any

import msgspec

PROTOCOL_VERSION = "2025-11-25"


@dataclass(frozen=True)
class Kind:
    name: str
    role: str  # "request" | "result" | "notification"
    method: str
    payload_value: dict[str, Any]
    ours_type: str  # attribute of mcpbind_protocol.v2025_11_25
    sdk_type: str  # attribute of mcp.types

    @property
    def payload(self) -> bytes:
        return msgspec.json.encode(self.payload_value)

    @property
    def message(self) -> bytes:
        envelope: dict[str, Any] = {"jsonrpc": "2.0"}
        if self.role == "request":
            envelope |= {"id": 7, "method": self.method, "params": self.payload_value}
        elif self.role == "notification":
            envelope |= {"method": self.method, "params": self.payload_value}
        else:
            envelope |= {"id": 7, "result": self.payload_value}
        return msgspec.json.encode(envelope)


# ------------------------------------------------------------------ tools/list

_WORDS = (
    "repository branch commit file path directory pattern query issue pull request label milestone "
    "user team project table column row index schema record cursor page limit offset timeout region "
    "bucket object key prefix version tag release build job pipeline artifact secret token scope "
    "channel message thread reaction calendar event attendee document section paragraph image"
).split()

_DOMAINS = (
    "github",
    "gitlab",
    "fs",
    "git",
    "postgres",
    "sqlite",
    "s3",
    "slack",
    "jira",
    "calendar",
    "docs",
    "search",
    "http",
    "k8s",
    "docker",
    "browser",
    "memory",
    "notion",
    "linear",
    "sentry",
)
_VERBS = ("list", "get", "create", "update", "delete", "search", "read", "write", "run", "describe")


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def _property(rng: random.Random, depth: int = 0) -> dict[str, Any]:
    kind = rng.choice(
        ("string", "string", "string", "integer", "boolean", "enum", "array", "object", "number")
    )
    if kind == "object" and depth > 0:
        kind = "string"
    prop: dict[str, Any]
    if kind == "string":
        prop = {"type": "string", "description": _sentence(rng, rng.randint(4, 14))}
        if rng.random() < 0.3:
            prop["minLength"] = 1
        if rng.random() < 0.2:
            prop["format"] = rng.choice(("uri", "date-time", "email"))
    elif kind == "integer":
        prop = {
            "type": "integer",
            "description": _sentence(rng, 6),
            "minimum": 1,
            "maximum": rng.choice((100, 1000)),
        }
        if rng.random() < 0.5:
            prop["default"] = 30
    elif kind == "number":
        prop = {"type": "number", "description": _sentence(rng, 5), "exclusiveMinimum": 0}
    elif kind == "boolean":
        prop = {"type": "boolean", "description": _sentence(rng, 7), "default": rng.random() < 0.5}
    elif kind == "enum":
        prop = {
            "type": "string",
            "enum": rng.sample(_WORDS, rng.randint(2, 6)),
            "description": _sentence(rng, 5),
        }
    elif kind == "array":
        prop = {
            "type": "array",
            "items": {"type": "string"} if rng.random() < 0.7 else _property(rng, depth + 1),
            "description": _sentence(rng, 8),
        }
        if rng.random() < 0.3:
            prop["maxItems"] = 50
    else:
        names = rng.sample(_WORDS, rng.randint(2, 4))
        prop = {
            "type": "object",
            "description": _sentence(rng, 6),
            "properties": {n: _property(rng, depth + 1) for n in names},
            "required": names[:1],
            "additionalProperties": False,
        }
    return prop


def _tool(rng: random.Random, index: int) -> dict[str, Any]:
    domain, verb = _DOMAINS[index % len(_DOMAINS)], _VERBS[(index // len(_DOMAINS)) % len(_VERBS)]
    noun = rng.choice(_WORDS)
    names = list(dict.fromkeys(rng.sample(_WORDS, rng.randint(2, 8))))
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {n.replace(" ", "_"): _property(rng) for n in names},
        "required": names[: rng.randint(0, min(3, len(names)))],
        "additionalProperties": False,
    }
    if index % 3 == 0:
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    tool: dict[str, Any] = {
        "name": f"{domain}_{verb}_{noun}_{index}",
        "title": f"{verb.capitalize()} {noun} ({domain})",
        "description": " ".join(
            _sentence(rng, rng.randint(8, 20)) for _ in range(rng.randint(1, 4))
        ),
        "inputSchema": schema,
    }
    if index % 4 == 0:
        tool["annotations"] = {
            "title": tool["title"],
            "readOnlyHint": verb in ("list", "get", "search", "read", "describe"),
            "destructiveHint": verb == "delete",
            "idempotentHint": verb != "create",
            "openWorldHint": domain in ("http", "search", "browser"),
        }
    if index % 5 == 0:
        tool["outputSchema"] = {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object"}},
                "nextCursor": {"type": "string"},
            },
            "required": ["items"],
        }
    return tool


def tools_list_result(count: int = 100) -> dict[str, Any]:
    rng = random.Random(20251125)
    return {"tools": [_tool(rng, i) for i in range(count)], "nextCursor": "eyJwYWdlIjogMn0="}


# ------------------------------------------------------------------ the others


def initialize_request() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {
            "roots": {"listChanged": True},
            "sampling": {},
            "elicitation": {"form": {}, "url": {}},
        },
        "clientInfo": {"name": "claude-desktop", "title": "Desktop client", "version": "1.12.4"},
    }


def initialize_result() -> dict[str, Any]:
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": {
            "logging": {},
            "completions": {},
            "prompts": {"listChanged": True},
            "resources": {"subscribe": True, "listChanged": True},
            "tools": {"listChanged": True},
        },
        "serverInfo": {"name": "acme-platform", "title": "ACME platform tools", "version": "3.4.1"},
        "instructions": "Use the github_* tools for code hosting and the postgres_* tools for the analytics "
        "warehouse. Prefer search tools before reading whole documents.",
    }


def call_tool_text_result() -> dict[str, Any]:
    rng = random.Random(7)
    lines = [f"{i:4d}  {_sentence(rng, rng.randint(6, 16))}" for i in range(60)]
    return {
        "content": [
            {"type": "text", "text": "Found 60 matching lines in 12 files:"},
            {"type": "text", "text": "\n".join(lines)},
        ],
        "isError": False,
    }


def call_tool_image_result(size: int = 48 * 1024) -> dict[str, Any]:
    data = random.Random(11).randbytes(size)
    return {
        "content": [
            {"type": "text", "text": "Screenshot of https://example.com/dashboard at 1280x800."},
            {
                "type": "image",
                "data": base64.b64encode(b"\x89PNG\r\n\x1a\n" + data).decode(),
                "mimeType": "image/png",
                "annotations": {"audience": ["user"], "priority": 0.7},
            },
        ]
    }


def read_resource_blob_result(blob_chars: int = 1024 * 1024) -> dict[str, Any]:
    """One blob of exactly ``blob_chars`` base64 characters (1 MiB: 768 KiB of data)."""
    data = random.Random(13).randbytes(blob_chars * 3 // 4)
    return {
        "contents": [
            {
                "uri": "file:///srv/data/exports/2026-11-21/report.parquet",
                "mimeType": "application/vnd.apache.parquet",
                "blob": base64.b64encode(data).decode(),
            }
        ]
    }


def progress_notification() -> dict[str, Any]:
    return {
        "progressToken": "c0ffee-42",
        "progress": 42,
        "total": 100,
        "message": "Indexed 42 of 100 files",
    }


def kinds() -> list[Kind]:
    return [
        Kind(
            "initialize request",
            "request",
            "initialize",
            initialize_request(),
            "InitializeRequestParams",
            "InitializeRequestParams",
        ),
        Kind(
            "initialize result",
            "result",
            "initialize",
            initialize_result(),
            "InitializeResult",
            "InitializeResult",
        ),
        Kind(
            "tools/list result (100 tools)",
            "result",
            "tools/list",
            tools_list_result(),
            "ListToolsResult",
            "ListToolsResult",
        ),
        Kind(
            "tools/call result (text)",
            "result",
            "tools/call",
            call_tool_text_result(),
            "CallToolResult",
            "CallToolResult",
        ),
        Kind(
            "tools/call result (image)",
            "result",
            "tools/call",
            call_tool_image_result(),
            "CallToolResult",
            "CallToolResult",
        ),
        Kind(
            "resources/read result (1 MiB blob)",
            "result",
            "resources/read",
            read_resource_blob_result(),
            "ReadResourceResult",
            "ReadResourceResult",
        ),
        Kind(
            "progress notification",
            "notification",
            "notifications/progress",
            progress_notification(),
            "ProgressNotificationParams",
            "ProgressNotificationParams",
        ),
    ]


if __name__ == "__main__":
    for kind in kinds():
        print(
            f"{kind.name:40s} payload {len(kind.payload):>9,d} B   message {len(kind.message):>9,d} B"
        )
