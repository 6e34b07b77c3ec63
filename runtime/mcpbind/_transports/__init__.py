"""The transports: stdio, in-memory, Streamable HTTP and HTTP+SSE."""
