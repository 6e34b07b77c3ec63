"""What mcpx writes: results on stdout (as JSON, or for people), and on
stderr, apart from them, progress bars and the server's log messages (dimmed)."""

from __future__ import annotations

import base64
import contextlib
import logging
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import msgspec
from msgspec import UNSET
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)
from rich.progress import Task as BarTask
from rich.table import Table
from rich.text import Text

from .. import codec
from ._load import LoadReport
from ._portability import SOURCES, Finding


class _Count(ProgressColumn):
    """``2/5``, or ``2`` while the total is unknown: a task's bar starts before
    its first progress (with its status), and the total may come later."""

    def render(self, task: BarTask) -> Text:
        done = f"{task.completed:g}"
        return Text(f"{done}/{task.total:g}" if task.total else done)


class Failed(Exception):
    """A failure that ends mcpx with one line and exit status 1."""


class Terminal:
    """stdout for results, stderr for everything else."""

    def __init__(self, json_output: bool) -> None:
        self.json = json_output
        self.out = Console(highlight=False, soft_wrap=True)
        if not self.out.is_terminal:
            # Piped: one row a line, however long, for grep and cut (rich would assume 80 columns).
            self.out = Console(highlight=False, soft_wrap=True, width=PIPED_WIDTH)
        self.err = Console(stderr=True, highlight=False, soft_wrap=True)
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self.label = "working"
        """What the progress bar says when a notification has no message (the tool's name)."""
        self._status: str | None = None  # a task's last status line, shown beside its progress
        self._message: str | None = None  # the last progress message

    # ------------------------------------------------------------ stderr

    def error(self, message: str) -> None:
        self.err.print(Text(f"mcpx: error: {message}", style="bold red"))

    def notice(self, message: str) -> None:
        self.err.print(Text(f"mcpx: {message}"))

    def warning(self, message: str) -> None:
        self.err.print(Text(f"mcpx: warning: {message}", style="yellow"))

    @contextlib.contextmanager
    def library_warnings(self) -> Iterator[None]:
        """The runtime's own warnings, as one mcpx line each, while mcpx runs."""
        handler = _TerminalHandler(self)
        runtime = logging.getLogger("mcpbind")
        runtime.addHandler(handler)
        try:
            yield
        finally:
            runtime.removeHandler(handler)

    def log(self, server: str, level: str, logger: str | None, data: Any) -> None:
        shown = data if isinstance(data, str) else codec.encode(data).decode()
        source = f"{server}/{logger}" if logger else server
        self.err.print(Text(f"{level:>8} {source}: {shown}", style="dim"))

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress notification of the call in flight: a bar on a terminal, nothing elsewhere."""
        if not self.err.is_terminal:
            return
        self._message = message or self._message
        if self._progress is None:
            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                _Count(),
                TimeElapsedColumn(),
                console=self.err,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self._describe(), total=total)
        assert self._task is not None
        self._progress.update(
            self._task, completed=progress, total=total, description=self._describe()
        )

    def _describe(self) -> str:
        message = self._message
        if self._status is None:
            return message or self.label
        return f"{self._status} | {message}" if message else self._status

    def task_status(self, task_id: str, status: str, message: str | None) -> None:
        """A task's status changed: the bar's label on a terminal, a line elsewhere."""
        line = f"task {task_id}: {status}" + (f" - {message}" if message else "")
        if not self.err.is_terminal:
            self.err.print(Text(line, style="dim"))
            return
        self._status = line
        if self._progress is None:
            self.progress(0, None, None)
        else:
            assert self._task is not None
            self._progress.update(self._task, description=self._describe())

    def updated(self, uri: str) -> None:
        """A resource watched changed (stderr: the new contents follow on stdout)."""
        self.err.print(Text(f"updated {uri}", style="dim"))

    def pause(self) -> None:
        """Take the progress bar away while the user is asked something."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def done(self) -> None:
        """The call ended: take the progress bar away."""
        self._status = self._message = None
        self.pause()

    # ------------------------------------------------------------ stdout

    def findings(self, findings: Sequence[Finding], summary: str) -> None:
        """--strict: each finding on stderr (severity, tool, where, what, whose rule)."""
        for finding in findings:
            style = "bold red" if finding.severity == "error" else "yellow"
            self.err.print(
                Text(f"{finding.severity}: tool {finding.tool!r} at {finding.path}: ", style=style)
                + Text(f"{finding.rule}: {finding.issue} [{SOURCES[finding.rule]}]")
            )
        self.err.print(Text(f"mcpx: schema portability: {summary}"))

    def load_report(self, report: LoadReport) -> None:
        if self.json:
            self.json_value(report.as_json())
            return
        sys.stdout.write(report.table() + "\n")
        sys.stdout.flush()

    def json_value(self, value: Any) -> None:
        sys.stdout.write(msgspec.json.format(codec.encode(value), indent=2).decode() + "\n")
        sys.stdout.flush()

    def listing(self, kind: str, items: Sequence[Any]) -> None:
        if self.json:
            self.json_value(list(items))
            return
        columns = _COLUMNS[kind]
        table = Table(*(title for title, _ in columns), box=None, header_style="bold")
        for item in items:
            table.add_row(*(_field(item, attribute) for _, attribute in columns))
        if self.out.is_terminal:
            self.out.print(table)
            return
        with self.out.capture() as captured:
            self.out.print(table)
        sys.stdout.write("".join(line.rstrip() + "\n" for line in captured.get().splitlines()))
        sys.stdout.flush()

    def tool_result(self, result: Any) -> None:
        if self.json:
            self.json_value(result)
            return
        for block in result.content:
            self._block(block)
        structured = getattr(result, "structured_content", UNSET)
        if (
            structured is not UNSET
            and structured is not None
            and not any(_kind(b) == "text" for b in result.content)
        ):
            self.out.print(Text(codec.encode(structured).decode()))

    def contents(self, result: Any) -> None:
        if self.json:
            self.json_value(result)
            return
        for item in result.contents:
            self._resource(item)

    def server_info(self, info: dict[str, Any]) -> None:
        if self.json:
            self.json_value(info)
            return
        server = info["serverInfo"]
        self.out.print(Text(f"{server.name} {server.version}", style="bold"))
        self.out.print(Text(f"protocol version: {info['protocolVersion']}"))
        capabilities = msgspec.json.decode(codec.encode(info["capabilities"]))
        self.out.print(Text("capabilities: " + (", ".join(capabilities) or "none")))
        if info["instructions"]:
            self.out.print(Text(f"instructions: {info['instructions']}"))

    def raw_contents(self, result: Any, output: str) -> None:
        """The bytes of every content of a read, one after the other, to a file or stdout (-)."""
        data = b"".join(_bytes(item) for item in result.contents)
        if output == "-":
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
        else:
            with open(output, "wb") as file:
                file.write(data)

    def prompt(self, result: Any) -> None:
        if self.json:
            self.json_value(result)
            return
        description = getattr(result, "description", UNSET)
        if isinstance(description, str):
            self.out.print(Text(description, style="italic"))
        for message in result.messages:
            self.out.print(Text(f"{message.role}:", style="bold"), end=" ")
            self._block(message.content)

    def completion(self, result: Any) -> None:
        if self.json:
            self.json_value(result)
            return
        for value in result.completion.values:
            self.out.print(Text(value))

    def _block(self, block: Any) -> None:
        kind = _kind(block)
        if kind == "text":
            self.out.print(Text(block.text))
        elif kind in ("image", "audio"):
            self.out.print(
                Text(
                    f"[{kind} {block.mime_type}, {len(base64.b64decode(block.data))} bytes]",
                    style="cyan",
                )
            )
        elif kind == "resource_link":
            self.out.print(Text(f"[resource link {block.uri}]", style="cyan"))
        elif kind == "resource":
            self._resource(block.resource)
        else:
            self.out.print(Text(codec.encode(block).decode()))

    def _resource(self, item: Any) -> None:
        text = getattr(item, "text", None)
        if isinstance(text, str):
            self.out.print(Text(text))
        else:
            mime = getattr(item, "mime_type", UNSET)
            size = len(base64.b64decode(getattr(item, "blob", "")))
            self.out.print(
                Text(
                    f"[blob {item.uri} {mime if isinstance(mime, str) else ''}, {size} bytes]",
                    style="cyan",
                )
            )


PIPED_WIDTH = 100_000
"""Columns of stdout when it is not a terminal: rows are never wrapped."""


class _TerminalHandler(logging.Handler):
    def __init__(self, terminal: Terminal) -> None:
        super().__init__(logging.WARNING)
        self.terminal = terminal

    def emit(self, record: logging.LogRecord) -> None:
        self.terminal.warning(record.getMessage())


# kind: (column title, attribute)
_COLUMNS = {
    "tools": (("name", "name"), ("description", "description")),
    "resources": (("uri", "uri"), ("name", "name"), ("type", "mime_type")),
    "templates": (
        ("uri template", "uri_template"),
        ("name", "name"),
        ("description", "description"),
    ),
    "prompts": (("name", "name"), ("arguments", "arguments"), ("description", "description")),
}


def _field(item: Any, attribute: str) -> str:
    value = getattr(item, attribute, UNSET)
    if value is UNSET or value is None:
        return ""
    if attribute == "arguments":
        return ", ".join(a.name + ("" if a.required is True else "?") for a in value)
    text = str(value)
    return text.splitlines()[0] if text else ""


def _bytes(item: Any) -> bytes:
    text = getattr(item, "text", None)
    if isinstance(text, str):
        return text.encode()
    return base64.b64decode(getattr(item, "blob", ""))


def _kind(block: Any) -> str:
    return str(getattr(block, "type", ""))
