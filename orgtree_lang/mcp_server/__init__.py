"""`pipe mcp serve`: chosen pipelines and promoted `learned.*` skills offered to MCP clients, each call a durable run."""
