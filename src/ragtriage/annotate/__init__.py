"""annotate."""
