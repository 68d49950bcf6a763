"""The MCP server: a declarative tool catalog over the REST API, skills, and the stdio entry point."""
