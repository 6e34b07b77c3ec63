"""The hand-written MCP runtime that the generated protocol packages plug into."""
