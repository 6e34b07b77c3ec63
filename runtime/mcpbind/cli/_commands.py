"""The mcpx commands (click): list, call, read, prompt, complete.

Every command takes the target options (``--url``, ``--config``/``--server``,
or a command after ``--``) and ``--json``. The server is reached through a
:class:`mcpbind.host.Host` of that one server, which makes no second
attempt: a server that cannot be reached is an error at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import sys
import webbrowser
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, TypeVar

import click

from .. import codec
from .._core import lifecycle
from .._core.extras import DISTRIBUTION
from .._core.jsonrpc import ConnectionClosed, McpError
from ..host import (
    ConfigError,
    Host,
    HostConfig,
    HostError,
    OAuthEntry,
    RetryPolicy,
    ServerConfig,
    load_config,
)
from ._answers import Answers, Handlers
from ._load import run_load
from ._output import Failed, Terminal
from ._portability import check_tools, summary
from ._tasks import (
    EXTENSION_REVISIONS,
    HANDSHAKE_TASKS,
    TASK_REVISIONS,
    call_as_task,
    call_with_extension,
    needs_the_extension,
    task_support,
)

if TYPE_CHECKING:  # needs the 'http' extra, which the 'cli' extra brings
    from ..host._authorization import HostAuthorization

F = TypeVar("F", bound=Callable[..., Any])

# Log levels of the specification, for --log-level.
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


@dataclass
class Invocation:
    """What the command line said besides the command: the server command after ``--``."""

    command: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Options:
    url: str | None
    headers: tuple[str, ...]
    config: str | None
    server: str | None
    json: bool
    timeout: float | None
    connect_timeout: float | None
    log_level: str | None
    show_stderr: bool
    env: tuple[str, ...] = ()
    cwd: str | None = None
    transport: str = "auto"
    protocol_version: str | None = None
    oauth: bool = False
    meta: tuple[str, ...] = ()
    roots: tuple[str, ...] = ()
    sampling_reply: str | None = None
    elicit_answer: str | None = None
    decline: bool = False
    trace: bool = False


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name=DISTRIBUTION, prog_name="mcpx", message="%(prog)s %(version)s")
def main() -> None:
    """Talk to one MCP server: a command after --, a --url, or --config FILE --server NAME.

    \b
    mcpx list tools -- npx -y @modelcontextprotocol/server-everything
    mcpx call echo message=hi --url http://127.0.0.1:3001/mcp
    mcpx read greeting://ada --config mcp.json --server example --json
    """


_TARGET_OPTIONS = (
    click.option("--url", help="The server's URL (Streamable HTTP, or legacy HTTP+SSE)."),
    click.option(
        "--header",
        "headers",
        multiple=True,
        metavar="'NAME: VALUE'",
        help="An HTTP header (repeatable).",
    ),
    click.option(
        "--transport",
        type=click.Choice(["auto", "http", "sse"]),
        default="auto",
        help="For --url: Streamable HTTP (http), legacy HTTP+SSE (sse), or http falling back to sse (auto).",
    ),
    click.option("--oauth", is_flag=True, help="For --url: authorize with OAuth in the browser."),
    click.option(
        "-e",
        "--env",
        "env",
        multiple=True,
        metavar="KEY=VALUE",
        help="An environment variable of the server command (repeatable).",
    ),
    click.option("--cwd", type=click.Path(file_okay=False), help="The server command's directory."),
    click.option(
        "--config",
        type=click.Path(dir_okay=False),
        help="A host configuration (mcpServers or servers).",
    ),
    click.option("--server", help="The entry of --config to use (optional if it has one)."),
    click.option(
        "--protocol-version",
        type=click.Choice([*lifecycle.handshake_versions(), *lifecycle.stateless_versions()]),
        help="The revision to ask for (default: the newest; older servers are met at theirs).",
    ),
    click.option("--json", "json_output", is_flag=True, help="Print results as JSON, for scripts."),
    click.option("--timeout", type=float, help="Seconds for the request (default: no limit)."),
    click.option(
        "--connect-timeout",
        type=float,
        help="Seconds for connecting (default: 30, or the entry's).",
    ),
    click.option(
        "--log-level",
        type=click.Choice(LEVELS),
        help="Ask the server for log messages of this level and above.",
    ),
    click.option("--show-stderr", is_flag=True, help="Let a stdio server's stderr through."),
    click.option(
        "--meta",
        multiple=True,
        metavar="KEY=VALUE",
        help="A _meta entry of the request (value JSON, else a string; repeatable).",
    ),
    click.option(
        "--root",
        "roots",
        multiple=True,
        metavar="PATH|URI",
        help="A root to answer roots/list with (repeatable).",
    ),
    click.option(
        "--sampling-reply",
        metavar="TEXT",
        help="Answer the server's sampling requests with TEXT (else ask, on a terminal).",
    ),
    click.option(
        "--elicit-answer",
        metavar="JSON",
        help="Accept the server's elicitations with this content (else a form, on a terminal).",
    ),
    click.option(
        "--decline", is_flag=True, help="Decline the server's sampling and elicitation requests."
    ),
    click.option(
        "--trace",
        is_flag=True,
        help="Print the spans of the call as a tree with timings on stderr (mcpx's, and those of servers that export them).",
    ),
)


def target_options(command: F) -> F:
    """The options every command shares, gathered into an Options."""

    @functools.wraps(command)
    def wrapper(**kwargs: Any) -> Any:
        shared = {name: kwargs.pop(name) for name in _OPTION_NAMES}
        shared["json"] = shared.pop("json_output")
        return command(Options(**shared), **kwargs)

    for option in reversed(_TARGET_OPTIONS):
        wrapper = option(wrapper)
    return wrapper  # type: ignore[return-value]


_OPTION_NAMES = (
    *(f.name for f in fields(Options) if f.name != "json"),
    "json_output",
)


# ------------------------------------------------------------------ commands

_KINDS = {
    "tools": "tools",
    "resources": "resources",
    "templates": "resource_templates",
    "prompts": "prompts",
}


@main.command(name="list")
@click.argument("kind", type=click.Choice(list(_KINDS)), metavar="KIND")
@click.option(
    "--strict",
    is_flag=True,
    help="With tools: report what common clients reject in the tools (exit 1 on an error).",
)
@target_options
def list_command(options: Options, kind: str, strict: bool) -> int:
    """List the server's tools, resources, templates or prompts."""
    if strict and kind != "tools":
        raise click.UsageError("--strict is for mcpx list tools")

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        entries = getattr(host, _KINDS[kind])
        attribute = {
            "tools": "tool",
            "prompts": "prompt",
            "resources": "resource",
            "templates": "template",
        }[kind]
        items = [getattr(entry, attribute) for entry in entries]
        if not strict:
            terminal.listing(kind, items)
            return 0
        findings = check_tools([json.loads(codec.encode(item)) for item in items])
        if options.json:
            terminal.json_value(
                {"tools": items, "findings": [finding.as_json() for finding in findings]}
            )
        else:
            terminal.listing(kind, items)
        terminal.findings(findings, summary(findings))
        return 1 if any(finding.severity == "error" for finding in findings) else 0

    return run_work(options, work)


@main.command()
@click.argument("tool")
@click.argument("arguments", nargs=-1)
@click.option(
    "--task/--no-task",
    "as_task",
    default=None,
    help="Run the call as a task, showing its status (default: when the tool requires it).",
)
@click.option(
    "--load",
    is_flag=True,
    help="Call the tool again and again, several at once; print calls, latency, errors.",
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="With --load: calls in flight at once.",
)
@click.option(
    "--requests",
    type=click.IntRange(min=1),
    help="With --load: stop after starting this many calls.",
)
@click.option(
    "--duration",
    type=click.FloatRange(min=0, min_open=True),
    metavar="S",
    help="With --load: stop starting calls after S seconds (default 10 without --requests).",
)
@target_options
def call(
    options: Options,
    tool: str,
    arguments: tuple[str, ...],
    as_task: bool | None,
    load: bool,
    concurrency: int,
    requests: int | None,
    duration: float | None,
) -> int:
    """Call TOOL with ARGUMENTS: key=value pairs (values JSON unless the tool wants a string),
    or one JSON object (given as is, or read from @FILE, or - for stdin).

    Exits with 1 if the tool reports an error (with --load: if any call failed)."""
    if not load and (requests is not None or duration is not None):
        raise click.UsageError("--requests and --duration are for --load")
    if load and as_task:
        raise click.UsageError("--load calls plainly; it does not take --task")
    per_call = options.timeout
    if load:
        # --timeout bounds each call of a load run, not the run.
        options = replace(options, timeout=None)

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        found = [entry.tool for entry in host.tools if entry.original == tool]
        if not found:
            known = ", ".join(entry.original for entry in host.tools) or "none"
            raise Failed(f"the server has no tool {tool!r} (tools: {known})")
        values = _tool_arguments(arguments, found[0])
        terminal.label = tool
        if load:
            params = with_meta(options, {"name": tool, "arguments": values})
            report = await run_load(
                lambda: host.request(name, "tools/call", params),
                tool,
                concurrency=concurrency,
                requests=requests,
                duration=duration,
                timeout=per_call,
            )
            terminal.load_report(report)
            return 1 if report.failed else 0
        session = host.session(name)
        if session.protocol_version in EXTENSION_REVISIONS and as_task is not False:
            result = await extension_call(host, name, tool, values, as_task, terminal)
        elif (task_support(found[0]) == "required") if as_task is None else as_task:
            if session.protocol_version != HANDSHAKE_TASKS:
                raise Failed(
                    f"task-augmented calls need a server speaking {', '.join(TASK_REVISIONS)} "
                    f"(this one speaks {session.protocol_version})"
                )
            result = await call_as_task(session, tool, values, terminal, meta(options))
        else:
            result = await plain_call(host, name, tool, values, terminal)
        terminal.tool_result(result)
        return 1 if result.is_error is True else 0

    async def plain_call(
        host: Host, name: str, tool: str, values: dict[str, Any], terminal: Terminal
    ) -> Any:
        params = with_meta(options, {"name": tool, "arguments": values})
        try:
            return await host.request(name, "tools/call", params, None, terminal.progress)
        finally:
            terminal.done()

    async def extension_call(
        host: Host,
        name: str,
        tool: str,
        values: dict[str, Any],
        as_task: bool | None,
        terminal: Terminal,
    ) -> Any:
        """2026-07-28: tools do not say whether they need a task; the server refuses
        (-32021 naming the extension) a call it cannot serve without one: a tool
        declared to require it before running, another once it needs input."""
        session = host.session(name)
        if as_task is None:
            try:
                return await plain_call(host, name, tool, values, terminal)
            except McpError as error:
                if not needs_the_extension(error):
                    raise
        return await call_with_extension(session, tool, values, terminal, meta(options))

    return run_work(options, work)


@main.command()
@click.argument("uri")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    help="Write the contents as raw bytes (blobs decoded) to FILE, or - for stdout.",
)
@target_options
def read(options: Options, uri: str, output: str | None) -> int:
    """Read the resource at URI."""

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        if output is not None:
            result = await host.request(name, "resources/read", with_meta(options, {"uri": uri}))
            terminal.raw_contents(result, output)
            return 0
        terminal.contents(
            await host.request(name, "resources/read", with_meta(options, {"uri": uri}))
        )
        return 0

    return run_work(options, work)


@main.command()
@click.argument("prompt")
@click.argument("arguments", nargs=-1)
@target_options
def prompt(options: Options, prompt: str, arguments: tuple[str, ...]) -> int:
    """Get PROMPT with ARGUMENTS (key=value pairs)."""

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        params = with_meta(options, {"name": prompt, "arguments": _pairs(arguments)})
        terminal.prompt(await host.request(name, "prompts/get", params))
        return 0

    return run_work(options, work)


@main.command()
@click.argument("argument")
@click.argument("value", default="")
@click.option("--prompt", "prompt_name", help="Complete an argument of this prompt.")
@click.option(
    "--template", help="Complete an argument of this resource template (its URI template)."
)
@click.option(
    "--context",
    "context",
    multiple=True,
    metavar="KEY=VALUE",
    help="An argument already given (repeatable).",
)
@target_options
def complete(
    options: Options,
    argument: str,
    value: str,
    prompt_name: str | None,
    template: str | None,
    context: tuple[str, ...],
) -> int:
    """Suggest values for ARGUMENT of a prompt or a resource template, starting with VALUE."""
    if (prompt_name is None) == (template is None):
        raise click.UsageError("complete needs --prompt NAME or --template URI_TEMPLATE")

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        ref = (
            {"type": "ref/prompt", "name": prompt_name}
            if prompt_name
            else {"type": "ref/resource", "uri": template}
        )
        params: dict[str, Any] = {"ref": ref, "argument": {"name": argument, "value": value}}
        if context:
            params["context"] = {"arguments": _pairs(context)}
        terminal.completion(
            await host.request(name, "completion/complete", with_meta(options, params))
        )
        return 0

    return run_work(options, work)


# ------------------------------------------------------------------ running

Work = Callable[[Host, str, Terminal], Awaitable[int]]


def run_work(options: Options, work: Work, capabilities: Mapping[str, Any] | None = None) -> int:
    """Connect to the server the options name, do ``work``, and say what failed in one line.

    ``capabilities`` are declared besides the cli's own (an extension mcpx hosts)."""
    server = _target(options)
    terminal = Terminal(options.json)
    try:
        with terminal.library_warnings():
            return asyncio.run(_connected(options, server, work, terminal, capabilities))
    except TimeoutError:
        # mcpx gave up (and cancelled the request); the server never answered.
        terminal.error(
            f"no answer within {options.timeout:g} s (--timeout); the request was cancelled"
        )
    except (Failed, HostError) as error:
        terminal.error(str(error))
    except ConnectionClosed as error:
        terminal.error(error.message)
    except McpError as error:
        terminal.error(f"the server answered: {error.message} ({error.code})")
    except KeyboardInterrupt:
        return 130
    return 1


async def _connected(
    options: Options,
    server: ServerConfig,
    work: Work,
    terminal: Terminal,
    capabilities: Mapping[str, Any] | None = None,
) -> int:
    async with contextlib.AsyncExitStack() as stack:
        telemetry = None
        if options.trace:
            from ._trace import tracing  # only with --trace: it imports OpenTelemetry

            telemetry = stack.enter_context(tracing(lambda line: terminal.err.print(line)))
        host = Host(
            HostConfig((server,)),
            Handlers(terminal, _answers(options)),
            name="mcpx",
            protocol_version=options.protocol_version,
            retry=RetryPolicy(max_attempts=1),
            oauth=_oauth(terminal, stack) if server.oauth is not None else None,
            log_level=options.log_level,
            server_stderr=None if options.show_stderr else asyncio.subprocess.DEVNULL,
            capabilities=capabilities,
            telemetry=telemetry,
        )
        await stack.enter_async_context(host)
        status = host.status()[server.name]
        if status.state != "ready":
            raise Failed(f"cannot connect to {_describe(server)}: {status.error}")
        # The request's deadline is mcpx's own, so that its expiry is not taken for an answer.
        async with asyncio.timeout(options.timeout):
            return await work(host, server.name, terminal)
    raise AssertionError("unreachable")  # for mypy: the block above returns or raises


def _oauth(terminal: Terminal, stack: contextlib.AsyncExitStack) -> HostAuthorization:
    """The authorization code flow for a person at a terminal: the browser opened
    on the authorization URL (also printed), the answer caught on a loopback port."""
    from ..auth.client import LoopbackRedirect
    from ..host._authorization import HostAuthorization

    def show(url: str) -> None:
        terminal.notice(f"authorize in your browser: {url}")
        webbrowser.open(url)

    redirect = stack.enter_context(LoopbackRedirect(open_browser=show))
    return HostAuthorization(redirect, client_name="mcpx")


def _target(options: Options) -> ServerConfig:
    """The one server the options name; click.UsageError if they name none or several."""
    command = click.get_current_context().find_object(Invocation)
    argv = command.command if command is not None else []
    targets = (("a command after --", argv), ("--url", options.url), ("--config", options.config))
    given = [what for what, present in targets if present]
    if len(given) != 1:
        raise click.UsageError(
            "name one server: a command after --, --url URL, or --config FILE [--server NAME]"
            + (f" (got {' and '.join(given)})" if given else "")
        )
    if options.server is not None and options.config is None:
        raise click.UsageError("--server needs --config")
    for flag, given_here, wanted in (
        ("--header", bool(options.headers), options.url),
        ("--oauth", options.oauth, options.url),
        ("--transport", options.transport != "auto", options.url),
        ("-e/--env", bool(options.env), argv),
        ("--cwd", options.cwd is not None, argv),
    ):
        if given_here and not wanted:
            raise click.UsageError(
                f"{flag} is for {'--url' if wanted is options.url else 'a command after --'}"
            )
    server = _server(options, argv)
    if options.connect_timeout is not None:
        server = replace(server, connect_timeout=options.connect_timeout)
    return server


def _server(options: Options, argv: list[str]) -> ServerConfig:
    if argv:
        return ServerConfig(
            "server",
            "stdio",
            command=argv[0],
            args=tuple(argv[1:]),
            env=_pairs(options.env, "-e"),
            cwd=options.cwd,
        )
    if options.url is not None:
        if not options.url.startswith(("http://", "https://")):
            raise click.UsageError(f"--url: {options.url!r} is not an http:// or https:// URL")
        return ServerConfig(
            "server",
            options.transport,  # type: ignore[arg-type]  # one of click's choices
            url=options.url,
            headers=_headers(options.headers),
            oauth=OAuthEntry() if options.oauth else None,
        )
    assert options.config is not None
    try:
        # Another entry's unset variable does not stop the one asked for.
        config = load_config(options.config, keep_broken=True)
        if options.server is None:
            names = config.names
            if len(names) != 1:
                raise click.UsageError(
                    f"--config has {len(names)} servers; pick one with --server ({', '.join(names)})"
                )
            return config[names[0]]
        return config[options.server]
    except ConfigError as error:
        raise click.UsageError(str(error)) from None


def _describe(server: ServerConfig) -> str:
    if server.transport == "stdio":
        return repr(" ".join([server.command or "", *server.args]))
    return str(server.url)


def _headers(values: tuple[str, ...]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, colon, content = value.partition(":")
        if not colon or not name.strip():
            raise click.UsageError(f"--header {value!r}: expected 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def _pairs(arguments: tuple[str, ...], flag: str | None = None) -> dict[str, str]:
    pairs = {}
    for argument in arguments:
        key, equals, value = argument.partition("=")
        if not equals or not key:
            where = f"{flag} " if flag else ""
            raise click.UsageError(f"{where}{argument!r}: expected key=value")
        pairs[key] = value
    return pairs


def _tool_arguments(arguments: tuple[str, ...], tool: Any) -> dict[str, Any]:
    """key=value pairs, or one JSON object. A value is JSON (2, true, [1]) unless
    the tool's input schema says the property is a string, or it is not JSON."""
    if len(arguments) == 1 and arguments[0] == "-" or arguments[:1] and arguments[0][:1] == "@":
        if len(arguments) != 1:
            raise click.UsageError("@FILE (or -) is the whole of the arguments")
        arguments = (_document(arguments[0]),)
    if len(arguments) == 1 and arguments[0].lstrip().startswith("{"):
        try:
            parsed = json.loads(arguments[0])
        except json.JSONDecodeError as error:
            raise click.UsageError(f"the arguments are not a JSON object: {error}") from None
        if not isinstance(parsed, dict):
            raise click.UsageError("the arguments are not a JSON object")
        return parsed
    properties = (
        tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
    )
    types = (
        {k: v.get("type") for k, v in properties.items() if isinstance(v, dict)}
        if isinstance(properties, dict)
        else {}
    )
    values: dict[str, Any] = {}
    for key, value in _pairs(arguments).items():
        if types.get(key) == "string":
            values[key] = value
            continue
        try:
            values[key] = json.loads(value)
        except json.JSONDecodeError:
            values[key] = value
    return values


def _document(source: str) -> str:
    """The text of @FILE, or of stdin for -: the arguments as one JSON document."""
    if source == "-":
        return sys.stdin.read()
    try:
        with open(source[1:], encoding="utf-8") as file:
            return file.read()
    except OSError as error:
        raise click.UsageError(f"{source}: {error.strerror or error}") from None


def _answers(options: Options) -> Answers:
    answer = None
    if options.elicit_answer is not None:
        try:
            answer = json.loads(options.elicit_answer)
        except json.JSONDecodeError as error:
            raise click.UsageError(f"--elicit-answer is not JSON: {error}") from None
        if not isinstance(answer, dict):
            raise click.UsageError("--elicit-answer is not a JSON object")
    return Answers(
        sampling_reply=options.sampling_reply,
        elicit_answer=answer,
        decline=options.decline,
        roots=options.roots,
        interactive=sys.stdin.isatty() and sys.stderr.isatty(),
    )


def meta(options: Options) -> dict[str, Any]:
    """``--meta`` pairs as a request's ``_meta``: values JSON where they parse."""
    values: dict[str, Any] = {}
    for key, value in _pairs(options.meta, "--meta").items():
        try:
            values[key] = json.loads(value)
        except json.JSONDecodeError:
            values[key] = value
    return values


def with_meta(options: Options, params: dict[str, Any]) -> dict[str, Any]:
    extra = meta(options)
    return {**params, "_meta": extra} if extra else params
