"""The MCP front-end: the memory as tools for other agents (`python -m bot mcp`), beside Discord, the
terminal and the CLI, on the same engine."""
