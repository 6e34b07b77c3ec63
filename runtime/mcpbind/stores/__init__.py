"""Where server state lives: in this process (the default) or shared by
several workers and hosts through Redis.

``http_app(server, store=RedisStore.from_url("redis://..."))`` is all a
deployment of many workers changes: handshake sessions, the events kept for
``Last-Event-ID`` resumption, the tasks of the tasks extension and change
notifications then reach every worker. Without a store (or with
:class:`MemoryStore`) everything stays in the process, exactly as before.
"""

from ._base import Store, StoreUnavailable
from ._memory import MemoryStore

__all__ = ["MemoryStore", "Store", "StoreUnavailable"]
