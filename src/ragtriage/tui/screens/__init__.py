"""Screens of the triage TUI: one module per view."""
