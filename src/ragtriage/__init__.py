"""ragtriage: judge retrieval alone, and say why it failed."""

__version__ = "0.1.0"
