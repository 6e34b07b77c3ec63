"""mcpx, the command line: by its JSON output against our example server,
server-everything over stdio and Streamable HTTP, the official SDK's server and
a configuration entry; one-line errors for bad input; and, in a real terminal
(tmux), the progress bar of a server-everything tool that reports progress."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.everything_http import everything_http
from support.peers import LOWLEVEL_SERVER, NODE, SDK_SERVER, SERVER_EVERYTHING, require
from support.tmux import terminal

MCPX = Path(sys.executable).with_name("mcpx")
EXAMPLE = ["--", sys.executable, str(LOWLEVEL_SERVER)]


def everything_stdio() -> list[str]:
    return [
        "--",
        str(require(NODE, "Node 22")),
        str(require(SERVER_EVERYTHING, "server-everything")),
        "stdio",
    ]


def mcpx(*args: str, expect: int = 0) -> subprocess.CompletedProcess[str]:
    assert MCPX.exists(), f"the mcpx console script is not installed next to {sys.executable}"
    done = subprocess.run([str(MCPX), *args], capture_output=True, text=True, timeout=120)
    assert (
        done.returncode == expect
    ), f"mcpx {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def mcpx_json(*args: str) -> Any:
    return json.loads(mcpx(*args).stdout)


@pytest.fixture(scope="module")
def everything_url() -> Iterator[str]:
    with everything_http() as server:
        yield server.url


def test_lists_and_calls_over_stdio_by_json() -> None:
    tools = mcpx_json("list", "tools", "--json", *EXAMPLE)
    assert [tool["name"] for tool in tools][:3] == ["echo", "add", "count"]
    assert tools[1]["inputSchema"]["type"] == "object"
    added = mcpx_json("call", "add", "a=2", "b=3.5", "--json", *EXAMPLE)
    assert added["structuredContent"] == {"sum": 5.5}
    echoed = mcpx_json(
        "call", "echo", "text=42", "--json", *EXAMPLE
    )  # a string property stays a string
    assert echoed["content"] == [{"type": "text", "text": "42"}]
    as_object = mcpx_json("call", "add", '{"a": 1, "b": 1}', "--json", *EXAMPLE)
    assert as_object["structuredContent"] == {"sum": 2.0}
    templates = mcpx_json("list", "templates", "--json", *EXAMPLE)
    assert templates[0]["uriTemplate"] == "greeting://{name}"
    read = mcpx_json("read", "greeting://ada", "--json", *EXAMPLE)
    assert read["contents"][0]["text"] == "Hello, ada!"
    prompt = mcpx_json("prompt", "review", "code=x = 1", "--json", *EXAMPLE)
    assert "x = 1" in prompt["messages"][0]["content"]["text"]
    completed = mcpx_json("complete", "language", "py", "--prompt", "review", "--json", *EXAMPLE)
    assert completed["completion"]["values"] == ["python"]
    names = mcpx_json(
        "complete", "name", "b", "--template", "greeting://{name}", "--json", *EXAMPLE
    )
    assert names["completion"]["values"] == ["bob"]


@pytest.mark.node
def test_server_everything_over_stdio_and_streamable_http(everything_url: str) -> None:
    for target in (everything_stdio(), ["--url", everything_url]):
        summed = mcpx_json("call", "get-sum", "a=2", "b=3", "--json", *target)
        assert summed["content"][0]["text"] == "The sum of 2 and 3 is 5."
        prompts = mcpx_json("list", "prompts", "--json", *target)
        assert "completable-prompt" in [prompt["name"] for prompt in prompts]
    completed = mcpx_json(
        "complete",
        "name",
        "",
        "--prompt",
        "completable-prompt",
        "--context",
        "department=Sales",
        "--json",
        *everything_stdio(),
    )
    assert completed["completion"]["values"]
    resources = mcpx_json("list", "resources", "--json", "--url", everything_url)
    first = resources[0]["uri"]
    assert (
        mcpx_json("read", first, "--json", "--url", everything_url)["contents"][0]["uri"] == first
    )


@pytest.mark.peers
def test_a_configuration_entry_and_the_sdk_server(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "sdk": {
                        "command": sys.executable,
                        "args": [str(SDK_SERVER)],
                        "env": {"PYTHONWARNINGS": "ignore"},
                    },
                    "example": {"command": sys.executable, "args": [str(LOWLEVEL_SERVER)]},
                }
            }
        )
    )
    result = mcpx_json(
        "call", "add", "a=20", "b=22", "--json", "--config", str(config), "--server", "sdk"
    )
    assert result["structuredContent"] == {"result": 42}
    # log messages go to stderr, apart from the JSON on stdout
    done = mcpx(
        "call",
        "count",
        "steps=2",
        "--log-level",
        "info",
        "--json",
        "--config",
        str(config),
        "--server",
        "sdk",
    )
    assert json.loads(done.stdout)["content"][0]["text"] == "counted 2 steps"
    assert "finished step 1" in done.stderr and "finished step 2" in done.stderr


@pytest.mark.parametrize(
    ("args", "status", "message"),
    [
        (["list", "tools"], 2, "name one server"),
        (["list", "things", *EXAMPLE], 2, "Invalid value for 'KIND'"),
        (["call", "add", "a", *EXAMPLE], 2, "'a': expected key=value"),
        (["call", "add", "{nope", *EXAMPLE], 2, "the arguments are not a JSON object"),
        (["call", "nope", *EXAMPLE], 1, "the server has no tool 'nope' (tools: echo, add"),
        (["call", "fail", *EXAMPLE], 1, "the server answered: Internal error (-32603)"),
        (["read", "x://y", "--url", "ftp://h"], 2, "--url: 'ftp://h' is not an http"),
        (
            ["list", "tools", "--", "/nonexistent/server"],
            1,
            "cannot connect to '/nonexistent/server'",
        ),
        (["list", "tools", "--config", "/nonexistent.json"], 2, "cannot read /nonexistent.json"),
        (["complete", "x", *EXAMPLE], 2, "complete needs --prompt NAME or --template"),
    ],
)
def test_bad_input_is_one_line_and_a_non_zero_exit(
    args: list[str], status: int, message: str
) -> None:
    done = mcpx(*args, expect=status)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


@pytest.mark.node
def test_a_tool_error_or_a_lost_server_exits_1() -> None:
    done = mcpx("call", "get-sum", "a=x", "b=1", "--json", *everything_stdio(), expect=1)
    assert json.loads(done.stdout)["isError"] is True
    done = mcpx("call", "crash", *EXAMPLE, expect=1)
    assert done.stderr == "mcpx: error: Connection closed: the server process exited with code 3\n"


def test_a_missing_extra_is_named_in_one_line() -> None:
    script = "import sys; sys.modules['rich'] = None\nfrom mcpbind.cli import main\nmain(['list', 'tools'])"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == "mcpx: needs the 'cli' extra (rich is not installed): pip install 'mcpbind[cli]'\n"
    )


@pytest.mark.node
def test_the_progress_bar_in_a_real_terminal() -> None:
    command = [
        str(MCPX),
        "call",
        "trigger-long-running-operation",
        "duration=4",
        "steps=8",
        *everything_stdio(),
    ]
    with terminal(command) as tty:
        # rich draws the bar with heavy horizontal lines, and the count of steps done
        bar = tty.wait_for(
            lambda shown: "━" in shown and "/8" in shown, timeout=60, what="a progress bar"
        )
        line = next(line for line in bar.splitlines() if "━" in line)
        assert "%" in line and "trigger-long-running-operation" in line
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=60, what="the end of the call")
    assert "EXIT=0" in done
    assert "Long running operation completed" in done
    assert "━" not in done  # the bar goes away once the call ends


def test_output_for_people() -> None:
    listed = mcpx("list", "tools", *EXAMPLE).stdout
    assert "echo" in listed and "Return the text it is given." in listed
    assert mcpx("call", "echo", "text=hello there", *EXAMPLE).stdout == "hello there\n"
    assert mcpx("read", "greeting://ada", *EXAMPLE).stdout == "Hello, ada!\n"
    assert mcpx("complete", "language", "py", "--prompt", "review", *EXAMPLE).stdout == "python\n"
