"""classify."""
