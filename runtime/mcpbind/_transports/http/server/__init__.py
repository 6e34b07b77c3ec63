"""The HTTP server transports: Streamable HTTP and HTTP+SSE, as ASGI."""
