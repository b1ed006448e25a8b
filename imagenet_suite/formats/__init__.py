"""Parsers of small release files that both builders and the library read (so neither imports the other)."""
