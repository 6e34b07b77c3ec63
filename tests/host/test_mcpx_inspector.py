"""mcpx at the level of the MCP Inspector's command line: server-everything's
16 tools (sampling, elicitation and roots answered by flags, the tool that
requires a task included) listed and called; the session's initialize result,
ping, --version, request _meta, raw blob output, the command's environment and
directory, the revision asked for, the shell completion script; and, in a real
terminal, an elicitation answered in a form, a sampling request answered (or
declined) by the user, and a task-augmented call showing its status."""

from __future__ import annotations

import base64
import gzip
import json
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from support.peers import REPO, SDK_SERVER
from support.tmux import terminal
from test_host_cli import EXAMPLE, MCPX, everything_stdio, mcpx, mcpx_json

ANSWERS = ["--sampling-reply", "a reply from the test", "--elicit-answer", '{"name": "Ada"}']
# Every tool of server-everything with arguments that make it succeed.
CALLS = {
    "echo": ["message=hi"],
    "get-annotated-message": ["messageType=success"],
    "get-env": [],
    "get-resource-links": ["count=2"],
    "get-resource-reference": ["resourceType=Blob", "resourceId=2"],
    "get-structured-content": ["location=Chicago"],
    "get-sum": ["a=1", "b=2"],
    "get-tiny-image": [],
    "gzip-file-as-resource": ["data=data:text/plain;base64,aGVsbG8=", "outputType=resource"],
    "toggle-simulated-logging": [],
    "toggle-subscriber-updates": [],
    "trigger-long-running-operation": ["duration=1", "steps=2"],
    "get-roots-list": [],
    "trigger-elicitation-request": [],
    "trigger-sampling-request": ["prompt=hello"],
    "simulate-research-query": ["topic=tides"],
}


@pytest.mark.node
def test_all_16_tools_of_server_everything_are_listed_and_callable(tmp_path: Path) -> None:
    root = ["--root", str(tmp_path)]
    tools = mcpx_json("list", "tools", "--json", *ANSWERS, *root, *everything_stdio())
    assert sorted(tool["name"] for tool in tools) == sorted(CALLS)
    assert len(tools) == 16

    def call(name: str) -> tuple[str, dict[str, object]]:
        args = ["call", name, *CALLS[name], "--json", *ANSWERS, *root, *everything_stdio()]
        return name, mcpx_json(*args)

    with ThreadPoolExecutor(4) as pool:
        results = dict(pool.map(call, CALLS))
    assert all(result.get("isError") is not True for result in results.values())
    text = {name: json.dumps(result) for name, result in results.items()}
    assert "a reply from the test" in text["trigger-sampling-request"]
    assert "Ada" in text["trigger-elicitation-request"]
    assert tmp_path.as_uri() in text["get-roots-list"]
    assert "Research Report: tides" in text["simulate-research-query"]  # run as a task


@pytest.mark.node
def test_the_initialize_result_ping_and_version() -> None:
    info = mcpx_json("info", "--json", *everything_stdio())
    assert info["serverInfo"]["name"] == "mcp-servers/everything"
    assert info["protocolVersion"] == "2025-11-25"
    assert "tools" in info["capabilities"] and "Everything Server" in info["instructions"]
    older = mcpx_json("info", "--json", "--protocol-version", "2025-03-26", *everything_stdio())
    assert older["protocolVersion"] == "2025-03-26"
    pinged = mcpx_json("ping", "--json", *EXAMPLE)
    assert pinged["method"] in ("ping", "server/discover") and pinged["milliseconds"] >= 0
    shown = mcpx("info", *EXAMPLE).stdout
    assert shown.startswith("mcp-codegen-example 0.1.0\n")
    assert mcpx("--version").stdout == "mcpx 0.1.0\n"


@pytest.mark.node
@pytest.mark.peers
def test_request_meta_environment_and_directory(tmp_path: Path) -> None:
    echoed = mcpx_json(
        "call",
        "echo",
        "message=x",
        "--meta",
        "trace=abc",
        "--meta",
        "n=2",
        "--json",
        *everything_stdio(),
    )
    assert echoed["content"][0]["text"] == "Echo: x"
    env = mcpx_json("call", "get-env", "-e", "MCPX_TEST_VALUE=42", "--json", *everything_stdio())
    assert json.loads(env["content"][0]["text"])["MCPX_TEST_VALUE"] == "42"
    script = "import os, sys; sys.argv = ['s']; print(os.getcwd(), file=sys.stderr)\n"
    script += f"exec(open({str(SDK_SERVER)!r}).read())"
    done = mcpx(
        "list", "tools", "--cwd", str(tmp_path), "--show-stderr", "--", sys.executable, "-c", script
    )
    assert str(tmp_path) in done.stderr


@pytest.mark.node
def test_raw_blob_output(tmp_path: Path) -> None:
    """The blob's bytes, not its base64 nor a summary, to a file or stdout."""
    target = tmp_path / "blob.bin"
    mcpx(
        "read",
        "demo://resource/static/document/architecture.md",
        "-o",
        str(target),
        *everything_stdio(),
    )
    assert target.read_bytes().startswith(b"# Everything Server")
    listed = mcpx_json("read", "memo://logo", "--json", *EXAMPLE)
    raw = subprocess.run(
        [str(MCPX), "read", "memo://logo", "-o", "-", *EXAMPLE], capture_output=True, timeout=120
    )
    assert raw.returncode == 0
    assert raw.stdout == base64.b64decode(listed["contents"][0]["blob"]) == b"\x89PNG\r\n\x1a\n"
    assert gzip.decompress(gzip.compress(b"x")) == b"x"


def test_shell_completion_script_and_answers() -> None:
    script = mcpx("completion", "bash").stdout
    assert "_MCPX_COMPLETE=bash_complete" in script
    done = subprocess.run(
        [str(MCPX)],
        env={
            "COMP_WORDS": "mcpx ca",
            "COMP_CWORD": "1",
            "_MCPX_COMPLETE": "bash_complete",
            "PATH": "/usr/bin:/bin",
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.split() == ["plain,call"]


def test_bad_flags_are_one_line() -> None:
    for args, message in (
        (
            ["list", "tools", "-e", "X=1", "--url", "http://h/mcp"],
            "-e/--env is for a command after --",
        ),
        (["list", "tools", "--oauth", *EXAMPLE], "--oauth is for --url"),
        (["list", "tools", "-e", "X", *EXAMPLE], "-e 'X': expected key=value"),
        (
            ["call", "echo", "--elicit-answer", "[1]", *EXAMPLE],
            "--elicit-answer is not a JSON object",
        ),
    ):
        done = mcpx(*args, expect=2)
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


# A server log line on stderr (dimmed), which may come at any moment, even under a question.
LOG_LINE = re.compile(r"^\s*(debug|info|notice|warning|error)\s+server/", re.MULTILINE)


def asking(shown: str) -> bool:
    """Whether the terminal waits for an answer: its last line, log lines aside, ends in ':'."""
    lines = [line for line in shown.rstrip().splitlines() if not LOG_LINE.match(line)]
    return bool(lines) and lines[-1].rstrip().endswith(":")


@pytest.mark.node
def test_an_elicitation_answered_in_a_form_on_the_terminal() -> None:
    """A form on the terminal from the requested schema: each field asked by its
    title and description, enumerations by number, defaults kept on Enter."""
    # Each field's description (unique on the screen) and what the user types.
    fields = [
        ("Your full, legal name", "Grace Hopper"),
        ("Agree to the terms", "y"),
        ("Favorite first line", ""),
        ("Your email address", ""),
        ("Portfolio / personal website", ""),
        ("Your date of birth", ""),
        ("Your favorite integer", "7"),
        ("Favorite number", ""),
        ("Choose your favorite friend", "3"),
        ("Choose your favorite instruments", "2,3"),
        ("Choose your favorite hero", ""),
        ("Choose your favorite types of fish", ""),
        ("Choose your favorite type of pet", ""),
    ]
    # What Enter keeps, shown with the field: the schema's default (a choice by its title).
    defaults = {
        "Favorite first line": "(Enter: It was a dark and stormy night.)",
        "Your favorite integer": "(Enter: 42)",
        "Favorite number": "(Enter: 3.14)",
        "Choose your favorite friend": "(Enter: Monica)",
        "Choose your favorite instruments": "(Enter: Guitar)",
        "Choose your favorite hero": "(Enter: Superman)",
        "Choose your favorite types of fish": "(Enter: Tuna)",
        "Choose your favorite type of pet": "(Enter: Cats)",
    }
    command = [str(MCPX), "call", "trigger-elicitation-request", *everything_stdio()]
    with terminal(command, width=250, height=50) as tty:
        for description, typed in fields:
            shown = tty.wait_for(
                lambda shown, d=description: d in shown and asking(shown),
                timeout=120,
                what=f"the field {description!r}",
            )
            question = shown.rstrip().splitlines()[-1]
            if description in defaults:
                assert defaults[description] in shown.split(description, 1)[1], question
            tty.send(typed)
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=120, what="the end of the call")
    assert "EXIT=0" in done
    assert "Grace Hopper" in done and "Joey" in done and "Piano" in done


@pytest.mark.node
def test_a_task_augmented_call_shows_its_status_in_a_terminal() -> None:
    command = [str(MCPX), "call", "simulate-research-query", "topic=tides", *everything_stdio()]
    with terminal(command) as tty:
        tty.wait_for(
            lambda shown: "task " in shown and "working - Analyzing content" in shown,
            timeout=60,
            what="the task's status",
        )
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=60, what="the end of the call")
    assert "EXIT=0" in done
    assert "simulated research report" in done  # the end of the report, on stdout


def test_watch_prints_the_resource_again_at_each_update() -> None:
    ticker = ["--", sys.executable, str(Path(__file__).parents[1] / "support" / "ticker_server.py")]
    done = mcpx("watch", "ticker://count", "--count", "2", *ticker)
    counts = [int(line) for line in done.stdout.split()]
    assert len(counts) == 3 and counts == sorted(counts) and counts[0] < counts[2]
    assert done.stderr.count("updated ticker://count") == 2


@pytest.mark.parametrize(
    "server", [pytest.param("server-everything", marks=pytest.mark.node), "ours at 2026-07-28"]
)
def test_a_sampling_request_answered_on_the_terminal(server: str) -> None:
    """The server's sampling request is shown (its messages) and the user's reply
    typed on the terminal is what the server gets: server-everything asks in the
    middle of the call (2025-11-25), our example server with an input-required
    result (2026-07-28); an empty reply declines."""
    if server == "server-everything":
        tool, target = ["trigger-sampling-request", "prompt=Name a colour"], everything_stdio()
    else:
        tool = ["test_sampling", "prompt=Name a colour"]
        target = ["--", str(MCPX), "run", str(REPO / "examples" / "everything_server.py")]
    with terminal([str(MCPX), "call", *tool, *target]) as tty:
        shown = tty.wait_for(
            lambda shown: "Reply (empty to decline):" in shown, timeout=60, what="the question"
        )
        assert "asks for a completion (sampling):" in shown
        assert re.search(r"user: .*Name a colour", shown), shown
        tty.send("Vermilion, typed by the user")
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=60, what="the end of the call")
    assert "EXIT=0" in done and "Vermilion, typed by the user" in done.split("decline):")[-1]

    with terminal([str(MCPX), "call", *tool, *target]) as tty:
        tty.wait_for(lambda shown: "Reply (empty to decline):" in shown, 60, "the question")
        tty.send("")
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=60, what="the end of the call")
    assert "Vermilion" not in done and "declined" in done, done


@pytest.mark.node
def test_watch_says_that_no_update_has_come_and_for_how_long() -> None:
    """server-everything sends resource updates only once its tool
    toggle-subscriber-updates turns them on: after the first print, watch says
    on stderr that it is subscribed and waiting, then how long no update has
    come, rather than nothing."""
    command = [
        str(MCPX),
        "watch",
        "demo://resource/dynamic/text/1",
        "--idle-notice",
        "1",
        *everything_stdio(),
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        seen: list[str] = []
        for line in process.stderr:
            seen.append(line)
            if re.search(r"no update of \S+ for [2-9] s", line):
                break
    finally:
        process.terminate()
        process.wait(timeout=60)
    shown = "".join(seen)
    assert "subscribed to demo://resource/dynamic/text/1; waiting for updates" in shown, shown
    assert "no update of demo://resource/dynamic/text/1 for 1 s" in shown, shown
    assert "only once something turns them on" in shown


def test_log_lines_wait_until_the_question_is_answered(tmp_path: Path) -> None:
    """A server's log message that comes while the user answers a question is not
    printed into it (where the typed answer would follow it): it is shown once
    the question is answered."""
    go, done = tmp_path / "go", tmp_path / "done"
    server = Path(__file__).parents[1] / "support" / "chatty_question_server.py"
    command = [
        "env",
        f"CHATTER_GO={go}",
        f"CHATTER_DONE={done}",
        str(MCPX),
        "call",
        "ask_while_logging",
        "--log-level",
        "info",
        "--protocol-version",
        "2025-11-25",
        "--",
        sys.executable,
        str(server),
    ]
    with terminal(command, width=200) as tty:
        tty.wait_for(lambda shown: shown.rstrip().endswith(":"), 120, "the question")
        go.write_text("go")
        deadline = time.monotonic() + 120
        while not done.exists():
            assert time.monotonic() < deadline, "the server never logged"
            time.sleep(0.1)
        # The messages were sent; give the terminal the chance to show them wrongly.
        mcpx("ping", *EXAMPLE)
        shown = tty.screen()
        assert "tick" not in shown and shown.rstrip().endswith(":"), shown
        tty.send("Ada")
        finished = tty.wait_for(lambda shown: "EXIT=" in shown, 120, "the end of the call")
    assert "EXIT=0" in finished and "hello Ada" in finished
    after = finished.split("Ada", 1)[1]
    assert all(f"tick {n} while the user answers" in after for n in range(3)), finished
