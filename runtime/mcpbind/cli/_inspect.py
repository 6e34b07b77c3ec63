"""The commands that look at the connection rather than the server's lists:
``info`` (what the server said when the session opened), ``ping``, ``watch``
(a resource, printed again at each update) and ``completion`` (the shell's
completion script for mcpx)."""

from __future__ import annotations

import asyncio
import time

import click
from click.shell_completion import get_completion_class

from .._core import lifecycle
from ..host import Host
from ._commands import Options, main, run_work, target_options
from ._output import Failed, Terminal

SHELLS = ("bash", "zsh", "fish")


@main.command()
@target_options
def info(options: Options) -> int:
    """What the server said when the session opened: its name and version, the
    revision spoken, its capabilities and its instructions."""

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        session = host.session(name)
        terminal.server_info(
            {
                "protocolVersion": session.protocol_version,
                "serverInfo": session.server_info,
                "capabilities": session.server_capabilities,
                "instructions": session.instructions,
            }
        )
        return 0

    return run_work(options, work)


@main.command()
@target_options
def ping(options: Options) -> int:
    """Check that the server answers (ping; server/discover at 2026-07-28, which has no ping)."""

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        session = host.session(name)
        method = "server/discover" if session.stateless else "ping"
        spec = lifecycle.revision(session.protocol_version).all_methods[method]
        started = time.perf_counter()
        await session.request(spec, None)
        elapsed = (time.perf_counter() - started) * 1000
        if options.json:
            terminal.json_value({"method": method, "milliseconds": round(elapsed, 3)})
        else:
            terminal.out.print(f"{method}: answered in {elapsed:.1f} ms")
        return 0

    return run_work(options, work)


@main.command()
@click.argument("uri")
@click.option(
    "--count",
    type=click.IntRange(min=1),
    help="Stop after this many updates (default: until interrupted).",
)
@click.option(
    "--idle-notice",
    type=click.FloatRange(min=0, min_open=True),
    default=10.0,
    show_default=True,
    metavar="S",
    help="Say on stderr how long no update has come, every S seconds without one.",
)
@target_options
def watch(options: Options, uri: str, count: int | None, idle_notice: float) -> int:
    """Subscribe to the resource at URI and print it again at each update."""

    async def work(host: Host, name: str, terminal: Terminal) -> int:
        session = host.session(name)
        if not lifecycle.has_capability(session.server_capabilities, ("resources", "subscribe")):
            raise Failed("the server does not offer resource subscriptions")
        async with host.subscribe(uri, server=name) as updates:
            terminal.contents(await host.request(name, "resources/read", {"uri": uri}))
            # Silence would look like a hang: many servers send updates only once
            # something (often one of their own tools) turns them on.
            terminal.notice(
                f"subscribed to {uri}; waiting for updates (a server sends them when the "
                "resource changes, some only once something turns them on)"
            )
            seen = 0
            while count is None or seen < count:
                waited = time.monotonic()
                next_update = asyncio.ensure_future(anext(updates))
                try:
                    while True:
                        done, _ = await asyncio.wait({next_update}, timeout=idle_notice)
                        if done:
                            next_update.result()
                            break
                        idle = time.monotonic() - waited
                        terminal.notice(f"no update of {uri} for {idle:.0f} s; still subscribed")
                finally:
                    next_update.cancel()
                seen += 1
                terminal.contents(await host.request(name, "resources/read", {"uri": uri}))
        return 0

    return run_work(options, work)


@main.command()
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script of SHELL for mcpx.

    \b
    bash: eval "$(mcpx completion bash)"      (in ~/.bashrc)
    zsh:  eval "$(mcpx completion zsh)"       (in ~/.zshrc)
    fish: mcpx completion fish > ~/.config/fish/completions/mcpx.fish
    """
    completer = get_completion_class(shell)
    assert completer is not None
    click.echo(completer(main, {}, "mcpx", "_MCPX_COMPLETE").source())
