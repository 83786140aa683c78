"""Widgets of the triage TUI."""
