//! The one business logic of mem-host, reached by the CLI, REST and MCP surfaces.
