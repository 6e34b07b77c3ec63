"""Benchmarks of this project against the official MCP Python SDK: ``python -m bench``."""
