"""The tasks extension (``io.modelcontextprotocol/tasks``)."""
