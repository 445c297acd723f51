"""lionrun: `li`, detached and durable agent runs behind the lion machine-result contract v1.

The code lives in four layers, each a subpackage: `lionrun.domain` (pure values and rules),
`lionrun.application` (use cases behind ports), `lionrun.adapters` (I/O) and
`lionrun.entrypoints` (the CLI, the runner, the MCP server). Nothing is imported here, so that
`li`'s start-up pays for no layer it does not use.
"""
