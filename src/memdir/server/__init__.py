"""memdir as a server: the MCP server (``mcp``) and what each MCP client session did
(``mcp_sessions``)."""
