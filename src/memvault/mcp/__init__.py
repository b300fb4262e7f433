"""The MCP server face (:mod:`memvault.mcp.server`; needs ``pip install 'memvault[mcp]'``)."""
