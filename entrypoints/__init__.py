"""Entry points: the `li` bootstrap and CLI, the detached runner, the MCP server, the DI container."""
