"""A server that logs while its question is on the user's terminal: the tool
``ask_while_logging`` asks for a name (elicitation) and, once the file named by
``CHATTER_GO`` exists (the test creates it when the question is shown), sends
three log messages and then creates the file named by ``CHATTER_DONE``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import msgspec

from mcpbind import App, Context

app = App("chatty", "1")


class Name(msgspec.Struct):
    name: str


@app.tool()
async def ask_while_logging(ctx: Context) -> str:
    """Ask for a name, and log while the user answers."""

    async def chatter() -> None:
        go, done = Path(os.environ["CHATTER_GO"]), Path(os.environ["CHATTER_DONE"])
        while not go.exists():
            await asyncio.sleep(0.05)
        for n in range(3):
            await ctx.info(f"tick {n} while the user answers")
        done.write_text("done")

    chatting = asyncio.create_task(chatter())
    answer = await ctx.elicit("Who are you?", Name)
    await chatting
    return f"hello {answer.data.name}" if answer.data is not None else answer.action


if __name__ == "__main__":
    app.run()
