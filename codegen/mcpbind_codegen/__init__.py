"""mcp-codegen: typed msgspec bindings generated from the official MCP JSON Schemas."""
