"""Use cases the CLI and the TUI both call: each a typed function over the core."""
