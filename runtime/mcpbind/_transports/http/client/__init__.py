"""The HTTP client transports: Streamable HTTP and HTTP+SSE, on aiohttp."""
