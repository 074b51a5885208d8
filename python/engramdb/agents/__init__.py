"""Agent surfaces (C8): the MCP server (mcp_server.py) and coding-agent hooks (hooks.py).

They reach the engine through the facade only (`engramdb.open`, `engramdb.capture`), as a user's
own code would.
"""
