"""MCP servers listed in orgtree.toml, their tools seen as skills `mcp.NAME.TOOL` (the `mcp` SDK imported lazily)."""
