"""MCP authorization (OAuth 2.1): who a request comes from, on both sides.

``principal`` is shared by the resource server (which authenticates requests)
and everything that binds work to its owner or checks scopes.
"""
