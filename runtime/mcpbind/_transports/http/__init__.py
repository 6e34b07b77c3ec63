"""HTTP, both sides: the ASGI interface and the headers both sides read."""
