"""The use cases the CLI and the TUI both call: evaluate, compare, triage, judge; and ``render``, every output
format. A command is its typer signature, one call here and the rendering of what it returns."""
