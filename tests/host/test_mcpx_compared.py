"""The comparison page, row by row: every row of the table "Beside the
Inspector CLI 2.12.0" of docs/guides/mcpx-compared.md is run with mcpx and with
the pinned Inspector 2.12.0's command line (tests/peers), on server-everything
(over stdio, and over Streamable HTTP for the URL rows), and the two are
compared; where the page gives the Inspector a dash, that it refuses. Each
check also finds the flags it runs in the page's cells, so the page and what
was run cannot drift apart; a row without a check (or a check without a row)
fails."""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.everything_http import everything_http
from support.peers import NODE, NPM_BIN, REPO, SERVER_EVERYTHING, require
from test_host_cli import MCPX, mcpx, mcpx_json

pytestmark = pytest.mark.node

PAGE = REPO / "docs" / "guides" / "mcpx-compared.md"
LAUNCHER = NPM_BIN.parent / "@modelcontextprotocol" / "inspector" / "clients" / "launcher"
UNPORTABLE = Path(__file__).parents[1] / "support" / "unportable_server.py"
TICKER = Path(__file__).parents[1] / "support" / "ticker_server.py"
INSPECTOR_HOME = tempfile.mkdtemp(prefix="inspector-home-")  # its catalog and storage


def page_rows() -> dict[str, tuple[str, str]]:
    """task → (mcpx cell, Inspector cell) of the page's Inspector table."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Beside the Inspector CLI 2.12.0", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        # A cell ends at a pipe outside a code span (the tables keep those as text).
        cells = [cell.strip() for cell in re.findall(r"\|((?:`[^`]*`|[^|`])*)", line.strip())]
        cells = cells[:-1]  # the empty piece after the closing pipe
        if len(cells) == 3 and cells[0] not in ("task", "---"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def server() -> list[str]:
    return [
        str(require(NODE, "Node 22")),
        str(require(SERVER_EVERYTHING, "server-everything")),
        "stdio",
    ]


def inspector(*args: str, expect: int | None = 0) -> subprocess.CompletedProcess[str]:
    require(LAUNCHER, "the MCP Inspector (npm package @modelcontextprotocol/inspector)")
    done = subprocess.run(
        [str(NODE), str(LAUNCHER / "build" / "index.js"), "--cli", *args],
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "HOME": INSPECTOR_HOME},
    )
    if expect is not None:
        assert done.returncode == expect, f"inspector {args} exited {done.returncode}:\n{done}"
    return done


def inspector_json(*args: str) -> Any:
    """The result of a --format json run (its envelope's "result")."""
    envelope = json.loads(inspector("--format", "json", *args).stdout)
    return envelope["result"]


def refused(method: str, *args: str) -> None:
    done = inspector(*server(), "--method", method, *args, expect=None)
    assert done.returncode != 0
    assert f"Unsupported method: {method}" in done.stdout + done.stderr


def on_page(cell: str, *words: str) -> None:
    for word in words:
        assert word in cell, f"{word!r} is not in the page's cell {cell!r}"


def texts(result: Any) -> list[str]:
    return [block["text"] for block in result["content"] if block["type"] == "text"]


def everything() -> list[str]:
    return ["--", *server()]


# ------------------------------------------------------------------ the rows

Check = Callable[[str, str], None]
CHECKS: dict[str, Check] = {}


def row(task: str) -> Callable[[Check], Check]:
    def register(check: Check) -> Check:
        CHECKS[task] = check
        return check

    return register


@row("list tools")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx list tools")
    on_page(theirs, "--method tools/list")
    mine = {tool["name"] for tool in mcpx_json("list", "tools", "--json", *everything())}
    their = {tool["name"] for tool in inspector_json(*server(), "--method", "tools/list")["tools"]}
    # mcpx declares sampling and elicitation, so the tools that need them are listed to it.
    assert mine - their == {"trigger-sampling-request", "trigger-elicitation-request"}
    assert their <= mine and len(mine) == 16 and len(their) == 14


@row("call a tool")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx call get-sum a=1 b=2")
    on_page(theirs, "--tool-name get-sum", "--tool-arg a=1 b=2")
    mine = mcpx_json("call", "get-sum", "a=1", "b=2", "--json", *everything())
    their = inspector_json(
        *server(), "--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=1", "b=2"
    )
    assert texts(mine) == texts(their) == ["The sum of 1 and 2 is 3."]


@row("arguments as one JSON document")
def _(ours: str, theirs: str) -> None:
    document = '{"a": 1, "b": 2}'
    on_page(ours, document, "@FILE", "`-` (stdin)")
    on_page(theirs, f"--tool-args-json '{document}'")
    expected = ["The sum of 1 and 2 is 3."]
    assert texts(mcpx_json("call", "get-sum", document, "--json", *everything())) == expected
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as file:
        file.write(document)
    try:
        assert texts(mcpx_json("call", "get-sum", f"@{file.name}", "--json", *everything())) == (
            expected
        )
    finally:
        os.unlink(file.name)
    piped = subprocess.run(
        [str(MCPX), "call", "get-sum", "-", "--json", *everything()],
        input=document,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert piped.returncode == 0, piped.stderr
    assert texts(json.loads(piped.stdout)) == expected
    their = inspector_json(
        *server(), "--method", "tools/call", "--tool-name", "get-sum", "--tool-args-json", document
    )
    assert texts(their) == expected


@row("list resources, templates, prompts")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx list resources", "templates", "prompts")
    on_page(theirs, "resources/list", "resources/templates/list", "prompts/list")
    for kind, method, key, field in (
        ("resources", "resources/list", "resources", "uri"),
        ("templates", "resources/templates/list", "resourceTemplates", "uriTemplate"),
        ("prompts", "prompts/list", "prompts", "name"),
    ):
        mine = [item[field] for item in mcpx_json("list", kind, "--json", *everything())]
        their = [item[field] for item in inspector_json(*server(), "--method", method)[key]]
        assert mine == their and mine, kind


@row("read a resource")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx read URI")
    on_page(theirs, "--method resources/read --uri URI")
    uri = "demo://resource/static/document/architecture.md"
    mine = mcpx_json("read", uri, "--json", *everything())["contents"]
    their = inspector_json(*server(), "--method", "resources/read", "--uri", uri)["contents"]
    assert mine == their and mine[0]["text"].startswith("# Everything Server")


@row("a blob's raw bytes")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "-o FILE", "-o -")
    on_page(theirs, "--output FILE --output-format raw")
    uri = "demo://resource/dynamic/blob/1"
    mine = subprocess.run(
        [str(MCPX), "read", uri, "-o", "-", *everything()], capture_output=True, timeout=120
    )
    assert mine.returncode == 0, mine.stderr
    with tempfile.TemporaryDirectory() as directory:
        target = Path(directory) / "blob.bin"
        inspector(*server(), "--method", "resources/read", "--uri", uri, "--output", str(target))
        inspector(
            *server(),
            "--method",
            "resources/read",
            "--uri",
            uri,
            "--output",
            str(target),
            "--output-format",
            "raw",
        )
        their = target.read_bytes()
    prefix = b"Resource 1: This is a base64 blob created at "  # then the time it was made
    assert mine.stdout.startswith(prefix) and their.startswith(prefix)


@row("get a prompt")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx prompt NAME key=value")
    on_page(theirs, "--method prompts/get --prompt-name NAME --prompt-args key=value")
    mine = mcpx_json("prompt", "args-prompt", "city=Paris", "--json", *everything())
    their = inspector_json(
        *server(), "--method", "prompts/get", "--prompt-name", "args-prompt", "--prompt-args",
        "city=Paris",
    )  # fmt: skip
    assert mine["messages"] == their["messages"]
    assert "Paris" in json.dumps(mine["messages"])


@row("complete an argument")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx complete ARG VALUE --prompt NAME", "--template URI")
    assert theirs == "—"
    done = mcpx_json(
        "complete", "department", "E", "--prompt", "completable-prompt", "--json", *everything()
    )
    assert "Engineering" in done["completion"]["values"]
    refused("completion/complete")


@row("the initialize result")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx info")
    on_page(theirs, "--method initialize")
    mine = mcpx_json("info", "--json", *everything())
    their = inspector_json(*server(), "--method", "initialize")
    assert mine["serverInfo"] == their["serverInfo"]
    assert mine["serverInfo"]["name"] == "mcp-servers/everything"
    assert mine["instructions"] == their["instructions"]


@row("ping")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx ping")
    assert theirs == "—"
    assert mcpx_json("ping", "--json", *everything())["method"] == "ping"
    refused("ping")


@row("set the log level")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--log-level debug")
    on_page(theirs, "--method logging/setLevel --log-level debug")
    # toggle-simulated-logging sends a message at once, at a level of its choosing.
    done = mcpx("call", "toggle-simulated-logging", "--log-level", "debug", *everything())
    assert re.search(r"(debug|info|notice|warning|error|critical|alert|emergency) ", done.stderr)
    assert inspector_json(*server(), "--method", "logging/setLevel", "--log-level", "debug") == {}


@row("watch a resource")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx watch URI")
    assert theirs == "—"
    done = mcpx("watch", "ticker://count", "--count", "1", "--", sys.executable, str(TICKER))
    assert len(done.stdout.split()) == 2 and "updated ticker://count" in done.stderr
    refused("resources/subscribe", "--uri", "demo://resource/dynamic/text/1")


@row("a task-augmented call")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx call simulate-research-query topic=x", "--task")
    on_page(theirs, "--tool-name simulate-research-query")
    mine = mcpx_json("call", "simulate-research-query", "topic=x", "--json", *everything())
    their = inspector_json(
        *server(),
        "--method",
        "tools/call",
        "--tool-name",
        "simulate-research-query",
        "--tool-arg",
        "topic=x",
    )
    for result in (mine, their):
        assert "Research Report: x" in texts(result)[0]


@row("request `_meta`")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--meta key=value")
    on_page(theirs, "--metadata key=value", "--tool-metadata key=value")
    mine = mcpx_json("call", "echo", "message=m", "--meta", "trace=1", "--json", *everything())
    their = inspector_json(
        *server(),
        "--method",
        "tools/call",
        "--tool-name",
        "echo",
        "--tool-arg",
        "message=m",
        "--metadata",
        "trace=1",
        "--tool-metadata",
        "step=2",
    )
    assert texts(mine) == texts(their) == ["Echo: m"]


def _inspector_tools() -> set[str]:
    return {tool["name"] for tool in inspector_json(*server(), "--method", "tools/list")["tools"]}


@row("answer sampling")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--sampling-reply TEXT")
    on_page(theirs, "not declared")
    done = mcpx_json(
        "call", "trigger-sampling-request", "prompt=hi", "--sampling-reply", "sampled",
        "--json", *everything(),
    )  # fmt: skip
    assert "sampled" in json.dumps(done)
    assert "trigger-sampling-request" not in _inspector_tools()


@row("answer elicitation")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--elicit-answer JSON")
    on_page(theirs, "not declared")
    done = mcpx_json(
        "call", "trigger-elicitation-request", "--elicit-answer", '{"name": "Ada"}', "--json",
        *everything(),
    )  # fmt: skip
    assert "Ada" in json.dumps(done)
    assert "trigger-elicitation-request" not in _inspector_tools()


@row("roots")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--root PATH")
    on_page(theirs, "declared, empty")
    with tempfile.TemporaryDirectory() as directory:
        mine = mcpx_json("call", "get-roots-list", "--root", directory, "--json", *everything())
        assert Path(directory).as_uri() in json.dumps(mine)
    their = inspector_json(*server(), "--method", "tools/call", "--tool-name", "get-roots-list")
    assert "no roots are currently configured" in texts(their)[0]


@row("JSON output")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--json")
    on_page(theirs, "--format json")
    assert isinstance(mcpx_json("list", "prompts", "--json", *everything()), list)
    assert "prompts" in inspector_json(*server(), "--method", "prompts/list")
    plain = inspector(*server(), "--method", "prompts/list").stdout
    assert "prompts" in json.loads(plain)  # its text output is JSON too


@row("load one tool")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--load --requests 50 --concurrency 5")
    on_page(theirs, "--load --load-requests 50 --load-concurrency 5")
    mine = mcpx_json(
        "call", "get-sum", "a=1", "b=2", "--load", "--requests", "50", "--concurrency", "5",
        "--json", *everything(),
    )  # fmt: skip
    assert (mine["calls"], mine["ok"], mine["failed"], mine["concurrency"]) == (50, 50, 0, 5)
    latency = mine["latencyMs"]
    assert 0 < latency["min"] <= latency["p50"] <= latency["p90"] <= latency["p99"]
    assert latency["p99"] <= latency["max"] and mine["errors"] == {}
    their = json.loads(
        inspector(
            *server(), "--method", "tools/call", "--tool-name", "get-sum", "--tool-arg", "a=1",
            "b=2", "--load", "--load-requests", "50", "--load-concurrency", "5",
        ).stdout  # fmt: skip
    )
    assert (their["requests"], their["ok"], their["errors"]) == (50, 50, 0)
    shown = mcpx(
        "call", "get-sum", "a=1", "b=2", "--load", "--requests", "20", *everything()
    ).stdout
    assert "p50" in shown and "p99" in shown and max(map(len, shown.splitlines())) <= 100


@row("check tool schemas for portability")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx list tools --strict", "exit 1")
    on_page(theirs, "--method tools/list --strict", "exit 6")
    command = [sys.executable, str(UNPORTABLE)]
    mine = json.loads(mcpx("list", "tools", "--strict", "--json", "--", *command, expect=1).stdout)
    found = {(f["tool"], f["rule"], f["severity"]) for f in mine["findings"]}
    done = inspector("--format", "json", *command, "--method", "tools/list", "--strict", expect=6)
    theirs_found = {
        (tool["toolName"], finding["rule"], finding["severity"])
        for tool in json.loads(done.stdout)["schemaFindings"]
        for finding in tool["findings"]
    }
    assert theirs_found == {
        ("boolean_schema", "boolean-schema", "error"),
        ("type_union", "type-union", "warning"),
        ("remote_ref", "remote-ref", "warning"),
        ("untyped", "untyped-schema", "warning"),
    }
    assert found - theirs_found == {
        ("get weather", "tool-name", "error"),
        ("either", "parameters-object", "error"),
        ("dashed", "parameter-name", "warning"),
    }
    assert theirs_found <= found and all(f["source"] for f in mine["findings"])
    clean = mcpx("list", "tools", "--strict", *everything())
    assert "schema portability: 0 errors" in clean.stderr


@row("shell completion")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx completion bash|zsh|fish")
    on_page(theirs, "--completion bash|zsh|fish")
    for shell in ("bash", "zsh", "fish"):
        assert "_MCPX_COMPLETE" in mcpx("completion", shell).stdout
        assert "mcp-inspector" in inspector("--completion", shell).stdout


@row("version")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "mcpx --version")
    on_page(theirs, "--version")
    assert mcpx("--version").stdout.startswith("mcpx ")
    assert "2.12.0" in inspector("--version").stdout


@row("its environment, directory")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "-e KEY=VALUE", "--cwd DIR")
    on_page(theirs, "-e KEY=VALUE", "--cwd DIR")
    mine = mcpx_json("call", "get-env", "-e", "ROW_VALUE=42", "--json", *everything())
    their = inspector_json(
        "-e", "ROW_VALUE=42", *server(), "--method", "tools/call", "--tool-name", "get-env"
    )
    for result in (mine, their):
        assert json.loads(texts(result)[0])["ROW_VALUE"] == "42"
    # The server's script named relative to --cwd: found only if the directory is applied.
    directory, relative = str(SERVER_EVERYTHING.parent), SERVER_EVERYTHING.name
    node = str(NODE)
    assert mcpx_json("ping", "--json", "--cwd", directory, "--", node, relative, "stdio")
    inspector("--cwd", directory, node, relative, "stdio", "--method", "tools/list")


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with everything_http() as running:
        yield running.url


URL: list[str] = []  # set by the test for the URL rows


@row("a URL")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--url URL", "--transport http|sse")
    on_page(theirs, "URL --transport http|sse", "--server-url URL")
    (url,) = URL
    mine = mcpx_json("list", "prompts", "--json", "--url", url, "--transport", "http")
    their = inspector_json(url, "--transport", "http", "--method", "prompts/list")
    also = inspector_json("--server-url", url, "--transport", "http", "--method", "prompts/list")
    assert (
        [p["name"] for p in mine]
        == [p["name"] for p in their["prompts"]]
        == [p["name"] for p in also["prompts"]]
    )


@row("headers")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--header 'Name: value'")
    on_page(theirs, "--header 'Name: value'")
    (url,) = URL
    mcpx("ping", "--url", url, "--header", "X-Row: 1")
    inspector(url, "--transport", "http", "--header", "X-Row: 1", "--method", "prompts/list")


@row("an entry of a configuration")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--config mcp.json --server NAME")
    on_page(theirs, "--config mcp.json --server NAME")
    node, script, mode = server()
    with tempfile.TemporaryDirectory() as directory:
        config = Path(directory) / "mcp.json"
        entry = {"command": node, "args": [script, mode]}
        config.write_text(json.dumps({"mcpServers": {"everything": entry}}))
        options = ["--config", str(config), "--server", "everything"]
        mine = mcpx_json("info", "--json", *options)
        their = inspector_json(*options, "--method", "initialize")
    assert mine["serverInfo"] == their["serverInfo"]


@row("the revision")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--protocol-version 2025-06-18")
    on_page(theirs, "--protocol-era legacy|auto|modern")
    mine = mcpx_json("info", "--json", "--protocol-version", "2025-06-18", *everything())
    assert mine["protocolVersion"] == "2025-06-18"
    their = inspector_json(*server(), "--protocol-era", "legacy", "--method", "initialize")
    assert their["protocolVersion"] == "2025-11-25"  # an era, not a revision


@row("connect timeout")
def _(ours: str, theirs: str) -> None:
    on_page(ours, "--connect-timeout S", "--timeout S")
    on_page(theirs, "--connect-timeout MS")
    mcpx("ping", "--connect-timeout", "60", "--timeout", "60", *everything())
    inspector(*server(), "--connect-timeout", "60000", "--method", "prompts/list")


# ------------------------------------------------------------------ the test


def test_every_row_of_the_page_has_a_check_and_every_check_a_row() -> None:
    assert set(page_rows()) == set(CHECKS)


@pytest.mark.parametrize("task", list(page_rows()))
def test_the_row_holds_with_both_tools(task: str, request: pytest.FixtureRequest) -> None:
    ours, theirs = page_rows()[task]
    if task in ("a URL", "headers"):
        URL[:] = [request.getfixturevalue("everything_url")]
    CHECKS[task](ours, theirs)


def test_raw_bytes_are_the_blob_decoded() -> None:
    """-o - writes the blob's bytes, the same as base64-decoding the JSON's blob."""
    uri = "demo://resource/dynamic/blob/1"
    listed = mcpx_json("read", uri, "--json", *everything())
    decoded = base64.b64decode(listed["contents"][0]["blob"])
    assert decoded.startswith(b"Resource 1: This is a base64 blob")


def test_load_counts_the_failed_calls_by_kind() -> None:
    """A JSON-RPC error and a call past --timeout are each
    counted under their kind, and a load run with a failure exits 1."""
    example = [
        "--",
        sys.executable,
        str(Path(__file__).parents[1] / "support" / "lowlevel_server.py"),
    ]
    load = ["--load", "--requests", "4", "--concurrency", "2", "--json"]
    failed = json.loads(mcpx("call", "fail", *load, *example, expect=1).stdout)
    assert (failed["calls"], failed["failed"]) == (4, 4)
    assert failed["errors"] == {"-32603 Internal error": 4}
    slow = json.loads(
        mcpx("call", "sleep", "seconds=30", *load, "--timeout", "0.5", *example, expect=1).stdout
    )
    assert slow["errors"] == {"timeout": 4} and slow["calls"] == 4
    shown = mcpx("call", "fail", "--load", "--requests", "3", *example, expect=1).stdout
    assert "errors by kind:" in shown and "3  -32603 Internal error" in shown
