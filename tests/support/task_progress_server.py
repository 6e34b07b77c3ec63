"""An app with one task-capable tool whose task reports progress after the
``CreateTaskResult`` went out, for the tests of progress that follows a task.

``export`` reports 1, waits for ``go``, reports 2 and returns; it leaves a task behind
that reports 3 once ``after`` is called (which returns after that report was made), when
the tool's task has already completed.

``stepped`` (a task, required) reports step 1, 2 and 3 of 3, each once the file
``GATE.<step before>`` exists (GATE: its argument), for a person (or a test) to
watch a task's progress at their pace.

``python tests/support/task_progress_server.py`` serves it over stdio.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from mcpbind._extensions.tasks.serving import Tasks
from mcpbind.app import App, Context

app = App("task-progress", "1.0", extensions=[Tasks()])
_gates: dict[str, Any] = {}


@app.tool(task_support="optional")
async def export(ctx: Context) -> str:
    """Reports 1, then 2 once ``go`` is called; a task it leaves reports 3 on ``after``."""
    go, late = asyncio.Event(), asyncio.Event()
    _gates["go"], _gates["late"] = go, late
    await ctx.report_progress(1, 3)
    await go.wait()
    await ctx.report_progress(2, 3)

    async def later() -> None:
        await late.wait()
        await ctx.report_progress(3, 3)

    _gates["later"] = asyncio.get_running_loop().create_task(later())
    return "exported"


@app.tool()
async def go() -> str:
    """Lets ``export`` go on to its second report and its end."""
    _gates["go"].set()
    return "going"


@app.tool()
async def after() -> str:
    """Lets the task left by ``export`` report, and returns once it has."""
    _gates["late"].set()
    await _gates["later"]
    return "after"


@app.tool(task_support="required")
async def stepped(ctx: Context, gate: str) -> str:
    """Reports steps 1 to 3, step k+1 once the file GATE.k exists."""
    for step in (1, 2, 3):
        if step > 1:
            while not Path(f"{gate}.{step - 1}").exists():
                await asyncio.sleep(0.05)
        await ctx.report_progress(step, 3, f"step {step}")
    while not Path(f"{gate}.3").exists():
        await asyncio.sleep(0.05)
    return "stepped through"


if __name__ == "__main__":
    app.run()
