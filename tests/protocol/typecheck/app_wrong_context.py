"""Misuses of the injected Context."""

from __future__ import annotations

import msgspec

from mcpbind.app import App, Context

app = App("typed", "1.0")


class Form(msgspec.Struct):
    name: str


@app.tool()
async def ask(ctx: Context) -> str:
    await ctx.report_progress("half")  # E: arg-type
    await ctx.log("loud", "message")  # E: arg-type
    answer = await ctx.elicit("Your name?", Form)
    if answer.data is not None:
        print(answer.data.nmae)  # E: attr-defined
    return answer.data.name  # E: union-attr
