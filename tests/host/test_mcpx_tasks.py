"""Task-augmented calls from mcpx at 2026-07-28 (the io.modelcontextprotocol/tasks
extension) against examples/everything_server.py over stdio and Streamable HTTP:
the task created, its status shown (its message and input requests included),
its result printed; by default only when the server says the tool needs the
extension, always with --task, never with --no-task. And, in a real terminal, a
2025-11-25 task's status and its progress, reported after the CreateTaskResult,
shown until the task ends."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.peers import REPO, SUPPORT
from support.tmux import terminal
from test_host_cli import MCPX, mcpx

EVERYTHING = REPO / "examples" / "everything_server.py"
STATUS = re.compile(r"^task (\S+): (\w+)(?: - (.*))?$", re.MULTILINE)


@pytest.fixture(scope="module")
def everything_http() -> Iterator[list[str]]:
    server = subprocess.Popen(
        [str(MCPX), "run", str(EVERYTHING), "--http", "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        found = re.search(r"serving MCP at (http://\S+)", server.stderr.readline())
        assert found, "mcpx run --http did not say where it listens"
        yield ["--url", found[1]]
    finally:
        server.terminate()
        server.wait(30)


def stdio() -> list[str]:
    return ["--", str(MCPX), "run", str(EVERYTHING)]


def statuses(stderr: str) -> list[tuple[str, str, str | None]]:
    return [(m[1], m[2], m[3]) for m in STATUS.finditer(stderr)]


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_call_becomes_a_task_shows_its_status_and_prints_its_result(
    transport: str, request: pytest.FixtureRequest
) -> None:
    """A server "**MAY** return `CreateTaskResult` in lieu of a standard result" to a
    request whose client capabilities name the extension; "Clients **SHOULD**
    continue polling until the task reaches a terminal status" (ext-tasks
    2026-07-28)."""
    target = stdio() if transport == "stdio" else request.getfixturevalue("everything_http")
    done = mcpx("call", "slow_compute", "seconds=2", "label=pi", "--task", "--json", *target)
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "computed pi in 2s"}]
    shown = statuses(done.stderr)
    assert len({task_id for task_id, _, _ in shown}) == 1, done.stderr  # one task
    assert shown[0][1] == "working" and shown[-1][1] == "completed", done.stderr
    assert ("working", "computing pi for 2s") in [(s, m) for _, s, m in shown], done.stderr

    # Without --task the tool answers at once: the extension is not declared.
    plain = mcpx("call", "slow_compute", "seconds=0", "label=e", "--json", *target)
    assert json.loads(plain.stdout)["content"][0]["text"] == "computed e in 0s"
    assert statuses(plain.stderr) == [], plain.stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tool_that_requires_a_task_runs_as_one_by_default(
    transport: str, request: pytest.FixtureRequest
) -> None:
    """ "If a server is unable to service a request to a client that does not declare
    this extension capability without returning `CreateTaskResult`, the server
    **MUST** return an error with the code `-32021`": mcpx then calls again, declaring
    it (a tool that requires a task is refused before it runs). test_tool_with_task asks for a name
    first (an input-required round), then greets from a task."""
    target = stdio() if transport == "stdio" else request.getfixturevalue("everything_http")
    answer = ["--elicit-answer", '{"name": "Ada"}']
    done = mcpx("call", "test_tool_with_task", *answer, "--json", *target)
    assert json.loads(done.stdout)["content"] == [{"type": "text", "text": "Hello, Ada!"}]
    assert statuses(done.stderr)[-1][1] == "completed", done.stderr

    refused = mcpx("call", "test_tool_with_task", "--no-task", *answer, *target, expect=1)
    assert refused.stderr.count("\n") == 1 and "(-32021)" in refused.stderr, refused.stderr


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_a_tasks_input_requests_are_answered_and_its_failure_is_one_line(
    transport: str, request: pytest.FixtureRequest
) -> None:
    """ "When a client observes a `tasks/get` response ... with `status:
    "input_required"`, the client **SHOULD** fulfill the outstanding requests in
    `inputRequests` by sending one or more `tasks/update` requests"; a task
    `failed` carries "the JSON-RPC error" (ext-tasks 2026-07-28)."""
    target = stdio() if transport == "stdio" else request.getfixturevalue("everything_http")
    confirm = ["--elicit-answer", '{"confirm": true}']
    done = mcpx("call", "confirm_delete", "filename=a.txt", "--task", *confirm, *target)
    assert done.stdout.strip() == "deleted a.txt"
    seen = [status for _, status, _ in statuses(done.stderr)]
    assert seen[0] == "working" and "input_required" in seen and seen[-1] == "completed", seen

    failed = mcpx("call", "protocol_error_job", "--task", *target, expect=1)
    assert failed.stderr.endswith(
        "mcpx: error: the server answered: the job crashed (-32603)\n"
    ), failed.stderr
    assert statuses(failed.stderr)[-1][1:] == ("failed", "the job crashed")


def test_a_tasks_progress_and_status_are_shown_in_a_terminal_until_it_ends(
    tmp_path: Path,
) -> None:
    """2025-11-25 tasks: "Task-augmented requests support progress notifications as
    defined in the progress specification. The `progressToken` provided in the
    initial request remains valid throughout the task lifetime." Each step of the
    task is reported after its CreateTaskResult, once the test lets it go on."""
    gate = tmp_path / "gate"
    server = ["--", sys.executable, str(SUPPORT / "task_progress_server.py")]
    command = [str(MCPX), "call", "stepped", f"gate={gate}", "--protocol-version", "2025-11-25"]
    with terminal([*command, *server]) as tty:
        for step in (1, 2, 3):
            shown = tty.wait_for(
                lambda shown, k=step: f"step {k}" in shown and f"{k}/3" in shown,
                timeout=60,
                what=f"step {step} of the task's progress",
            )
            assert re.search(r"task \S+: working \| step", shown), shown  # status and progress
            Path(f"{gate}.{step}").touch()
        done = tty.wait_for(lambda shown: "EXIT=" in shown, timeout=60, what="the end of the call")
    assert "EXIT=0" in done and "stepped through" in done
