"""The same code as revision_2024_11_05.py, against 2025-11-25: it type-checks."""

from __future__ import annotations

from mcpbind_protocol.v2025_11_25 import ClientStub, ElicitResult


async def tasks(stub: ClientStub) -> int:
    page = await stub.list_tasks()
    return len(page.tasks)


def accept() -> ElicitResult:
    return ElicitResult(action="accept")
