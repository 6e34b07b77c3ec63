"""What 2025-11-25 added is not there in 2024-11-05 (see revision_2025_11_25.py)."""

from __future__ import annotations

from mcpbind_protocol.v2024_11_05 import ClientStub
from mcpbind_protocol.v2024_11_05 import ElicitResult  # E: attr-defined


async def tasks(stub: ClientStub) -> int:
    page = await stub.list_tasks()  # E: attr-defined
    return len(page.tasks)


def accept() -> ElicitResult:
    return ElicitResult(action="accept")
